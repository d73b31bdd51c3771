"""dealgym.tinker under the Tinker cookbook's own rollout code (tinker-cookbook 0.5.8, tinker
0.38.0): ``do_group_rollout`` with the cookbook's ``TinkerTokenCompleter``, and
``do_group_rollout_and_filter_constant_reward``, the call its training loop makes per group.

Tinker's sampling service cannot be reached from here, so ``ScriptedSamplingClient`` stands in
for ``tinker.SamplingClient``: its ``sample_async`` answers with the canonical ids of a
scripted completion (chosen by a seeded RNG from the seat's legal moves), as real
``tinker.SampleResponse`` objects. Nothing else is faked: the rollout loop, the strategies,
the advantages and ``trajectory_to_data`` are the cookbook's. The tokenizer is the one the token
tests use: the 65,000-token BPE in the ``anthropic`` 0.34.2 wheel with a ChatML template.
"""

from __future__ import annotations

import asyncio
import pickle
import random

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

pytest.importorskip(
    "tinker_cookbook", reason="tinker-cookbook is not installed (.ci/tinker.sh installs it)"
)

import numpy as np  # noqa: E402
import tinker  # noqa: E402
from tinker_cookbook.completers import TinkerTokenCompleter  # noqa: E402
from tinker_cookbook.exceptions import AllTrajectoriesFailedError  # noqa: E402
from tinker_cookbook.rl.data_processing import (  # noqa: E402
    compute_advantages,
    trajectory_to_data,
)
from tinker_cookbook.rl.rollout_strategy import MinViableGroup  # noqa: E402
from tinker_cookbook.rl.rollouts import (  # noqa: E402
    do_group_rollout,
    do_group_rollout_and_filter_constant_reward,
)
from transformers import PreTrainedTokenizerFast  # noqa: E402

import dealgym  # noqa: E402
from dealgym.tinker import (  # noqa: E402
    DealDatasetBuilder,
    DealGroupBuilder,
    drop_failed_groups,
)
from dealgym.tokens import ExactTokens  # noqa: E402

#: Every group's trajectories must come back well inside this (a coupled seat that waits for
#: ever would hang the test instead of failing it).
LIMIT_S = 120


@pytest.fixture(scope="module")
def tokenizer() -> PreTrainedTokenizerFast:
    return anthropic_tokenizer()


def end_of_turn(tok) -> int:
    return tok.convert_tokens_to_ids("<|im_end|>")


def negotiate(state: dict, rng: random.Random) -> str:
    """A seat's completion: accept a standing offer a third of the time, else offer (greedy or
    a fair split), sometimes walk away, sometimes write nothing readable."""
    legal = state["legal_actions"]
    if "accept" in legal and rng.random() < 0.35:
        return turn("[ACCEPT_DEAL]", talk="Deal.")
    pick = rng.random()
    if pick < 0.08:
        return turn("[WALK_AWAY]", talk="We are too far apart.")
    if pick < 0.16:
        return GARBAGE
    return turn(offer(state, greedy=pick < 0.55), talk="How about this?")


class ScriptedSamplingClient:
    """Stands in for ``tinker.SamplingClient`` (Tinker's service cannot be reached here).

    ``sample_async`` finds the game and seat whose prompt it was sent (the seat to move whose
    whole conversation, rendered with the same chat template, is exactly the prompt), asks
    ``script(state, rng)`` for the completion's text and answers with its canonical ids and the
    end-of-turn id, as a real sampler that wrote that text would. ``fail_at`` makes that call
    (0-based) raise, as a dead service would; ``length_at`` answers that call with
    ``stop_reason="length"``."""

    def __init__(
        self,
        builder,
        tokenizer,
        script=negotiate,
        *,
        seed=0,
        fail_at=None,
        length_at=None,
        renderer=None,
    ):
        self.builder = builder
        self.renderer = renderer
        self.rendered = 0
        self.tokenizer = tokenizer
        self.render = ExactTokens(tokenizer).render
        self.script = script
        self.rng = random.Random(seed)
        self.fail_at = fail_at
        self.length_at = length_at
        self.calls = 0

    async def sample_async(self, prompt, num_samples, sampling_params):
        call, self.calls = self.calls, self.calls + 1
        assert num_samples == 1
        assert sampling_params.stop == [end_of_turn(self.tokenizer)]
        if call == self.fail_at:
            raise ConnectionError("the sampling service is unreachable (scripted failure)")
        ids = prompt.to_ints()
        state = self._state_of(ids)
        text = self.script(state, self.rng)
        tokens = self.tokenizer.encode(text, add_special_tokens=False)
        stop = "length" if call == self.length_at else "stop"
        if stop == "stop":
            tokens.append(end_of_turn(self.tokenizer))
        return tinker.SampleResponse(
            sequences=[
                tinker.SampledSequence(
                    stop_reason=stop,
                    sequence_id=f"scripted-{call}",
                    tokens_np=np.array(tokens, dtype=np.int32),
                    logprobs_np=np.full(len(tokens), -0.5, dtype=np.float32),
                )
            ]
        )

    def _state_of(self, ids: list[int]) -> dict:
        found = seat_prompted_with(self.builder.in_play, ids, self.render)
        if found is not None:
            game, role, messages = found
            if self.renderer is not None:
                # The observation is what the cookbook's renderer builds from the chat.
                assert self.renderer.build_generation_prompt(messages).to_ints() == ids
                self.rendered += 1
            return game.observe(role)["state"]
        raise AssertionError("the sampler was sent a prompt that is no seat's conversation")


def rollout(builder, client, strategy=None):
    policy = TinkerTokenCompleter(client, max_tokens=256)
    strategy = strategy or drop_failed_groups(builder.envs_per_group)
    return asyncio.run(asyncio.wait_for(do_group_rollout(builder, policy, strategy), LIMIT_S))


def role_of(traj) -> str:
    return traj.transitions[-1].logs["dealgym/role"]


def check_token_exact(traj) -> None:
    """Each observation extends the previous observation and action: one sequence per seat."""
    for before, after in zip(traj.transitions, traj.transitions[1:]):
        kept = before.ob.to_ints() + before.ac.tokens
        assert after.ob.to_ints()[: len(kept)] == kept, "sampled ids were re-tokenized"
        assert after.ob.length > len(kept)


@pytest.mark.parametrize("family", FAMILIES)
def test_self_play_groups_play_every_family_to_an_end_with_per_role_baselines(
    tokenizer, family, tmp_path, replay_verify
):
    records = tmp_path / "tinker.jsonl"
    builder = DealGroupBuilder(
        family=family,
        tokenizer=tokenizer,
        seed=5,
        games=4,
        stop=[end_of_turn(tokenizer)],
        record_path=str(records),
    )
    client = ScriptedSamplingClient(builder, tokenizer, seed=11)
    group = rollout(builder, client)

    assert len(group.trajectories_G) == 8 and not group.rollout_errors
    roles = [role_of(traj) for traj in group.trajectories_G]
    assert sorted(roles) == sorted(list(dealgym.roles(family)) * 4)

    for traj in group.trajectories_G:
        last = traj.transitions[-1]
        assert last.episode_done and all(not t.episode_done for t in traj.transitions[:-1])
        assert traj.stop_reason in {"completed", "max_turns", "parse_error"}
        assert last.metrics[f"stop/{traj.stop_reason}"] == 1.0
        assert traj.final_ob.length == 0, "the cookbook's final_ob after the last step"
        assert all(t.reward == 0.0 for t in traj.transitions[:-1]), "the reward comes at the end"
        outcome = [k for k in last.metrics if k.startswith("dealgym/outcome/")]
        assert len(outcome) == 1
        if traj.transitions[0].ac.tokens:
            assert 0.0 <= last.metrics["dealgym/format_ok"] <= 1.0
            check_token_exact(traj)

    # Per-role baselines: the cookbook centres the totals on the group mean; each seat's
    # advantage is its reward minus its role's mean.
    returns = [sum(t.reward for t in traj.transitions) for traj in group.trajectories_G]
    assert [m["dealgym/reward"] for m in group.metrics_G] == returns
    (advantages,) = compute_advantages([group])
    assert any(abs(a) > 1e-6 for a in advantages.tolist()), "the script should vary outcomes"
    assert any(len(traj.transitions) >= 2 for traj in group.trajectories_G)
    for role in set(roles):
        mine = [r for r, ro in zip(returns, roles) if ro == role]
        mean = sum(mine) / len(mine)
        for adv, r, ro in zip(advantages.tolist(), returns, roles):
            if ro == role:
                assert adv == pytest.approx(r - mean, abs=1e-6)

    # One training datum per seat: the token-exact sequence is one sequence.
    for traj, adv in zip(group.trajectories_G, advantages.tolist()):
        if traj.transitions[0].ac.tokens:
            assert len(trajectory_to_data(traj, adv)) == 1

    # The records are the games the trajectories came from, and they replay exactly.
    written = read_records(records)
    assert len(written) == 4
    assert {r["outcome"]["kind"] for r in written} <= {
        "deal", "walk_away", "reject_loop", "max_turns", "format_forfeit"
    }
    sampled = sorted(
        tuple(t.ac.tokens) for traj in group.trajectories_G for t in traj.transitions if t.ac.tokens
    )
    recorded = sorted(
        tuple(t["tokens"]["completion_ids"]) for r in written for t in r["turns"]
    )
    assert sampled == recorded
    assert all(t["tokens"]["finish_reason"] == "stop" for r in written for t in r["turns"])
    replay_verify(records)


@pytest.mark.parametrize(
    ("script", "rules", "outcome", "stop_reasons"),
    [
        (lambda state, rng: GARBAGE, None, "format_forfeit", ("parse_error", "completed")),
        (
            lambda state, rng: turn("[REJECT_DEAL]", talk="No."),
            {"reject_loop": 0, "reject_streak": 0, "max_rounds": 2},
            "max_turns",
            ("max_turns", "max_turns"),
        ),
        (
            lambda state, rng: turn("[REJECT_DEAL]", talk="No."),
            None,
            "reject_loop",
            ("completed", "completed"),
        ),
    ],
    ids=["format_forfeit", "max_turns", "reject_loop"],
)
def test_each_ending_has_the_cookbooks_stop_reason(
    tokenizer, script, rules, outcome, stop_reasons, tmp_path, replay_verify
):
    """``stop_reasons``: the stop reason of the seat that ended the game, then its partner's."""
    records = tmp_path / "endings.jsonl"
    builder = DealGroupBuilder(
        family="casino",
        tokenizer=tokenizer,
        seed=9,
        games=2,
        rules=rules,
        stop=[end_of_turn(tokenizer)],
        mask_retried_turns=True,
        record_path=str(records),
    )
    group = rollout(builder, ScriptedSamplingClient(builder, tokenizer, script))
    assert len(group.trajectories_G) == 4
    for traj in group.trajectories_G:
        logs = traj.transitions[-1].logs
        ended_it = logs["dealgym/outcome_by"] in ("", logs["dealgym/role"])
        assert traj.stop_reason == stop_reasons[0 if ended_it else 1]
        masked = [t.metrics.get("parse_error_masked", 0.0) for t in traj.transitions]
        if outcome == "format_forfeit" and ended_it:
            # The first unreadable turn was asked again (masked); the second forfeited.
            assert masked == [1.0, 0.0]
        else:
            assert not any(masked)
        assert logs["dealgym/outcome"] == outcome
        assert traj.transitions[-1].metrics[f"dealgym/outcome/{outcome}"] == 1.0
    assert {r["outcome"]["kind"] for r in read_records(records)} == {outcome}
    replay_verify(records)


def test_observations_are_what_the_cookbooks_renderer_builds(tokenizer, tmp_path, replay_verify):
    """With ``renderer_name`` the stop condition is the cookbook renderer's, and every prompt
    the sampler gets is the renderer's ``build_generation_prompt`` of the seat's chat: the
    cookbook's ``qwen3_instruct`` renderer and the ChatML template agree token for token."""
    from tinker_cookbook import renderers

    records = tmp_path / "rendered.jsonl"
    builder = DealGroupBuilder(
        family="dnd",
        tokenizer=tokenizer,
        seed=12,
        games=3,
        renderer_name="qwen3_instruct",
        record_path=str(records),
    )
    renderer = renderers.get_renderer("qwen3_instruct", tokenizer)
    assert renderer.get_stop_sequences() == [end_of_turn(tokenizer)]

    def patient(state, rng):
        if state["turns"]["moves_used"] < 2:
            return turn(offer(state, greedy=False), talk="A fair split?")
        if "accept" in state["legal_actions"]:
            return turn("[ACCEPT_DEAL]", talk="Deal.")
        return turn("[WALK_AWAY]", talk="No deal then.")

    client = ScriptedSamplingClient(builder, tokenizer, patient, renderer=renderer)
    group = rollout(builder, client)
    assert len(group.trajectories_G) == 6
    assert all(len(traj.transitions) >= 2 for traj in group.trajectories_G)
    assert client.rendered == client.calls >= 12
    replay_verify(records)


def test_a_seat_learns_against_a_rule_opponent(tokenizer, tmp_path, replay_verify):
    records = tmp_path / "rule.jsonl"
    builder = DealGroupBuilder(
        family="craigslist",
        tokenizer=tokenizer,
        seed=2,
        games=4,
        opponent="rule:linear",
        role="seller",
        stop=[end_of_turn(tokenizer)],
        record_path=str(records),
    )
    group = rollout(builder, ScriptedSamplingClient(builder, tokenizer, seed=3))
    assert len(group.trajectories_G) == 4
    assert {role_of(traj) for traj in group.trajectories_G} == {"seller"}
    returns = group.get_total_rewards()
    assert sum(returns) == pytest.approx(0.0, abs=1e-9), "centred on the seller's mean"
    written = read_records(records)
    assert len(written) == 4
    assert {r["seats"]["opponent"]["player"] for r in written} == {"rule:linear"}
    replay_verify(records)


def test_a_sampler_failure_drops_the_group_and_no_seat_is_left_waiting(tokenizer, tmp_path):
    records = tmp_path / "failed.jsonl"
    builder = DealGroupBuilder(
        family="casino",
        tokenizer=tokenizer,
        seed=1,
        games=3,
        stop=[end_of_turn(tokenizer)],
        record_path=str(records),
    )
    client = ScriptedSamplingClient(builder, tokenizer, fail_at=4)
    with pytest.raises(AllTrajectoriesFailedError, match="dropping the group"):
        rollout(builder, client)
    assert not records.exists(), "a dropped group writes no record and scores nothing"

    # The call the cookbook's training loop makes: the group comes back as None (skipped).
    builder = DealGroupBuilder(
        family="casino", tokenizer=tokenizer, seed=1, games=3, stop=[end_of_turn(tokenizer)]
    )
    client = ScriptedSamplingClient(builder, tokenizer, fail_at=4)
    group = asyncio.run(
        asyncio.wait_for(
            do_group_rollout_and_filter_constant_reward(
                client,
                builder,
                max_tokens=256,
                temperature=1.0,
                do_remove_constant_reward_groups=False,
                strategy=drop_failed_groups(builder.envs_per_group),
            ),
            LIMIT_S,
        )
    )
    assert group is None


def test_a_retried_self_play_seat_fails_with_a_reason_instead_of_waiting(tokenizer, caplog):
    builder = DealGroupBuilder(
        family="dnd", tokenizer=tokenizer, seed=4, games=2, stop=[end_of_turn(tokenizer)]
    )
    client = ScriptedSamplingClient(builder, tokenizer, fail_at=0)
    with pytest.raises(AllTrajectoriesFailedError):
        rollout(builder, client, MinViableGroup(min_successful=4, max_retries=2))
    assert "retried one seat of a self-play game alone" in caplog.text


def test_a_rule_opponent_group_may_retry_a_failed_game(tokenizer, tmp_path, replay_verify):
    """One seat per game: a retry is a fresh game, with the next member number."""
    records = tmp_path / "retried.jsonl"
    builder = DealGroupBuilder(
        family="casino",
        tokenizer=tokenizer,
        seed=3,
        games=3,
        opponent="rule:boulware",
        stop=[end_of_turn(tokenizer)],
        record_path=str(records),
    )
    client = ScriptedSamplingClient(builder, tokenizer, seed=2, fail_at=0)
    group = rollout(builder, client, MinViableGroup(min_successful=3, max_retries=1))
    assert len(group.trajectories_G) == 3 and len(group.rollout_errors) == 1
    written = read_records(records)
    assert len(written) == 3 and len({r["episode_id"] for r in written}) == 3
    replay_verify(records)


def test_the_samplers_stop_reason_reaches_the_record(tokenizer, tmp_path, replay_verify):
    records = tmp_path / "length.jsonl"
    builder = DealGroupBuilder(
        family="job_interview",
        tokenizer=tokenizer,
        seed=6,
        games=1,
        stop=[end_of_turn(tokenizer)],
        record_path=str(records),
    )
    group = rollout(builder, ScriptedSamplingClient(builder, tokenizer, length_at=0))
    assert len(group.trajectories_G) == 2
    (record,) = read_records(records)
    reasons = [t["tokens"]["finish_reason"] for t in record["turns"]]
    assert reasons[0] == "length" and set(reasons[1:]) <= {"stop"}
    replay_verify(records)


def test_a_seat_the_game_ended_before_it_moved_still_counts(tokenizer, tmp_path, replay_verify):
    """The first mover walks away: the other seat never samples. Its trajectory is the
    cookbook's no-token ending, with its outcome's reward and stop reason."""
    records = tmp_path / "walk.jsonl"
    builder = DealGroupBuilder(
        family="ahp",
        tokenizer=tokenizer,
        seed=8,
        games=2,
        first_mover="buyer",
        stop=[end_of_turn(tokenizer)],
        record_path=str(records),
    )

    def walk(state, rng):
        return turn("[WALK_AWAY]", talk="No thanks.")

    group = rollout(builder, ScriptedSamplingClient(builder, tokenizer, walk))
    assert len(group.trajectories_G) == 4
    silent = [t for t in group.trajectories_G if not t.transitions[0].ac.tokens]
    assert len(silent) == 2
    for traj in silent:
        assert traj.stop_reason == "completed"
        assert traj.transitions[-1].metrics["dealgym/outcome/walk_away"] == 1.0
    assert len(read_records(records)) == 2
    replay_verify(records)


def test_the_builder_pickles_and_the_dataset_makes_groups(tokenizer):
    builder = DealGroupBuilder(
        family="casino", tokenizer=tokenizer, games=2, stop=[end_of_turn(tokenizer)]
    )
    asyncio.run(builder.make_envs())
    again = pickle.loads(pickle.dumps(builder))
    assert again.in_play == [] and again.family == "casino"
    assert len(asyncio.run(again.make_envs())) == 4

    dataset_builder = DealDatasetBuilder(
        family="dnd", model_name="unused", renderer_name="qwen3", group_size=2, batch_size=3,
        n_batches=2, test_batches=1,
    )
    train, test = asyncio.run(dataset_builder())
    assert len(train) == 2 and test is not None and len(test) == 1
    batch = train.get_batch(1)
    assert len(batch) == 3 and all(b.games == 2 and b.seed == 1 for b in batch)
    assert len({b.scenario_id for b in batch}) == 3
    assert test.get_batch(0)[0].seed == 2
    assert dataset_builder.envs_per_group == 4
    with pytest.raises(IndexError):
        train.get_batch(2)


def test_a_builder_without_a_stop_condition_or_with_another_opponent_is_refused(tokenizer):
    with pytest.raises(ValueError, match="stop="):
        DealGroupBuilder(family="casino", tokenizer=tokenizer)
    with pytest.raises(ValueError, match="built-in negotiator"):
        DealGroupBuilder(family="casino", tokenizer=tokenizer, stop=[0], opponent="openai:m")
