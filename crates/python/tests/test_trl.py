"""dealgym.trl: the tool environments (``environment_factory``) and the rollout function
(``rollout_func``) for TRL 1.16's ``GRPOTrainer``.

The tool methods are checked here without torch (every malformed case included). The trainer
tests run TRL's real ``GRPOTrainer`` for a step on the CPU, on a tiny randomly initialised Llama
built from a config, with a tokenizer shipped by a package (the 65,000-token BPE in the
``anthropic`` 0.34.2 wheel, installed with ``--no-deps``) and TRL's own Qwen2.5 chat template.
They skip only where ``trl`` cannot be imported (the package's main suite has no torch);
.ci/trl.sh installs it, and there they must run (``DEALGYM_REQUIRE_TRL=1``).
"""

from __future__ import annotations

import csv
import functools
import inspect
import json
import os
import pathlib
import subprocess

import pytest
from conftest import FAMILIES, REPO, anthropic_tokenizer

import dealgym
import dealgym.trl as dtrl
from dealgym import EpisodeEndedError, Game

try:
    import torch
    import trl
except ImportError as e:
    if os.environ.get("DEALGYM_REQUIRE_TRL"):
        raise
    trl = None
    WHY = (
        f"trl cannot be imported ({e}); .ci/trl.sh installs it (crates/python/requirements-trl.txt)"
    )
else:
    WHY = ""

needs_trl = pytest.mark.skipif(trl is None, reason=WHY)

#: The tools TRL makes of an environment class: its public functions but reset and get_reward
#: (grpo_trainer.py, trl 1.16: inspect.getmembers(type(env), inspect.isfunction)).
TOOL_NAMES = {"make_offer", "accept", "reject", "say", "walk_away"}


def trl_tools(cls) -> set[str]:
    return {
        name
        for name, _ in inspect.getmembers(cls, predicate=inspect.isfunction)
        if name not in ("reset", "get_reward") and not name.startswith("_")
    }


def started(family="casino", *, opens="learner", rules=None, **kwargs):
    """A tool environment reset on its family's first training row, the learner's role the
    row's own and ``opens`` (``learner`` or ``opponent``) naming whose role moves first."""
    env = dtrl.TOOLS[family](rules=rules, **kwargs)
    learner = dtrl.rows(family, 1, rules=rules)[0]["learner_role"]
    other = next(r for r in dealgym.roles(family) if r != learner)
    first = learner if opens == "learner" else other
    row = dtrl.rows(family, 1, role=learner, first_mover=first, rules=rules)[0]
    return env, env.reset(**row)


# ---------------------------------------------------------------------------------------------
# The rows
# ---------------------------------------------------------------------------------------------


@pytest.mark.parametrize("family", FAMILIES)
def test_tool_rows_hold_the_learners_system_prompt_and_an_empty_first_message(family):
    rows = dtrl.rows(family, 3, offset=2, seed=5)
    assert [r["index"] for r in rows] == [2, 3, 4]
    for row in rows:
        game = Game(family, index=row["index"], seed=5, rules={"learner_format": "xml"})
        assert row["learner_role"] == game.learner_role
        system, first = row["prompt"]
        assert system == game.observe(game.learner_role)["messages"][0]
        assert first == {"role": "user", "content": ""}
        assert "[TALK]" in system["content"], "the XML format, where say's [TALK] is a move"


def test_rollout_rows_are_episode_specs():
    rows = dtrl.rows("dnd", 2, seed=9, kind="rollout", role="agent_2", first_mover="agent_1")
    assert [json.loads(r["prompt"]) for r in rows] == [
        {
            "family": "dnd",
            "index": i,
            "seed": 9,
            "learner_role": "agent_2",
            "first_mover": "agent_1",
        }
        for i in (0, 1)
    ]


def test_rows_refuse_what_they_cannot_make():
    with pytest.raises(ValueError, match="kind='chat'"):
        dtrl.rows("casino", 1, kind="chat")
    with pytest.raises(ValueError, match="count=0"):
        dtrl.rows("casino", 0)
    with pytest.raises(dealgym.ScenarioError):
        dtrl.rows("chess", 1)
    with pytest.raises(ValueError, match="learner_format"):
        dtrl.rows("casino", 1, rules={"learner_format": "tagged"})


# ---------------------------------------------------------------------------------------------
# The tools, without torch
# ---------------------------------------------------------------------------------------------


@pytest.mark.parametrize("family", FAMILIES)
def test_each_family_has_the_five_tools_and_offers_in_its_own_terms(family):
    cls = dtrl.TOOLS[family]
    assert cls.family == family
    assert trl_tools(cls) == TOOL_NAMES
    game = Game(family, index=0)
    public = game.state(game.learner_role)["public"]
    if public.get("parts"):
        keys = ["price", "leave_out"]
    elif public.get("items"):
        keys = [i["name"] for i in public["items"]]
    elif public.get("tickets"):
        # Every call's tickets are a prefix of the four a call may have.
        keys = ["t1", "t2", "t3", "t4"]
        assert [t["key"] for t in public["tickets"]] == keys[: len(public["tickets"])]
    elif public.get("issues"):
        keys = [i["key"] for i in public["issues"]]
    else:
        keys = ["price"]
    params = list(inspect.signature(cls.make_offer).parameters)
    assert params == ["self", *keys, "message"]


def test_the_tools_render_as_json_schemas_with_every_argument_described():
    from transformers.utils import get_json_schema

    for family, cls in dtrl.TOOLS.items():
        env = cls()
        for name in TOOL_NAMES:
            schema = get_json_schema(getattr(env, name))["function"]
            props = schema["parameters"].get("properties", {})
            assert all(p.get("description") for p in props.values()), (family, name)
            required = schema["parameters"].get("required", [])
            assert ("message" in required) == (name == "say"), (family, name)
        offer = get_json_schema(env.make_offer)["function"]["parameters"]["properties"]
        if family in ("casino", "dnd"):
            assert {v["type"] for k, v in offer.items() if k != "message"} == {"integer"}
        if family in ("ahp", "craigslist"):
            assert offer["price"]["type"] == "number"


def test_the_job_interview_options_are_every_scenarios_own():
    from transformers.utils import get_json_schema

    offer = get_json_schema(dtrl.JobInterviewTools().make_offer)["function"]["parameters"]
    enums = {k: v["enum"] for k, v in offer["properties"].items() if "enum" in v}
    assert enums == {
        "position": list(dtrl.POSITIONS),
        "company": list(dtrl.COMPANIES),
        "workplace": list(dtrl.WORKPLACES),
    }
    for index in range(len(dealgym.scenario_ids("job_interview"))):
        game = Game("job_interview", index=index)
        for issue in game.state(game.learner_role)["public"]["issues"]:
            if "options" in issue:
                assert issue["options"] == enums[issue["key"]], (index, issue["key"])
            else:
                assert issue["key"] in ("salary", "holiday")


def test_a_tool_writes_one_turn_in_the_grammar_and_answers_the_other_sides_reply():
    env, first = started("casino", opens="learner")
    assert first.startswith("The negotiation starts now") and first.endswith(dtrl.TOOL_INSTRUCTIONS)
    reply = env.make_offer(food=3, water=2, firewood=1, message="I need the food.")
    game = env.game
    me = game.learner_role
    last = game.state(me)["last_turn"]
    assert last["format_ok"] and last["thought"] == "(tool call: make_offer)"
    assert last["talk"] == "I need the food."
    assert last["played"] == {"kind": "submit", "terms": {"food": 3, "water": 2, "firewood": 1}}
    # The other side reads it in its own format, flipped to its share.
    forwarded = [text for role, text in game.transcript() if role == me]
    assert forwarded == ["Talk: I need the food.\nAction: [SUBMIT_DEAL] food:0 water:1 firewood:2"]
    assert reply == game.observe(me)["prompt"], "the other side's move, as the learner reads it"
    assert "[SUBMIT_DEAL]" in reply and env.moves == 1
    env.say("Can we talk about water?")
    assert game.state(me)["last_turn"]["played"] == {"kind": "talk"}
    env.reject("Not that one.")
    assert game.state(me)["last_turn"]["played"] == {"kind": "reject"}


def test_accepting_the_standing_offer_makes_the_deal_and_the_reward_is_the_games():
    env, first = started("craigslist", opens="opponent")
    assert "[SUBMIT_DEAL] price:" in first, "the opponent opened: its move is the first message"
    over = env.accept("Deal.")
    game = env.game
    assert game.outcome["kind"] == "deal" and game.outcome["by"] == game.learner_role
    assert over.startswith("The negotiation is over: a deal on price:")
    assert env.get_reward() == game.rewards[game.learner_role]


def test_a_term_out_of_range_gets_the_engines_correction_then_forfeits():
    env, _ = started("casino", rules={"format_retries": 1})
    reply = env.make_offer(food=9, water=0, firewood=0)
    assert reply.startswith("Your last turn could not be used: terms out of range: food must be")
    assert not env.game.done and env.game.state(env.game.learner_role)["last_turn"]["retry"]
    over = env.make_offer(food=3, water=-1, firewood=0)
    assert env.game.outcome["kind"] == "format_forfeit"
    assert over.startswith("The negotiation is over: you forfeited") and "water" in over
    assert env.get_reward() == -1.0


@pytest.mark.parametrize(
    "family, offer, says",
    [
        ("dnd", {"book": 1.5, "hat": 0, "ball": 0}, "book must be a whole number"),
        ("ahp", {"price": -5.0}, "price -5 is negative"),
        ("ahp", {"price": float("nan")}, "price `nan` is not a number"),
        (
            "job_interview",
            {
                "salary": 30,
                "position": "Pilot",
                "company": "Google",
                "workplace": "Tokyo",
                "holiday": 3,
            },
            "position must be one of Engineer, Manager, Designer, Sales, got Pilot",
        ),
        (
            "job_interview",
            {
                "salary": 300,
                "position": "Sales",
                "company": "Google",
                "workplace": "Tokyo",
                "holiday": 3,
            },
            "salary must be a whole number from 20 to 50, got 300",
        ),
    ],
)
def test_terms_the_engine_cannot_use_are_corrected_in_its_words(family, offer, says):
    env, _ = started(family)
    reply = env.make_offer(**offer)
    assert reply.startswith("Your last turn could not be used:") and says in reply, reply
    assert not env.game.done


def test_prices_are_written_in_plain_decimals():
    env, _ = started("ahp")
    me = env.game.learner_role
    env.make_offer(price=2.5e-05)  # repr() writes 2.5e-05, which the engine does not read
    assert env.game.state(me)["last_turn"]["played"] == {"kind": "submit", "terms": {"price": 0.0}}
    env.make_offer(price=1.0e3)
    assert [t for t in env.game.transcript() if t[0] == me][-1][1].endswith("price:1000")


def test_accept_with_nothing_on_the_table_is_corrected():
    env, _ = started("dnd", opens="learner")
    reply = env.accept()
    assert "[ACCEPT_DEAL] needs an offer to accept" in reply
    assert not env.game.done


def test_a_tool_call_after_the_end_raises_and_moves_nothing():
    env, _ = started("job_interview")
    over = env.walk_away("Goodbye.")
    assert (
        over
        == "The negotiation is over: no deal: you walked away. Your reward is 0.000. Do not call any more tools."
    )
    turns = len(env.game.record()["turns"])
    for call in (env.accept, env.reject, env.walk_away, lambda: env.say("Hello?")):
        with pytest.raises(EpisodeEndedError, match="the negotiation is over \\(walk_away\\)"):
            call()
    with pytest.raises(EpisodeEndedError):
        env.make_offer(salary=30, position="Sales", company="Apple", workplace="Seoul", holiday=3)
    assert len(env.game.record()["turns"]) == turns
    assert env.get_reward() == 0.0


def test_text_that_would_change_the_move_is_refused_before_it_is_played():
    env, _ = started("casino")
    for text in ("a </talk><action>[WALK_AWAY]</action>", "<think>x</think>", "hi<|im_end|>"):
        with pytest.raises(ValueError, match="would change the move"):
            env.say(text)
    with pytest.raises(ValueError, match="would change the move"):
        started("job_interview")[0].make_offer(30, "Sales</action>", "Apple", "Seoul", 3)
    with pytest.raises(TypeError, match="food must be a number"):
        env.make_offer(food=True, water=1, firewood=1)
    with pytest.raises(TypeError, match="message must be text"):
        env.say(3)
    assert env.moves == 0 and env.game.transcript() == []


def test_a_model_that_stops_calling_tools_gets_the_unfinished_reward():
    env, _ = started("casino", unfinished_reward=-0.25)
    env.say("Let me think.")
    assert not env.game.done
    assert env.get_reward() == -0.25


def test_reset_refuses_rows_it_cannot_play():
    env = dtrl.CasinoTools()
    with pytest.raises(RuntimeError, match="reset"):
        env.accept()
    with pytest.raises(ValueError, match="family 'dnd'"):
        env.reset(**dtrl.rows("dnd", 1)[0])
    with pytest.raises(ValueError, match="needs a row with `index`"):
        env.reset(prompt=[{"role": "user", "content": ""}])
    other = dtrl.rows("casino", 1, rules={"max_rounds": 3})[0]
    with pytest.raises(ValueError, match="system message is not this episode's"):
        env.reset(**other)
    with pytest.raises(ValueError, match="learner_format"):
        dtrl.CasinoTools(rules={"learner_format": "tagged"})
    with pytest.raises(ValueError, match="built-in negotiator"):
        dtrl.CasinoTools(opponent="openai:x@http://127.0.0.1:1/v1")
    with pytest.raises(TypeError, match="family classes' base"):
        dtrl.NegotiationTools()


def trl_rollout_example():
    """examples/python/trl_rollout.py as a module (its imports need no torch)."""
    import importlib.util

    spec = importlib.util.spec_from_file_location(
        "trl_rollout", REPO / "examples" / "python" / "trl_rollout.py"
    )
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_the_examples_training_run_names_its_records_and_is_refused_with_tools(capsys):
    example = trl_rollout_example()
    args = example.parse_args(["--tiny", "t.json", "--training-run", "lr-1e-5", "--out", "o"])
    assert args.training_run == "lr-1e-5"
    assert args.records == str(pathlib.Path("o") / "lr-1e-5.jsonl")
    args = example.parse_args(["--gguf", "m.gguf", "--training-run", "r", "--records", "x.jsonl"])
    assert (args.records, args.gguf, args.model) == ("x.jsonl", pathlib.Path("m.gguf"), None)
    assert example.parse_args(["--model", "m"]).training_run is None
    for refused, says in [
        (["--tiny", "t.json", "--tools", "--training-run", "r"], "--tools records cannot"),
        (["--tiny", "t.json", "--training-run", ""], "not empty"),
        (["--model", "m", "--gguf", "m.gguf"], "not allowed with"),
    ]:
        with pytest.raises(SystemExit):
            example.parse_args(refused)
        assert says in capsys.readouterr().err


def test_a_groups_resets_are_distinct_episodes_of_one_setup(tmp_path, replay_verify):
    row = dtrl.rows("casino", 1, seed=3)[0]
    path = tmp_path / "tools.jsonl"
    envs = [dtrl.CasinoTools(records=path) for _ in range(4)]
    for env in envs:
        env.reset(**row)
    setups = {json.dumps(e.game.state(e.game.learner_role)["own"]) for e in envs}
    assert len(setups) == 1
    for k, env in enumerate(envs):
        env.make_offer(food=3, water=k % 4, firewood=0) if k % 2 else env.say("Hello.")
        env.walk_away()
        env.get_reward()
    dtrl.close_records()
    records = [json.loads(line) for line in path.read_text().splitlines()]
    assert len({r["episode_id"] for r in records}) == 4
    assert len({r["group_id"] for r in records}) == 1
    replay_verify(path)


# ---------------------------------------------------------------------------------------------
# GRPOTrainer on the CPU
# ---------------------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def tokenizer():
    # TRL recognises its bundled templates by their text and then parses tool calls.
    qwen = (pathlib.Path(trl.__file__).parent / "chat_templates" / "qwen2_5.jinja").read_text()
    return anthropic_tokenizer(qwen, eos_token="<|im_end|>", pad_token="<|im_end|>")


def tiny_llama(tok, cls=None):
    from transformers import LlamaConfig, LlamaForCausalLM

    torch.manual_seed(0)
    config = LlamaConfig(
        vocab_size=len(tok),
        hidden_size=32,
        intermediate_size=64,
        num_hidden_layers=2,
        num_attention_heads=2,
        num_key_value_heads=1,
        max_position_embeddings=4096,
        bos_token_id=tok.bos_token_id,
        eos_token_id=tok.eos_token_id,
        pad_token_id=tok.pad_token_id,
        tie_word_embeddings=True,
    )
    return (cls or LlamaForCausalLM)(config)


def grpo_args(out, **kw):
    from trl import GRPOConfig

    base = dict(
        output_dir=str(out),
        use_cpu=True,
        bf16=False,
        gradient_checkpointing=False,
        per_device_train_batch_size=4,
        num_generations=4,
        max_steps=1,
        learning_rate=1e-5,
        logging_steps=1,
        report_to="none",
        save_strategy="no",
        seed=1,
        shuffle_dataset=False,
    )
    return GRPOConfig(**{**base, **kw})


@pytest.fixture(scope="module", autouse=True)
def one_thread():
    if trl is not None:
        torch.set_num_threads(1)
        os.environ["TRL_EXPERIMENTAL_SILENCE"] = "1"
    yield


def call(name: str, **arguments) -> str:
    return "<tool_call>\n" + json.dumps({"name": name, "arguments": arguments}) + "\n</tool_call>"


#: What each member of the group does, one model turn each: a deal; a walk-away; a talk and a
#: term out of range, then no tool call (unfinished); two accepts with nothing on the table (a
#: forfeit), then a tool call after the end (a tool failure). The first call tells them apart.
SCRIPTS = [
    [call("make_offer", food=3, water=3, firewood=3, message="s0 all for me"), call("accept")],
    [call("walk_away", message="s1 goodbye")],
    [
        call("say", message="s2 hello"),
        call("make_offer", food=9, water=0, firewood=0),
        "Let me think.",
    ],
    [call("accept", message="s3"), call("accept"), call("say", message="anyone there?")],
]


@pytest.fixture(scope="module")
def tool_run(tokenizer, tmp_path_factory):
    """One GRPO step with ``environment_factory=CasinoTools`` on a tiny Llama whose generate
    plays SCRIPTS (the loss is the real forward's)."""
    from datasets import Dataset
    from transformers import LlamaForCausalLM
    from trl import GRPOTrainer

    tok = tokenizer

    class ScriptedLlama(LlamaForCausalLM):
        def generate(self, input_ids=None, attention_mask=None, **kwargs):
            rows = []
            for position, ids in enumerate(input_ids):
                text = tok.decode(ids)
                k = text.count("<tool_response>")
                script = (
                    position if k == 0 else next(i for i, s in enumerate(SCRIPTS) if s[0] in text)
                )
                turns = SCRIPTS[script]
                reply = turns[k] if k < len(turns) else "Done."
                comp = tok.encode(reply, add_special_tokens=False) + [tok.eos_token_id]
                rows.append(torch.cat([ids, torch.tensor(comp)]))
            width = max(len(r) for r in rows)
            return torch.stack(
                [torch.cat([r, torch.full((width - len(r),), tok.pad_token_id)]) for r in rows]
            )

    out = tmp_path_factory.mktemp("tools")
    records = out / "tools.jsonl"
    factory = functools.partial(dtrl.CasinoTools, unfinished_reward=-0.5, records=records)
    trainer = GRPOTrainer(
        model=tiny_llama(tok, ScriptedLlama),
        processing_class=tok,
        args=grpo_args(out, max_completion_length=768, max_tool_calling_iterations=6),
        train_dataset=Dataset.from_list(dtrl.rows("casino", 1, seed=2, role="agent_1", first_mover="agent_1")),
        environment_factory=factory,
    )
    trainer.train()
    dtrl.close_records()
    return trainer, records


@needs_trl
def test_grpo_with_environment_factory_calls_the_tools_and_logs_the_rewards(tool_run):
    trainer, _ = tool_run
    envs = trainer.environments
    assert len(envs) == 4 and all(isinstance(e, dtrl.CasinoTools) for e in envs)
    ending = {(e.game.outcome or {}).get("kind", "unfinished"): e for e in envs}
    assert sorted(ending) == ["deal", "format_forfeit", "unfinished", "walk_away"]
    deal, walk, unfinished, forfeit = (
        ending[k] for k in ("deal", "walk_away", "unfinished", "format_forfeit")
    )
    assert deal.moves == 2 and walk.moves == 1 and unfinished.moves == 2 and forfeit.moves == 2
    assert unfinished.game.state(unfinished.game.learner_role)["last_turn"]["retry"], (
        "9 food: corrected"
    )
    # One group: the scenario and seed of the row, each member its own episode.
    assert {e.game.scenario_id for e in envs} == {dealgym.scenario_ids("casino")[0]}
    assert len({e.game.record()["episode_id"] for e in (deal, walk, forfeit)}) == 3
    rewards = [e.get_reward() for e in (deal, walk, unfinished, forfeit)]
    assert rewards == [deal.game.rewards[deal.game.learner_role], 0.0, -0.5, -1.0]
    logged = {k: v for h in trainer.state.log_history for k, v in h.items()}
    assert logged["tools/call_frequency"] == 8 / 4
    assert logged["tools/failure_frequency"] == 1 / 8, "the call after the end failed"
    assert logged["rewards/CasinoTools/mean"] == pytest.approx(sum(rewards) / 4)
    assert "loss" in logged


@needs_trl
def test_the_tool_runs_records_pass_replay_verify(tool_run, replay_verify):
    _, records = tool_run
    lines = [json.loads(line) for line in records.read_text().splitlines()]
    assert sorted(r["outcome"]["kind"] for r in lines) == ["deal", "format_forfeit", "walk_away"]
    assert len({r["episode_id"] for r in lines}) == 3
    replay_verify(records)


TURN_TOKENS = 12
ROLLOUT_RULES = {"max_rounds": 3}
#: A random model's turns all forfeit; a length signal on the characters it wrote tells its
#: rollouts apart, so the step has advantages to train on.
ROLLOUT_REWARDS = {
    "weights": {"terminal": 1.0, "length": 0.5},
    "length": {"unit": "chars", "min": 5, "max": 200},
}


@pytest.fixture(scope="module")
def rollout_run(tokenizer, tmp_path_factory):
    """Two GRPO steps with ``make_rollout_func`` on a tiny random Llama, every call's prompts and
    output kept."""
    from datasets import Dataset
    from trl import GRPOTrainer

    out = tmp_path_factory.mktemp("rollout")
    records = out / "rollout.jsonl"
    rollout = dtrl.make_rollout_func(
        turn_tokens=TURN_TOKENS,
        records=records,
        rules=ROLLOUT_RULES,
        rewards=ROLLOUT_REWARDS,
        training_run="tiny",
    )
    calls = []

    def recorded(prompts, trainer):
        answer = rollout(prompts, trainer)
        calls.append({"prompts": list(prompts), "out": answer, "games": list(rollout.games)})
        return answer

    rows = dtrl.rows("casino", 2, seed=4, kind="rollout") + dtrl.rows(
        "job_interview", 2, seed=4, kind="rollout"
    )
    trainer = GRPOTrainer(
        model=tiny_llama(tokenizer),
        processing_class=tokenizer,
        args=grpo_args(out, num_generations=2, max_completion_length=256, max_steps=2),
        train_dataset=Dataset.from_list(rows),
        reward_funcs=[dtrl.rollout_reward],
        rollout_func=recorded,
    )
    trainer.train()
    dtrl.close_records()
    return trainer, rollout, calls, records


@needs_trl
def test_grpo_with_rollout_func_gives_one_row_per_prompt_in_order(rollout_run, tokenizer):
    trainer, rollout, calls, _ = rollout_run
    assert len(calls) == 2
    tokens = dtrl.ExactTokens(tokenizer)
    for c in calls:
        prompts, out, games = c["prompts"], c["out"], c["games"]
        assert len(prompts) == 4
        for key in (
            "prompt_ids",
            "completion_ids",
            "env_mask",
            "dealgym_reward",
            "dealgym_outcome",
        ):
            assert len(out[key]) == len(prompts), key
        assert out["logprobs"] is None, "the model's generate gives none, as in TRL's own path"
        for i, (prompt, game) in enumerate(zip(prompts, games, strict=True)):
            spec = json.loads(prompt)
            assert game.family == spec["family"]
            assert game.scenario_id == dealgym.scenario_ids(spec["family"])[spec["index"]]
            assert game.learner_role == spec["learner_role"]
            # Row i is game i's own sequence: its first prompt, then every id since.
            assert (
                game.token_sequence(game.learner_role)
                == out["prompt_ids"][i] + out["completion_ids"][i]
            )
            fresh = Game(
                spec["family"],
                index=spec["index"],
                seed=spec["seed"],
                learner_role=spec["learner_role"],
                rules=ROLLOUT_RULES,
                opponent="rule:linear",
            )
            assert out["prompt_ids"][i] == tokens.render(
                fresh.observe(fresh.learner_role)["messages"], continuation=False
            )
            assert len(out["completion_ids"][i]) <= trainer.max_completion_length
            assert out["dealgym_outcome"][i] == game.outcome["kind"]
            assert out["dealgym_reward"][i] == game.rewards[game.learner_role]
        # TRL's groups: each prompt num_generations times in a row, each member its own episode.
        for g in range(0, 4, 2):
            assert prompts[g] == prompts[g + 1]
            ids = [games[g].record()["episode_id"], games[g + 1].record()["episode_id"]]
            assert ids[0] != ids[1]
            assert games[g].record()["group_id"] == games[g + 1].record()["group_id"]
    assert sum(rollout.counts.values()) == 8
    logged = {k: v for h in trainer.state.log_history for k, v in h.items()}
    assert "rewards/rollout_reward/mean" in logged
    assert "dealgym/format_forfeit" in logged
    steps = [h for h in trainer.state.log_history if "reward_std" in h]
    assert len(steps) == 2 and all(h["reward_std"] > 0 and h["grad_norm"] > 0 for h in steps)


@needs_trl
def test_the_env_mask_marks_exactly_the_sampled_ids(rollout_run):
    _, _, calls, _ = rollout_run
    for c in calls:
        out = c["out"]
        for i, game in enumerate(c["games"]):
            mask, ids = out["env_mask"][i], out["completion_ids"][i]
            assert len(mask) == len(ids)
            turns = [t for t in game.record()["turns"] if t["seat"] == "learner"]
            sampled = [x for t in turns for x in t["tokens"]["completion_ids"]]
            assert sum(mask) == len(sampled)
            assert [x for x, m in zip(ids, mask, strict=True) if m] == sampled
            assert all(len(t["tokens"]["completion_ids"]) <= TURN_TOKENS for t in turns)


@needs_trl
def test_the_rollout_records_pass_replay_verify(rollout_run, replay_verify):
    _, _, calls, records = rollout_run
    lines = records.read_text().splitlines()
    assert len(lines) == sum(len(c["games"]) for c in calls)
    assert len({json.loads(line)["episode_id"] for line in lines}) == len(lines)
    replay_verify(records)


@needs_trl
def test_rollout_records_name_their_training_step_and_report_charts_them(
    rollout_run, dealgym_bin, tmp_path
):
    _, _, calls, records = rollout_run
    # Each call's games were played by the policy of the step the trainer was at.
    for step, c in enumerate(calls):
        assert {g.training["step"] for g in c["games"]} == {step}
        assert {g.training["run"] for g in c["games"]} == {"tiny"}
    steps = [json.loads(line)["training"] for line in records.read_text().splitlines()]
    assert {(t["run"], t["step"]) for t in steps} == {("tiny", 0), ("tiny", 1)}
    done = subprocess.run(
        [dealgym_bin, "report", str(records), "--out", str(tmp_path), "--quiet"],
        cwd=REPO,
        capture_output=True,
        text=True,
    )
    assert done.returncode == 0, done.stdout + done.stderr
    with open(tmp_path / "tables" / "training_steps.csv", newline="") as f:
        rows = list(csv.DictReader(f))
    assert [(r["run"], r["step"]) for r in rows] == [("tiny", "0"), ("tiny", "1")]
    for r in rows:
        assert int(r["episodes"]) == 4
        assert r["mean_reward"] != ""
    for key in ("mean_reward", "format_ok_pct", "deal_pct", "rho_deals"):
        assert (tmp_path / "charts" / f"training_{key}.svg").exists(), key
    # A control the files do not hold is an error naming the runs, not a report without it.
    done = subprocess.run(
        [
            dealgym_bin,
            "report",
            str(records),
            "--out",
            str(tmp_path / "x"),
            "--quiet",
            "--training-control",
            "lr-0",
        ],
        cwd=REPO,
        capture_output=True,
        text=True,
    )
    assert done.returncode != 0
    assert "--training-control lr-0" in done.stderr and "tiny" in done.stderr


@needs_trl
def test_an_episode_past_the_budget_is_unfinished_and_keeps_its_row(rollout_run):
    trainer, _, calls, _ = rollout_run
    rollout = dtrl.make_rollout_func(turn_tokens=TURN_TOKENS, unfinished_reward=-0.75)
    prompts = calls[0]["prompts"]
    saved = trainer.max_completion_length
    trainer.max_completion_length = (
        TURN_TOKENS + 5
    )  # one turn fits, the correction after it does not
    try:
        out = rollout(prompts, trainer)
    finally:
        trainer.max_completion_length = saved
    assert out["dealgym_outcome"] == ["unfinished"] * 4
    assert out["dealgym_reward"] == [-0.75] * 4
    assert all(0 < len(ids) <= TURN_TOKENS + 5 for ids in out["completion_ids"])
    assert rollout.counts == {"unfinished": 4}
    assert all("max_completion_length=17" in d for d in rollout.details), rollout.details
    assert all(not g.done for g in rollout.games)


@needs_trl
def test_a_game_that_raises_is_an_error_row_in_its_place(rollout_run, monkeypatch):
    trainer, _, calls, _ = rollout_run
    rollout = dtrl.make_rollout_func(turn_tokens=TURN_TOKENS, error_reward=-0.125)
    prompts = calls[0]["prompts"]
    real = dtrl.ExactTokens.next_prompt
    failed = []

    def next_prompt(self, game, role):
        if not failed and game.token_sequence(role):  # the first second turn of any row
            failed.append(game)
            raise dealgym.TokenError("a chat template that cannot render this turn")
        return real(self, game, role)

    monkeypatch.setattr(dtrl.ExactTokens, "next_prompt", next_prompt)
    out = rollout(prompts, trainer)
    where = rollout.games.index(failed[0])
    assert out["dealgym_outcome"][where] == "error"
    assert out["dealgym_reward"][where] == -0.125
    assert out["completion_ids"][where], "what it sampled keeps its place"
    assert sum(out["env_mask"][where]) == 0, "and none of it is trained on"
    others = [o for i, o in enumerate(out["dealgym_outcome"]) if i != where]
    assert others and all(o in dtrl.OUTCOMES[:5] for o in others)
    assert rollout.counts["error"] == 1
    assert rollout.details[where] == "TokenError: a chat template that cannot render this turn"


# ---------------------------------------------------------------------------------------------
# The rows' KV cache across turns (dealgym._turn_cache)
# ---------------------------------------------------------------------------------------------


@needs_trl
def test_the_turn_cache_reads_each_row_as_a_whole_forward_would(tokenizer):
    """Rows that share their first prompt, blocks of different lengths, a row that leaves and a
    row whose sequence is not an extension of its cache: at every sampled id the cache's logits
    are those of one unpadded forward over the row's whole sequence."""
    from transformers import GenerationConfig

    from dealgym._turn_cache import TurnCache

    model = tiny_llama(tokenizer).eval()
    never = len(tokenizer) + 7  # no id ends a turn: every row samples to its limit
    config = GenerationConfig(do_sample=True, temperature=0.7, top_k=0, repetition_penalty=1.3)
    cache = TurnCache(model, config, [never], tokenizer.pad_token_id)
    seen = []
    forward = cache._forward

    def kept(ids, positions):
        logits = forward(ids, positions)
        seen.append(logits.clone())
        return logits

    cache._forward = kept
    gen = torch.Generator().manual_seed(3)

    def fresh(n):
        return torch.randint(10, 5000, (n,), generator=gen).tolist()

    shared = fresh(40)
    seqs = {"a": list(shared), "b": list(shared), "c": fresh(23)}
    plan = [
        (["a", "b", "c"], {"a": 5, "b": 3, "c": 6}),
        (["a", "c"], {"a": 4, "c": 2}),  # b has left
        (["a", "c"], {"a": 3, "c": 5}),  # c's sequence is replaced (below)
    ]
    worst = 0.0
    for turn, (keys, limits) in enumerate(plan):
        seen.clear()
        before = cache.read
        drawn = cache.sample(keys, [seqs[k] for k in keys], [limits[k] for k in keys])
        if turn == 0:
            # The shared prompt is read once: two distinct first blocks.
            assert cache.read - before == 40 + 23
            seen[0] = seen[0][torch.tensor([0, 0, 1])]
        for i, k in enumerate(keys):
            assert len(drawn[i]) == limits[k]
            whole = seqs[k] + drawn[i]
            with torch.no_grad():
                full = model(input_ids=torch.tensor([whole])).logits[0]
            for j in range(len(drawn[i])):
                at = len(seqs[k]) - 1 + j
                worst = max(worst, (seen[j][i] - full[at]).abs().max().item())
        for i, k in enumerate(keys):
            seqs[k] = seqs[k] + drawn[i] + fresh(7 + 3 * i)
        if turn == 1:
            seqs["c"] = fresh(30)  # not an extension: read again from its first id
    assert worst < 1e-4, worst
    assert cache.keys == ["a", "c"]


@needs_trl
def test_the_rollout_samples_the_same_ids_with_the_cache_as_with_generate(rollout_run):
    """Same seed, same rows: the cached sampler draws what generate over the whole sequence
    draws, turn after turn (every row's limit the same, so both take as many draws)."""
    trainer, _, calls, _ = rollout_run
    prompts = calls[0]["prompts"]
    outs = []
    for cached in (True, False):
        rollout = dtrl.make_rollout_func(
            turn_tokens=TURN_TOKENS,
            rules=ROLLOUT_RULES,
            rewards=ROLLOUT_REWARDS,
            cache_across_turns=cached,
        )
        torch.manual_seed(11)
        outs.append(rollout(prompts, trainer))
        if cached:
            work = rollout.cache_work
            assert work is not None and work["sampled"] > 0
            # Each row's first prompt is read once per distinct prompt, then only new ids.
            whole = sum(
                len(p) + len(c)
                for p, c in zip(outs[0]["prompt_ids"], outs[0]["completion_ids"], strict=True)
            )
            assert work["read"] < whole
        else:
            assert rollout.cache_work is None
    assert outs[0]["completion_ids"] == outs[1]["completion_ids"]
    assert outs[0]["dealgym_outcome"] == outs[1]["dealgym_outcome"]
