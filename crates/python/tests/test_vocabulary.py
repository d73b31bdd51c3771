"""One vocabulary across every Python face (issue 43, item 5): a seat is named by its role
(``first_mover``, an outcome's ``by``, every per-seat dict), and agreed terms are the dict a
seat's state gives. The record keeps its own shape on disk (seat words, positional terms):
``record()`` is that line, ``outcome`` and ``outcome_for`` are the faces' view of it."""

from __future__ import annotations

import pytest

import dealgym
from conftest import FAMILIES, REPO, offer, turn
from dealgym import Game

#: Regulation off, so an ACCEPT always stands.
FREE = {"regulate_learner": False, "regulate_opponent": False}


@pytest.mark.parametrize("family", FAMILIES)
def test_first_mover_takes_a_role_and_that_role_moves_first(family):
    a, b = dealgym.roles(family)
    for learner in (a, b):
        for first in (a, b):
            g = Game(family, seed=3, learner_role=learner, first_mover=first)
            assert g.to_move == first, (learner, first)


def test_first_mover_is_the_role_whoever_the_seed_seats_as_learner():
    # CaSiNo draws the learner's role from the seed.
    learners = set()
    for seed in range(12):
        g = Game("casino", seed=seed, first_mover="agent_2")
        assert g.to_move == "agent_2"
        learners.add(g.learner_role)
    assert learners == {"agent_1", "agent_2"}


def test_a_first_mover_by_role_is_recorded_as_the_seat_it_gives():
    """The record keeps its seat words: a role that moves first is the seat it sits in."""
    for learner, first, seat in [
        ("agent_1", "agent_1", "learner"),
        ("agent_1", "agent_2", "opponent"),
        ("agent_2", "agent_1", "opponent"),
    ]:
        g = Game("casino", seed=5, learner_role=learner, first_mover=first)
        g.step(turn("[WALK_AWAY]"))
        assert g.record()["setup"]["first_mover"] == seat


@pytest.mark.parametrize("word", ["learner", "opponent", "random"])
def test_a_seat_word_for_first_mover_is_refused_naming_the_roles(word):
    with pytest.raises(dealgym.ScenarioError, match=r"agent_1 or agent_2.*not `%s`" % word):
        Game("casino", first_mover=word)


def test_an_unknown_first_mover_or_one_set_in_rules_is_refused_saying_what_to_pass():
    with pytest.raises(dealgym.ScenarioError, match="first_mover: unknown role `wizard`.*buyer or seller"):
        Game("craigslist", first_mover="wizard")
    with pytest.raises(dealgym.ScenarioError, match="first_mover=ROLE"):
        Game("casino", rules={"first_mover": "learner"})


def test_every_face_takes_first_mover_as_a_role():
    pytest.importorskip("pettingzoo")
    pytest.importorskip("gymnasium")
    from dealgym.gym import DealEnv
    from dealgym.pettingzoo import DealAECEnv

    env = DealAECEnv("craigslist", first_mover="seller")
    env.reset(seed=1)
    assert env.agent_selection == "seller"
    env.reset(seed=1, options={"first_mover": "buyer"})
    assert env.agent_selection == "buyer"
    with pytest.raises(dealgym.ScenarioError, match="buyer or seller"):
        env.reset(seed=1, options={"first_mover": "opponent"})

    gym = DealEnv("craigslist", role="buyer")
    gym.reset(seed=1, options={"first_mover": "seller"})
    assert gym.game.transcript()[0][0] == "seller", "the opponent (seller) opened"
    gym.reset(seed=1, options={"first_mover": "buyer"})
    assert gym.game.transcript() == []

    openenv = pytest.importorskip("dealgym.openenv")
    seen = openenv.DealEnvironment("craigslist").reset(seed=1, first_mover="seller")
    assert seen.to_move == "seller"


def deal(family: str = "casino", learner: str = "agent_2") -> Game:
    """A deal the opponent's role proposes and the learner's accepts."""
    a, b = dealgym.roles(family)
    first = a if learner == b else b
    g = Game(family, seed=1, learner_role=learner, first_mover=first, rules=FREE)
    g.step(turn(offer(g.observe(first)["state"])))
    g.step(turn("[ACCEPT_DEAL]"))
    assert g.outcome["kind"] == "deal", g.outcome
    return g


def test_an_outcome_names_roles_and_its_terms_are_the_states_dict():
    g = deal("casino", learner="agent_2")
    out = g.outcome
    assert out["by"] == "agent_2", "the accepting role"
    assert set(out["utility"]) == set(out["rho"]) == set(out["metrics"]["seats"]) == {"agent_1", "agent_2"}
    assert out["terms"] == g.outcome_for("agent_2")["terms"], "from the learner's side"
    assert isinstance(out["terms"], dict) and set(out["terms"]) == {"food", "water", "firewood"}
    assert out["utility"]["agent_2"] == g.outcome_for("agent_2")["utility"]
    assert g.outcome_for("agent_1")["by"] == "agent_2"
    # The record keeps the shape it has on disk.
    kept = g.record()["outcome"]
    assert kept["by"] == "learner"
    assert set(kept["utility"]) == {"learner", "opponent"}
    assert list(kept["terms"]) == ["items"] and isinstance(kept["terms"]["items"], list)


def test_a_tables_outcome_names_the_role_that_ended_it():
    g = Game("deliberation", scenario_file=REPO / "tests/fixtures/table/six_party.jsonl", seed=2)
    while not g.done:
        g.step(turn("[WALK_AWAY]"), role=g.to_move)
    out = g.outcome
    if out.get("by") is not None:
        assert out["by"] in g.roles
        assert g.outcome_for(g.roles[0])["by"] == out["by"]
    assert isinstance(g.record()["outcome"].get("by", 0), int)


def test_info_outcome_is_the_same_dict_in_the_two_party_and_the_table_env():
    pytest.importorskip("pettingzoo")
    from dealgym.pettingzoo import DealAECEnv

    shapes = []
    for env in (
        DealAECEnv("casino"),
        DealAECEnv("deliberation", scenario_file=REPO / "tests/fixtures/table/six_party.jsonl"),
    ):
        env.reset(seed=2)
        for agent in env.agent_iter():
            _, _, terminated, truncated, info = env.last()
            if terminated or truncated:
                outcome = info["outcome"]
                assert isinstance(outcome, dict), outcome
                assert outcome["by"] is None or outcome["by"] in env.possible_agents
                shapes.append({"kind", "by", "utility", "rho"} <= set(outcome))
                env.step(None)
                continue
            env.step(turn("[WALK_AWAY]"))
    assert shapes and all(shapes)
