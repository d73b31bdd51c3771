"""Bad input is a Python exception that names what is wrong, never a crash."""

from __future__ import annotations

import pytest

import dealgym
from conftest import turn
from dealgym import Game


def test_an_unknown_family_names_the_known_ones():
    with pytest.raises(dealgym.ScenarioError, match="casino"):
        Game("poker")


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
    ["x" * (1 << 20), "\u0000\ud7ff\ue000\U0010ffff" * 100, "Action: [SUBMIT_DEAL] " + "9" * 400],
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
