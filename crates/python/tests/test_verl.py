"""dealgym.verl under verl 0.9.1's own agent loop code.

What runs is verl's: rows written by ``dealgym.verl.dataset`` are read by verl's ``RLHFDataset``
and batched by its ``collate_fn`` into a ``DataProto``; ``AgentLoopWorker.generate_sequences``
(the code each of the ``AgentLoopManager``'s Ray workers runs) looks ``dealgym`` up in the agent
loop registry filled from an ``agent_loop_config_path`` yaml, builds ``DealAgentLoop`` with
hydra, runs it per sample, pads each ``AgentLoopOutput`` (``_agent_loop_postprocess``) and
batches them (``_postprocess``). The worker is built as verl's own CPU test
(``tests/experimental/agent_loop/test_agent_loop_extra_fields_schema_on_cpu.py``) builds one:
in process, without Ray and without a model, its attributes set by hand, so the stand-in
server can see the games. The last test runs verl's ``AgentLoopManager`` itself, with its real
``AgentLoopWorker`` as a Ray actor on a local CPU cluster. Only what the trainer hands the
manager needs a GPU: the client of its inference servers (vLLM or SGLang replicas).

``FakeServerManager`` stands in for that client (verl's ``LLMServerClient``, whose servers need
a GPU): its ``generate(request_id, *, prompt_ids, sampling_params)`` finds the game and seat the
prompt ids are the conversation of, asks a script for the completion's text, and answers with
its canonical ids and the end-of-turn id, cut to ``max_tokens`` as a server cuts them, as a
real ``TokenOutput`` with logprobs. Nothing else is faked. The tokenizer is the one the other
token tests use: the BPE in the ``anthropic`` 0.34.2 wheel with a ChatML template.
"""

from __future__ import annotations

import asyncio
import json
import pathlib
import random
import uuid

import pytest
from conftest import (
    FAMILIES,
    GARBAGE,
    anthropic_tokenizer,
    offer,
    read_records,
    seat_prompted_with,
    turn,
)

pytest.importorskip("verl", reason="verl is not installed (.ci/verl.sh installs it)")

import numpy as np  # noqa: E402
from omegaconf import OmegaConf  # noqa: E402
from transformers import PreTrainedTokenizerFast  # noqa: E402
from verl.experimental.agent_loop import agent_loop as verl_agent_loop  # noqa: E402
from verl.experimental.agent_loop.agent_loop import AgentLoopWorker  # noqa: E402
from verl.protocol import DataProto  # noqa: E402
from verl.utils.dataset.rl_dataset import RLHFDataset, collate_fn  # noqa: E402
from verl.workers.rollout.replica import TokenOutput  # noqa: E402

import dealgym  # noqa: E402
import dealgym.verl as dverl  # noqa: E402
from dealgym.tokens import ExactTokens  # noqa: E402

LIMIT_S = 120
SCORED = {"deal", "walk_away", "reject_loop", "max_turns", "format_forfeit"}


@pytest.fixture(scope="module")
def tokenizer() -> PreTrainedTokenizerFast:
    tok = anthropic_tokenizer(pad_token="<|pad|>")
    tok.eos_token = "<|im_end|>"
    return tok


def negotiate(state: dict, rng: random.Random) -> str:
    """Accept a standing offer a third of the time, else offer (greedy or a fair split),
    sometimes walk away, sometimes write nothing readable."""
    if "accept" in state["legal_actions"] and rng.random() < 0.35:
        return turn("[ACCEPT_DEAL]", talk="Deal.")
    pick = rng.random()
    if pick < 0.08:
        return turn("[WALK_AWAY]", talk="We are too far apart.")
    if pick < 0.16:
        return GARBAGE
    return turn(offer(state, greedy=pick < 0.55), talk="How about this?")


def logprob(k: int) -> float:
    return -0.05 * (k % 9 + 1)


class FakeServerManager:
    """The test's stand-in for verl's server manager (the client of the GPU inference servers
    the trainer starts; none can run here). ``games`` are the games in play (every
    ``dealgym.Game`` the loop makes is put there); ``fail_at``/``abort_at`` make that call
    (0-based) raise as a dead server would, or come back ``stop_reason="aborted"``."""

    def __init__(
        self,
        tokenizer,
        games,
        script=negotiate,
        *,
        seed=0,
        fail_at=None,
        abort_at=None,
        context=None,
    ):
        self.context = context  # prompt_length + response_length, which verl's servers keep
        self.tokenizer = tokenizer
        self.render = ExactTokens(tokenizer).render
        self.games = games
        self.script = script
        self.rng = random.Random(seed)
        self.fail_at = fail_at
        self.abort_at = abort_at
        self.calls = 0
        self.requests: list[tuple[str, int]] = []
        self.sampled: dict[str, list[int]] = {}  # request id -> the ids it was answered with

    async def generate(
        self,
        request_id,
        *,
        prompt_ids,
        sampling_params,
        image_data=None,
        video_data=None,
        audio_data=None,
        mm_processor_kwargs=None,
        **kwargs,
    ) -> TokenOutput:
        call, self.calls = self.calls, self.calls + 1
        await asyncio.sleep(0)  # let the other sessions of the batch interleave
        max_tokens = sampling_params["max_tokens"]
        self.requests.append((request_id, max_tokens))
        if self.context is not None:
            assert len(prompt_ids) + max_tokens <= self.context, "past the servers' context"
        if call == self.fail_at:
            raise ConnectionError("the inference server is unreachable (scripted failure)")
        game, role = self._seat_of(list(prompt_ids))
        text = self.script(game.observe(role)["state"], self.rng)
        ids = self.tokenizer.encode(text, add_special_tokens=False)
        ids = (ids + [self.tokenizer.eos_token_id])[:max_tokens]
        self.sampled.setdefault(request_id, []).extend(ids)
        return TokenOutput(
            token_ids=ids,
            log_probs=[logprob(k) for k in range(len(ids))]
            if sampling_params["logprobs"]
            else None,
            stop_reason="aborted" if call == self.abort_at else "completed",
        )

    def _seat_of(self, ids):
        found = seat_prompted_with(self.games, ids, self.render)
        if found is not None:
            return found[:2]
        raise AssertionError("the server was sent a prompt that is no seat's conversation")


@pytest.fixture
def games(monkeypatch):
    """Every game the loop makes, for the fake server to find seats in."""
    made = []
    real = dealgym._core.Game

    def game(*args, **kwargs):
        made.append(real(*args, **kwargs))
        return made[-1]

    monkeypatch.setattr(dealgym._core, "Game", game)
    return made


def loop_yaml(tmp_path, **settings) -> pathlib.Path:
    path = tmp_path / "agent_loop.yaml"
    entry = {"name": "dealgym", "_target_": "dealgym.verl.DealAgentLoop", **settings}
    path.write_text(OmegaConf.to_yaml(OmegaConf.create([entry])))
    return path


def make_worker(
    monkeypatch,
    tokenizer,
    server,
    yaml_path,
    *,
    prompt_length=4096,
    response_length=4096,
    n=4,
    logprobs=True,
) -> AgentLoopWorker:
    """An ``AgentLoopWorker`` as verl's CPU test makes one (no Ray, no model), with the config
    keys ``generate_sequences`` reads, and the registry filled from ``yaml_path`` as the
    worker's constructor fills it from ``rollout.agent.agent_loop_config_path``."""
    config = OmegaConf.create(
        {
            "actor_rollout_ref": {
                "rollout": {
                    "prompt_length": prompt_length,
                    "response_length": response_length,
                    "n": n,
                    "temperature": 1.0,
                    "top_p": 1.0,
                    "top_k": -1,
                    "calculate_log_probs": logprobs,
                    "val_kwargs": {"temperature": 0.0, "top_p": 1.0, "top_k": -1, "n": 1},
                    "agent": {
                        "default_agent_loop": "dealgym",
                        "agent_loop_config_path": str(yaml_path),
                        "num_workers": 1,
                    },
                    "multi_turn": {"tool_config_path": None},
                },
                "model": {"path": "dummy-model", "tokenizer_path": "dummy-model"},
            },
            "data": {"tool_config_path": None, "apply_chat_template_kwargs": {}},
        }
    )
    for entry in OmegaConf.load(config.actor_rollout_ref.rollout.agent.agent_loop_config_path):
        monkeypatch.setitem(verl_agent_loop._agent_loop_registry, entry.name, entry)
    worker = object.__new__(AgentLoopWorker)
    worker.config = config
    worker.rollout_config = config.actor_rollout_ref.rollout
    worker.llm_client = server
    worker.tokenizer = tokenizer
    worker.processor = None
    worker.hf_model_type = None
    worker.dataset_cls = RLHFDataset
    worker.tools = []
    worker.reward_loop_worker_handles = None
    worker.distillation_enabled = False
    worker.mm_processor_kwargs = {}
    return worker


def batch_of(tmp_path, tokenizer, family, n, **rows) -> DataProto:
    """The rows ``dealgym.verl.dataset`` writes, read by verl's ``RLHFDataset``, collated, each
    given a ``uid`` and repeated ``n`` times (interleaved) as the trainer does for GRPO; the
    ``session_id`` 0..n-1 is what the v1 trainer passes each of a row's ``n`` runs."""
    path = tmp_path / f"{family}.parquet"
    count = dverl.dataset(path, family, **rows)
    data = RLHFDataset(
        data_files=[str(path)],
        tokenizer=tokenizer,
        config=OmegaConf.create(
            {
                "prompt_key": "prompt",
                "filter_overlong_prompts": False,
                "cache_dir": str(tmp_path / "cache"),
            }
        ),
        processor=None,
    )
    assert len(data) == count
    batch = DataProto.from_single_dict(collate_fn([data[i] for i in range(len(data))]))
    batch.non_tensor_batch["uid"] = np.array(
        [str(uuid.uuid4()) for _ in range(count)], dtype=object
    )
    batch = batch.repeat(repeat_times=n, interleave=True)
    batch.non_tensor_batch["session_id"] = np.array(
        [i % n for i in range(len(batch))], dtype=object
    )
    return batch


@pytest.fixture
def rows_batch(tmp_path, tokenizer, games):
    """``batch_of``, leaving ``games`` with only the games the loop makes (writing the rows
    made one per row, to render each seat's opening chat)."""

    def make(family, n, **rows):
        made = batch_of(tmp_path, tokenizer, family, n, **rows)
        games.clear()
        return made

    return make


def generate(worker, batch) -> DataProto:
    return asyncio.run(asyncio.wait_for(worker.generate_sequences(batch), LIMIT_S))


def unpadded(out: DataProto, i: int) -> dict:
    """Sample ``i`` of the worker's batch without verl's padding."""
    prompt_mask = out.batch["attention_mask"][i, : out.batch["prompts"].shape[1]].bool()
    response_mask = out.batch["attention_mask"][i, out.batch["prompts"].shape[1] :].bool()
    sample = {
        "prompt": out.batch["prompts"][i][prompt_mask].tolist(),
        "response": out.batch["responses"][i][response_mask].tolist(),
        "mask": out.batch["response_mask"][i][response_mask].tolist(),
    }
    if "rollout_log_probs" in out.batch.keys():
        sample["logprobs"] = out.batch["rollout_log_probs"][i][response_mask].tolist()
    return sample


def game_of(games, sample, role):
    """The game whose ``role`` seat played exactly this sample."""
    found = [
        g
        for g in games
        if g.learner_role == role
        and (g.token_sequence(role) or [])[: len(sample["prompt"]) + len(sample["response"])]
        == sample["prompt"] + sample["response"]
    ]
    assert found, "no game's learner sequence is this sample"
    return found[0]


def expected_sample(game, role) -> dict:
    """The learner's sample rebuilt from the game's record alone: its first prompt, then per
    turn the inserted ids (mask 0, logprob 0.0) and the sampled ids (mask 1, their logprobs)."""
    record = game.record()
    seats = record["setup"]["seats"]
    turns = [t["tokens"] for t in record["turns"] if seats[t["seat"]]["role"] == role]
    prompt, response, mask, logprobs = turns[0]["prompt_ids"], [], [], []
    for k, t in enumerate(turns):
        if k:
            response += t["prompt_ids"]
            mask += [0] * len(t["prompt_ids"])
            logprobs += [0.0] * len(t["prompt_ids"])
        response += t["completion_ids"]
        mask += [1] * len(t["completion_ids"])
        logprobs += t["logprobs"]
    return {"prompt": prompt, "response": response, "mask": mask, "logprobs": logprobs}


@pytest.mark.parametrize("family", FAMILIES)
def test_self_play_rows_of_every_family_play_to_an_end_through_verls_worker(
    tokenizer, family, games, rows_batch, monkeypatch, tmp_path, replay_verify
):
    records = tmp_path / "verl-{pid}.jsonl"
    server = FakeServerManager(tokenizer, games, seed=11)
    worker = make_worker(
        monkeypatch, tokenizer, server, loop_yaml(tmp_path, record_path=str(records)), n=3
    )
    scenario = dealgym.scenario_ids(family)[0]
    batch = rows_batch(family, 3, scenario_ids=[scenario], seeds=[5])
    out = generate(worker, batch)

    roles = list(dealgym.roles(family))
    assert len(out) == 6 and len(games) == 6
    info = out.non_tensor_batch["dealgym"]
    assert [i["role"] for i in info] == [roles[0]] * 3 + [roles[1]] * 3, "one seat per row"
    assert {i["outcome"] for i in info} <= SCORED
    # verl's batch: everything padded to prompt_length / response_length.
    assert out.batch["prompts"].shape == (6, 4096)
    assert out.batch["responses"].shape == out.batch["response_mask"].shape == (6, 4096)
    assert out.batch["rollout_log_probs"].shape == (6, 4096)
    assert out.meta_info["reward_extra_keys"] == list(dverl.EXTRA_INFO_KEYS)

    for i in range(6):
        sample = unpadded(out, i)
        role = info[i]["role"]
        game = game_of(games, sample, role)
        assert game.done and info[i]["outcome"] == game.outcome["kind"]
        # The reward is the game's, at the last response position (verl's rm_scores).
        reward = game.rewards[role]
        last = len(sample["response"]) - 1
        assert out.batch["rm_scores"][i, last].item() == pytest.approx(reward)
        assert out.batch["rm_scores"][i].sum().item() == pytest.approx(reward)
        assert out.non_tensor_batch["unfinished"][i] == 0.0
        assert out.non_tensor_batch["deal"][i] == float(game.outcome["kind"] == "deal")
        if not any(sample["mask"]):
            # The other seat ended the game before this one moved: one masked id.
            assert sample["response"] == [tokenizer.eos_token_id]
            continue
        want = expected_sample(game, role)
        assert sample["prompt"] == want["prompt"]
        assert sample["response"] == want["response"], "the ids trained are the ids played"
        assert sample["mask"] == want["mask"], "mask 1 exactly on the sampled ids"
        assert sample["logprobs"] == pytest.approx(want["logprobs"])
        assert game.token_sequence(role) == sample["prompt"] + sample["response"]
        # verl's count: the seat's user and assistant messages (system aside), up to and
        # including its last reply.
        spoken = [m["role"] for m in game.observe(role)["messages"] if m["role"] != "system"]
        last_reply = len(spoken) - spoken[::-1].index("assistant")
        assert out.non_tensor_batch["__num_turns__"][i] == last_reply
        assert 0.0 <= out.non_tensor_batch["format_ok"][i] <= 1.0

    # The members of a group are distinct episodes of one setup: one uid, and the session_id
    # as the member's low part (dealgym.verl._member).
    written = read_records(next(tmp_path.glob("verl-*.jsonl")))
    assert len(written) == 6
    assert len({(r["run_id"], r["episode_id"]) for r in written}) == 6
    for role in roles:
        mine = [r for r in written if r["seats"]["learner"]["role"] == role]
        assert sorted(session_of(r) for r in mine) == [0, 1, 2]
        assert len({r["episode_id"] for r in mine}) == 3
    for i in range(6):
        game = game_of(games, unpadded(out, i), info[i]["role"])
        seats = game.record()["setup"]["seats"]
        turns = [t for t in game.record()["turns"] if seats[t["seat"]]["role"] == info[i]["role"]]
        if turns:
            share = sum(bool(t["format_ok"]) for t in turns) / len(turns)
            assert out.non_tensor_batch["format_ok"][i] == pytest.approx(share)
    # Sticky sessions: each seat of each game has a request id of its own.
    seats_played = sum(len({t["seat"] for t in r["turns"]}) for r in written)
    assert len({rid for rid, _ in server.requests}) == seats_played
    replay_verify(next(tmp_path.glob("verl-*.jsonl")))


def stubborn(state: dict, rng: random.Random) -> str:
    return turn("[REJECT_DEAL]", talk="No, not yet.")


def test_response_length_is_kept_by_the_loop_and_an_unfinished_game_is_marked(
    tokenizer, games, rows_batch, monkeypatch, tmp_path
):
    """Neither seat gives in and the turn caps are off: the learner's ``response_length`` runs
    out before the game ends. The sample is what was played (never longer than
    ``response_length``), its reward ``unfinished_reward``, marked unfinished; no record is
    written for a game that did not end."""
    records = tmp_path / "cut.jsonl"
    R = 200
    server = FakeServerManager(tokenizer, games, stubborn)
    yaml_path = loop_yaml(tmp_path, unfinished_reward=-0.5, record_path=str(records))
    worker = make_worker(monkeypatch, tokenizer, server, yaml_path, response_length=R, n=2)
    rules = {"reject_loop": 0, "reject_streak": 0, "max_rounds": 50}
    batch = rows_batch(
        "casino", 2, scenario_ids=[dealgym.scenario_ids("casino")[0]], seeds=[3], rules=rules
    )
    out = generate(worker, batch)
    assert len(out) == 4
    for i in range(4):
        sample = unpadded(out, i)
        role = out.non_tensor_batch["dealgym"][i]["role"]
        game = game_of(games, sample, role)
        assert not game.done
        assert 0 < len(sample["response"]) <= R
        assert len(sample["mask"]) == len(sample["logprobs"]) == len(sample["response"])
        assert out.non_tensor_batch["unfinished"][i] == 1.0
        assert out.non_tensor_batch["dealgym"][i]["outcome"] == "unfinished"
        assert out.batch["rm_scores"][i].sum().item() == pytest.approx(-0.5)
        # What was played, ids and mask alike: the learner's sequence past its first prompt.
        played = game.token_sequence(role)[len(sample["prompt"]) :]
        assert played[: len(sample["response"])] == sample["response"]
        # Mask 1 exactly on what the server sampled for this seat (a request id per seat).
        uid, session = out.non_tensor_batch["uid"][i], out.non_tensor_batch["session_id"][i]
        member = dverl._member({"uid": uid, "session_id": session})
        (request,) = [
            rid
            for rid in server.sampled
            if rid.startswith(f"dealgym-{uid}-{member}-") and rid.endswith(f"-{role}")
        ]
        masked = [t for t, m in zip(sample["response"], sample["mask"], strict=True) if m]
        # All it sampled but a last turn cut short by what was left of R, which is not played.
        assert server.sampled[request][: len(masked)] == masked
    max_tokens = [m for _, m in server.requests]
    assert max(max_tokens) <= R
    assert not records.exists(), "an unfinished game has no record"


def test_a_turn_cut_at_max_tokens_reaches_the_game_as_length(
    tokenizer, games, rows_batch, monkeypatch, tmp_path, replay_verify
):
    """verl's servers say "completed" for a cut turn too; the loop tells a cut by a turn that
    used its whole ``max_tokens`` without the end-of-sequence id. A cut turn is unreadable, so
    the game asks again and then forfeits it."""
    records = tmp_path / "short.jsonl"
    server = FakeServerManager(tokenizer, games, seed=2)
    yaml_path = loop_yaml(tmp_path, max_tokens_per_turn=8, record_path=str(records))
    worker = make_worker(monkeypatch, tokenizer, server, yaml_path, n=1)
    batch = rows_batch("dnd", 1, scenario_ids=[dealgym.scenario_ids("dnd")[0]])
    out = generate(worker, batch)
    assert {rid_max for _, rid_max in server.requests} == {8}
    assert {i["outcome"] for i in out.non_tensor_batch["dealgym"]} == {"format_forfeit"}
    written = read_records(records)
    assert {t["tokens"]["finish_reason"] for r in written for t in r["turns"]} == {"length"}
    replay_verify(records)


def test_a_seat_learns_against_a_rule_opponent(
    tokenizer, games, rows_batch, monkeypatch, tmp_path, replay_verify
):
    records = tmp_path / "rule.jsonl"
    server = FakeServerManager(tokenizer, games, seed=3)
    worker = make_worker(
        monkeypatch, tokenizer, server, loop_yaml(tmp_path, record_path=str(records)), n=4
    )
    batch = rows_batch(
        "craigslist",
        4,
        scenario_ids=dealgym.scenario_ids("craigslist")[:2],
        seats=["seller"],
        opponent="rule:linear",
    )
    out = generate(worker, batch)
    assert len(out) == 8
    assert {i["role"] for i in out.non_tensor_batch["dealgym"]} == {"seller"}
    assert all(rid.endswith("-seller") for rid, _ in server.requests), "only the seller samples"
    for i in range(8):
        sample = unpadded(out, i)
        game = game_of(games, sample, "seller")
        want = expected_sample(game, "seller")
        assert (sample["response"], sample["mask"]) == (want["response"], want["mask"])
        assert out.batch["rm_scores"][i].sum().item() == pytest.approx(game.rewards["seller"])
    written = read_records(records)
    assert len(written) == 8
    assert {r["seats"]["opponent"]["player"] for r in written} == {"rule:linear"}
    replay_verify(records)


def test_without_logprobs_the_batch_has_none(tokenizer, games, rows_batch, monkeypatch, tmp_path):
    server = FakeServerManager(tokenizer, games)
    worker = make_worker(monkeypatch, tokenizer, server, loop_yaml(tmp_path), n=2, logprobs=False)
    out = generate(worker, rows_batch("ahp", 2, scenario_ids=[dealgym.scenario_ids("ahp")[0]]))
    assert len(out) == 4 and "rollout_log_probs" not in out.batch.keys()


@pytest.mark.parametrize(
    ("fail", "message"),
    [
        ({"fail_at": 3}, "server manager failed on the .* seat's turn: ConnectionError"),
        ({"abort_at": 0}, "seat's generation was aborted"),
    ],
    ids=["server_error", "aborted"],
)
def test_a_failed_episode_raises_and_names_the_game_and_seat(
    tokenizer, games, rows_batch, monkeypatch, tmp_path, fail, message
):
    """verl's v1 trainer gathers a row's runs with ``return_exceptions=True`` and marks the
    group failed on a raise; returning ``None`` would crash it. The legacy worker's plain
    ``gather`` fails the step: that is verl's own behaviour for a failed sample."""
    records = tmp_path / "failed.jsonl"
    server = FakeServerManager(tokenizer, games, **fail)
    worker = make_worker(
        monkeypatch, tokenizer, server, loop_yaml(tmp_path, record_path=str(records)), n=2
    )
    batch = rows_batch(
        "job_interview",
        2,
        scenario_ids=[dealgym.scenario_ids("job_interview")[0]],
        seats=["worker"],
    )
    with pytest.raises(dverl.EpisodeFailed, match=message) as failed:
        generate(worker, batch)
    assert "dealgym game job_interview/" in str(failed.value)
    assert "seed 0, member" in str(failed.value)


def test_a_failed_run_is_what_verls_v1_trainer_counts_as_a_failed_session(
    tokenizer, games, monkeypatch, tmp_path
):
    """The v1 trainer's ``_run_prompt`` settles a row's runs with ``_settle_session_tasks``
    (a gather with ``return_exceptions=True``) and marks the group failed when any raised."""
    tq_module = pytest.importorskip(
        "verl.trainer.ppo.v1.agent_loop_tq", reason="verl's v1 agent loop needs transfer_queue"
    )
    server = FakeServerManager(tokenizer, games, fail_at=1)
    worker = make_worker(monkeypatch, tokenizer, server, loop_yaml(tmp_path), n=2)
    loop = dverl.DealAgentLoop(
        trainer_config=verl_agent_loop.DictConfigWrap(worker.config),
        server_manager=server,
        tokenizer=tokenizer,
        processor=None,
        dataset_cls=RLHFDataset,
        data_config=verl_agent_loop.DictConfigWrap(worker.config.data),
    )
    row = dverl.rows("casino", scenario_ids=[dealgym.scenario_ids("casino")[0]])[0]

    async def settle():
        tasks = [
            asyncio.create_task(loop.run({"logprobs": True}, **row, uid="u", session_id=k))
            for k in range(2)
        ]
        return await tq_module._settle_session_tasks(tasks)

    errors = asyncio.run(asyncio.wait_for(settle(), LIMIT_S))
    assert len(errors) == 1 and isinstance(errors[0], dverl.EpisodeFailed)


def test_a_first_prompt_longer_than_prompt_length_raises(
    tokenizer, games, rows_batch, monkeypatch, tmp_path
):
    server = FakeServerManager(tokenizer, games)
    worker = make_worker(monkeypatch, tokenizer, server, loop_yaml(tmp_path), prompt_length=64, n=1)
    batch = rows_batch(
        "casino",
        1,
        scenario_ids=[dealgym.scenario_ids("casino")[0]],
        seats=["agent_1"],
        first_mover="agent_1",
    )
    with pytest.raises(dverl.EpisodeFailed, match="longer than rollout.prompt_length=64"):
        generate(worker, batch)
    assert server.calls == 0


def test_the_loop_is_registered_and_rows_name_their_games():
    entry = verl_agent_loop._agent_loop_registry["dealgym"]
    assert entry["_target_"] == "dealgym.verl.DealAgentLoop"
    table = dverl.rows(
        "dnd", scenario_ids=dealgym.scenario_ids("dnd")[:3], seeds=range(2), rules={"max_rounds": 4}
    )
    assert len(table) == 3 * 2 * 2
    assert {r["agent_name"] for r in table} == {"dealgym"}
    assert [r["extra_info"]["index"] for r in table] == list(range(12))
    spec = dverl.episode_spec(table[1]["extra_info"])
    assert spec["rules"] == {"max_rounds": 4} and spec["seat"] == dealgym.roles("dnd")[1]
    assert table[0]["prompt"][0]["role"] == "system"
    with pytest.raises(ValueError, match="built-in negotiator"):
        dverl.episode_spec({**table[0]["extra_info"], "opponent": "openai:gpt"})
    with pytest.raises(ValueError, match="lacks seat"):
        dverl.episode_spec({"family": "dnd", "scenario_id": "x", "seed": 0})


def test_the_shipped_agent_loop_config_builds_the_loop(
    tokenizer, games, rows_batch, monkeypatch, tmp_path
):
    """``dealgym.verl.AGENT_LOOP_CONFIG`` is what ``agent_loop_config_path`` names; verl
    resolves it and the worker builds the loop from it with hydra."""
    from verl.utils.import_utils import resolve_config_path

    path = resolve_config_path(dverl.AGENT_LOOP_CONFIG)
    (entry,) = OmegaConf.load(path)
    assert entry.name == "dealgym" and entry._target_ == "dealgym.verl.DealAgentLoop"
    server = FakeServerManager(tokenizer, games, seed=4)
    worker = make_worker(monkeypatch, tokenizer, server, path, n=2)
    out = generate(
        worker, rows_batch("casino", 2, scenario_ids=[dealgym.scenario_ids("casino")[1]])
    )
    assert len(out) == 4
    assert {m for _, m in server.requests} <= {entry.max_tokens_per_turn}


def test_a_seat_the_game_ended_before_it_moved_still_counts(
    tokenizer, games, rows_batch, monkeypatch, tmp_path, replay_verify
):
    """The other seat moves first and walks away: the learning seat never samples. Its sample
    is its first prompt and one masked end-of-sequence id (no gradient of its own), and its
    reward, the walk-away's, still counts in its group."""
    records = tmp_path / "walk.jsonl"
    server = FakeServerManager(tokenizer, games, lambda state, rng: turn("[WALK_AWAY]"))
    worker = make_worker(
        monkeypatch, tokenizer, server, loop_yaml(tmp_path, record_path=str(records)), n=2
    )
    out = generate(
        worker,
        rows_batch(
            "ahp",
            2,
            scenario_ids=[dealgym.scenario_ids("ahp")[0]],
            seats=["buyer"],
            first_mover="seller",
        ),
    )
    assert len(out) == 2 and all(rid.endswith("-seller") for rid, _ in server.requests)
    for i in range(2):
        sample = unpadded(out, i)
        assert sample["response"] == [tokenizer.eos_token_id] and sample["mask"] == [0]
        assert sample["logprobs"] == [0.0]
        assert out.non_tensor_batch["dealgym"][i]["outcome"] == "walk_away"
        assert out.non_tensor_batch["__num_turns__"][i] == 1
    rewards = [g.rewards["buyer"] for g in games]
    assert sorted(out.batch["rm_scores"].sum(dim=1).tolist()) == pytest.approx(sorted(rewards))
    assert len(read_records(records)) == 2
    replay_verify(records)


class StatelessServer:
    """The Ray test's stand-in for verl's server manager (the client of the GPU inference
    servers). It is pickled into the ``AgentLoopWorker`` Ray actor, away from the games, so it
    reads the prompt ids alone: a seat whose last message holds an offer accepts it, any other
    offers a fair CaSiNo split. The tokenizer is loaded from the model folder the test wrote."""

    def __init__(self, model_dir: str) -> None:
        self.model_dir = model_dir
        self.tokenizer = None

    async def generate(self, request_id, *, prompt_ids, sampling_params, **kwargs) -> TokenOutput:
        if self.tokenizer is None:
            from transformers import AutoTokenizer

            self.tokenizer = AutoTokenizer.from_pretrained(self.model_dir)
        tok = self.tokenizer
        text = tok.decode(prompt_ids, skip_special_tokens=False)
        last = text.rsplit("<|im_start|>user", 1)[-1]
        if "[SUBMIT_DEAL]" in last:
            reply = turn("[ACCEPT_DEAL]", talk="Deal.")
        else:
            reply = turn("[SUBMIT_DEAL] food:2 water:1 firewood:1", talk="A fair split?")
        ids = tok.encode(reply, add_special_tokens=False) + [tok.eos_token_id]
        ids = ids[: sampling_params["max_tokens"]]
        return TokenOutput(token_ids=ids, log_probs=[-0.1] * len(ids), stop_reason="completed")


def test_verls_agent_loop_manager_runs_the_loop_in_its_ray_worker(
    tokenizer, tmp_path, replay_verify
):
    """verl's ``AgentLoopManager`` itself, on a local Ray cluster on the CPU: the trainer's whole
    config composed from verl's ``ppo_trainer.yaml``, a model folder holding the tokenizer and a
    ``config.json`` (no weights: nothing here runs a model), the real ``AgentLoopWorker``
    started as a Ray actor, which reads ``agent_loop_config_path`` and builds the loop. The
    server manager is the one stand-in (the trainer would hand the manager the client of its
    GPU inference servers). This is verl's legacy (v0) manager: it passes no ``session_id``,
    so the loop numbers the runs of a ``uid`` itself."""
    import os
    import sys

    import ray
    import verl
    from hydra import compose, initialize_config_dir
    from verl.experimental.agent_loop.agent_loop import AgentLoopManager

    model = tmp_path / "model"
    tokenizer.save_pretrained(model)
    (model / "config.json").write_text(
        json.dumps(
            {
                "model_type": "qwen2",
                "architectures": ["Qwen2ForCausalLM"],
                "vocab_size": len(tokenizer),
                "hidden_size": 64,
                "intermediate_size": 128,
                "num_hidden_layers": 1,
                "num_attention_heads": 2,
                "num_key_value_heads": 1,
                "max_position_embeddings": 16384,
                "eos_token_id": tokenizer.eos_token_id,
                "pad_token_id": tokenizer.pad_token_id,
            }
        )
    )
    records = tmp_path / "ray-{pid}.jsonl"
    yaml_path = loop_yaml(tmp_path, record_path=str(records))
    rows = tmp_path / "casino.parquet"
    dverl.dataset(rows, "casino", scenario_ids=[dealgym.scenario_ids("casino")[0]])
    config_dir = str(pathlib.Path(verl.__file__).parent / "trainer" / "config")
    with initialize_config_dir(config_dir=config_dir, version_base=None):
        config = compose(
            "ppo_trainer",
            overrides=[
                f"actor_rollout_ref.model.path={model}",
                "actor_rollout_ref.rollout.name=vllm",
                "actor_rollout_ref.rollout.prompt_length=4096",
                "actor_rollout_ref.rollout.response_length=1024",
                "actor_rollout_ref.rollout.n=2",
                "actor_rollout_ref.rollout.calculate_log_probs=True",
                f"actor_rollout_ref.rollout.agent.agent_loop_config_path={yaml_path}",
                "actor_rollout_ref.rollout.agent.num_workers=1",
                f"data.train_files={rows}",
                f"data.val_files={rows}",
            ],
        )
    data = RLHFDataset(
        data_files=[str(rows)],
        tokenizer=tokenizer,
        config=OmegaConf.create(
            {"filter_overlong_prompts": False, "cache_dir": str(tmp_path / "cache")}
        ),
        processor=None,
    )
    batch = DataProto.from_single_dict(collate_fn([data[i] for i in range(len(data))]))
    batch.non_tensor_batch["uid"] = np.array(
        [str(uuid.uuid4()) for _ in range(len(batch))], dtype=object
    )
    batch = batch.repeat(repeat_times=2, interleave=True)

    # The Ray worker imports this module (to unpickle the server) and dealgym.
    here = str(pathlib.Path(__file__).parent)
    path = os.pathsep.join([here, *[p for p in sys.path if p]])
    ray.init(
        num_cpus=2,
        include_dashboard=False,
        runtime_env={"env_vars": {"PYTHONPATH": path}},
    )
    try:
        manager = AgentLoopManager.create(config=config, llm_client=StatelessServer(str(model)))
        out = manager.generate_sequences(batch)
    finally:
        ray.shutdown()

    assert len(out) == 4
    info = out.non_tensor_batch["dealgym"]
    roles = list(dealgym.roles("casino"))
    assert [i["role"] for i in info] == [roles[0]] * 2 + [roles[1]] * 2
    assert {i["outcome"] for i in info} == {"deal"}
    assert out.batch["responses"].shape == (4, 1024)
    assert "agent_loop/generate_sequences/mean" in out.meta_info["timing"]
    (written_path,) = tmp_path.glob("ray-*.jsonl")
    written = read_records(written_path)
    assert len(written) == 4 and {r["outcome"]["kind"] for r in written} == {"deal"}
    for role in roles:
        mine = [r for r in written if r["seats"]["learner"]["role"] == role]
        assert sorted(session_of(r) for r in mine) == [0, 1]
        assert len({r["episode_id"] for r in mine}) == 2
    assert sorted(out.batch["rm_scores"].sum(dim=1).tolist()) == pytest.approx(
        sorted(r["rewards"]["learner"] for r in written)
    )
    for i in range(4):
        sample = unpadded(out, i)
        assert sum(sample["mask"]) > 0 and len(sample["response"]) <= 1024
    replay_verify(written_path)


def test_a_self_play_opponent_samples_within_the_servers_context(
    tokenizer, games, rows_batch, monkeypatch, tmp_path
):
    """verl's servers hold a request to ``prompt_length + response_length`` ids. The other seat
    (here with the longer system prompt) fills that before the learning seat's budget runs out:
    it is not sent past it, and the sample is unfinished."""
    scenario = "casino:404"
    # The rules are told in the prompt: the first prompt is measured under the rules played.
    rules = {"reject_loop": 0, "reject_streak": 0, "max_rounds": 50}
    row = dverl.rows(
        "casino", scenario_ids=[scenario], seats=["agent_1"], first_mover="agent_1", rules=rules
    )
    first = len(ExactTokens(tokenizer).render(row[0]["prompt"], continuation=False))
    P, R = first, 300
    server = FakeServerManager(tokenizer, games, stubborn, context=P + R)
    worker = make_worker(
        monkeypatch,
        tokenizer,
        server,
        loop_yaml(tmp_path, unfinished_reward=-1.0),
        prompt_length=P,
        response_length=R,
        n=1,
    )
    out = generate(
        worker,
        rows_batch(
            "casino",
            1,
            scenario_ids=[scenario],
            seats=["agent_1"],
            first_mover="agent_1",
            rules=rules,
        ),
    )
    (game,) = games
    assert not game.done and game.to_move == "agent_2", "the opponent's turn could not be sampled"
    assert out.non_tensor_batch["unfinished"][0] == 1.0
    assert out.batch["rm_scores"][0].sum().item() == pytest.approx(-1.0)
    assert len(unpadded(out, 0)["response"]) <= R


def session_of(record: dict) -> int:
    """The run of its group a record's episode was: its member's low part."""
    group, member = record["episode_id"].split("-m")
    assert group == "g0"
    return int(member) % 1024


def test_a_member_tells_apart_the_runs_of_a_group_and_the_groups_of_a_row():
    # verl draws a new uid for a row at every step: the row's second appearance must play new
    # episodes (a record file refuses an episode id it holds), and a group's runs stay distinct.
    first, again = str(uuid.uuid4()), str(uuid.uuid4())
    members = {
        (uid, s): dverl._member({"uid": uid, "session_id": s})
        for uid in (first, again)
        for s in range(4)
    }
    assert len(set(members.values())) == 8
    assert dverl._member({"uid": first, "session_id": 2}) == members[(first, 2)], "stable"
    with pytest.raises(ValueError, match="at most 1024 runs"):
        dverl._member({"uid": first, "session_id": 1024})
    # The legacy manager passes no session: the runs of a uid are numbered as they start.
    legacy = str(uuid.uuid4())
    assert len({dverl._member({"uid": legacy}) for _ in range(3)}) == 3
