"""Bad input is a Python exception that names what is wrong, never a crash."""

from __future__ import annotations

import pytest

import dealgym
from conftest import REPO, turn
from dealgym import Game


def test_an_unknown_family_names_the_known_ones():
    with pytest.raises(dealgym.ScenarioError, match="casino"):
        Game("poker")


def test_a_market_plays_and_a_market_file_read_as_a_table_is_refused_naming_the_family():
    # Issue 45: the package plays markets (test_market.py); a market file given to a table is
    # named as one, and the two-party catalog says where a market's roles are.
    game = Game("market", seed=1)
    assert game.family == "market" and game.to_move in game.roles
    with pytest.raises(dealgym.ScenarioError, match=r'holds markets.*Game\("market"'):
        Game("deliberation", scenario_file=REPO / "scenarios" / "market.jsonl")
    with pytest.raises(dealgym.ScenarioError, match=r'Game\("market"'):
        dealgym.roles("market")


def test_an_unknown_role_scenario_or_index_is_refused():
    with pytest.raises(dealgym.ScenarioError, match="role"):
        Game("ahp", learner_role="wizard")
    with pytest.raises(dealgym.ScenarioError, match="no-such-id"):
        Game("casino", scenario_id="no-such-id")
    with pytest.raises(dealgym.ScenarioError):
        Game("dnd", index=10**9)


def test_a_step_by_the_wrong_role_is_refused_and_changes_nothing():
    g = Game("ahp", seed=2)
    other = next(r for r in g.roles if r != g.to_move)
    before = g.observe(g.to_move)
    with pytest.raises(dealgym.NotYourTurnError, match=other):
        g.step(turn("[WALK_AWAY]"), role=other)
    assert g.observe(g.to_move) == before


def test_a_step_after_the_end_is_refused():
    g = Game("casino", seed=2)
    g.step(turn("[WALK_AWAY]"))
    assert g.done
    with pytest.raises(dealgym.EpisodeEndedError):
        g.step(turn("[WALK_AWAY]"))


@pytest.mark.parametrize("action", [1, None, b"bytes", ["a list"], 2.5])
def test_an_action_that_is_not_text_is_a_type_error(action):
    g = Game("casino", seed=2)
    with pytest.raises(TypeError):
        g.step(action)
    assert not g.done


def test_a_dict_action_needs_its_text():
    g = Game("casino", seed=2)
    with pytest.raises((TypeError, ValueError), match="text"):
        g.step({"message": "hello"})


@pytest.mark.parametrize(
    "text",
    ["x" * ((1 << 20) - 1000), "\u0000\ud7ff\ue000\U0010ffff" * 100, "Action: [SUBMIT_DEAL] " + "9" * 400],
)
def test_huge_or_odd_completions_are_turns_not_crashes(text):
    g = Game("craigslist", seed=4)
    info = g.step(text)
    assert info.retry or info.done


@pytest.mark.parametrize("seed", [-1, 2**64, "seven", 1.5])
def test_a_seed_that_is_no_unsigned_64_bit_integer_is_named(seed):
    with pytest.raises(ValueError, match="seed"):
        Game("casino", seed=seed)


def test_arguments_out_of_range_name_themselves():
    with pytest.raises(ValueError, match="index"):
        Game("casino", index=-1)
    with pytest.raises(ValueError, match="member"):
        Game("casino", member=-3)
    with pytest.raises(TypeError, match="players"):
        Game("casino", players={"agent_1": 5})
    g = Game("casino", seed=1)
    with pytest.raises(TypeError, match="`full`"):
        g.set_prompt_ids(g.to_move, [-1])


def test_a_step_that_names_two_roles_is_refused():
    g = Game("casino", seed=1)
    mover = g.to_move
    other = next(r for r in g.roles if r != mover)
    with pytest.raises(ValueError, match="name one"):
        g.step({"text": turn("[REJECT_DEAL]"), "role": other}, role=mover)
    # None for a token-exact key is the key left out, as for reasoning.
    info = g.step({"text": turn("[REJECT_DEAL]"), "completion_ids": None}, role=mover)
    assert info.played == "reject"


def test_a_setting_that_is_not_a_finite_number_is_refused_not_defaulted():
    with pytest.raises(ValueError, match="rules.no_deal_value must be a finite number"):
        Game("casino", rules={"no_deal_value": float("nan")})
    with pytest.raises(ValueError, match="finite"):
        Game("casino", rules={"no_deal_value": float("inf")})


# The environments' own errors (issue 43, item 6): a step or an observation before reset(), and
# a step once every agent is done, raise dealgym's typed errors saying what to do.

TABLE_FIXTURE = REPO / "tests/fixtures/table/six_party.jsonl"


def aec(family: str):
    pytest.importorskip("pettingzoo")
    from dealgym.pettingzoo import DealAECEnv

    if family == "deliberation":
        return DealAECEnv(family, scenario_file=TABLE_FIXTURE)
    return DealAECEnv(family)


@pytest.mark.parametrize("family", ["casino", "deliberation", "market"])
def test_an_aec_env_used_before_reset_says_to_call_reset(family):
    env = aec(family)
    agent = env.possible_agents[0]
    for use in (lambda: env.step(turn("[TALK]")), env.last, lambda: env.observe(agent)):
        with pytest.raises(dealgym.ResetNeededError, match=r"reset\(\)"):
            use()
    assert issubclass(dealgym.ResetNeededError, RuntimeError)
    # What reset() sets is still "no such attribute yet" to Python's own probes.
    assert not hasattr(env, "agent_selection")
    assert getattr(env, "rewards", None) is None


@pytest.mark.parametrize("family", ["casino", "deliberation", "market"])
def test_an_aec_env_stepped_after_every_agent_is_done_says_how_it_ended(family):
    env = aec(family)
    env.reset(seed=2)
    for _ in env.agent_iter():
        _, _, terminated, truncated, _ = env.last()
        env.step(None if terminated or truncated else turn("[WALK_AWAY]"))
    assert not env.agents
    with pytest.raises(dealgym.EpisodeEndedError, match=r"every agent is done.*reset\(\)"):
        env.step(turn("[TALK]"))


def test_a_gym_env_used_before_reset_or_after_the_end_says_what_to_do():
    pytest.importorskip("gymnasium")
    from dealgym.gym import DealEnv

    env = DealEnv("casino")
    with pytest.raises(dealgym.ResetNeededError, match=r"reset\(\)"):
        env.step(turn("[WALK_AWAY]"))
    env.reset(seed=1, options={"role": "agent_1", "first_mover": "agent_1"})
    *_, terminated, _, _ = env.step(turn("[WALK_AWAY]"))
    assert terminated
    with pytest.raises(dealgym.EpisodeEndedError, match=r"walk_away.*reset\(\)"):
        env.step(turn("[WALK_AWAY]"))


def test_an_openenv_environment_stepped_before_reset_says_to_call_reset():
    pytest.importorskip("openenv")
    from dealgym.openenv import DealAction, DealEnvironment

    with pytest.raises(dealgym.ResetNeededError, match=r"reset\(\)"):
        DealEnvironment().step(DealAction(message=turn("[WALK_AWAY]")))


# One limit on a completion (issue 43, item 7): the engine's, read by a step in process, by the
# action space and by `dealgym serve` (tests/serve_store.rs).


def test_a_completion_past_the_one_limit_is_refused_naming_it_and_changes_nothing():
    limit = dealgym.MAX_COMPLETION_BYTES
    assert limit == 1 << 20
    g = Game("craigslist", seed=4)
    before = g.observe(g.to_move)
    huge = turn("[REJECT_DEAL]", talk="x" * (10 * limit))
    with pytest.raises(dealgym.CompletionTooLargeError, match=f"limit of {limit} bytes"):
        g.step(huge)
    with pytest.raises(dealgym.CompletionTooLargeError, match=str(limit)):
        g.step({"text": "ok", "reasoning": "y" * limit})
    assert g.observe(g.to_move) == before, "nothing was played"
    # Within it, the completion is a turn; the other seat is sent its Talk.
    info = g.step(turn("[REJECT_DEAL]", talk="x" * (limit - 1000)))
    assert not info.retry


def test_the_action_space_admits_what_a_step_takes_and_nothing_past_the_limit():
    pytest.importorskip("gymnasium")
    from dealgym.spaces import action_space

    space = action_space()
    limit = dealgym.MAX_COMPLETION_BYTES
    assert space.max_length == limit
    assert space.contains("x" * (limit - 100))
    assert not space.contains("x" * limit), "the record's JSON adds its key and quotes"
    assert not space.contains("\u0001" * (limit // 2)), "an escaped control character is 6 bytes"
    assert not space.contains({"text": "ok", "reasoning": "y" * limit})
    assert space.contains({"text": "ok", "completion_ids": [1, 2], "logprobs": [-0.1, -0.2]})
    assert not space.contains({"message": "no text"})
    assert not space.contains(3)
