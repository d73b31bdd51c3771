"""Planner hooks from Python: a snapshot restored and played with the same completion gives the
same turns and the same answer of the built-in opponent; the state text is deterministic and the
seat's own; a callable value model commits the candidate the engine's rule picks."""

from __future__ import annotations

import pytest

from dealgym import Game, choose
from dealgym.planner import commit


def turn(action: str) -> str:
    return f"Thought: t\nTalk: here is my offer\nAction: {action}"


def test_a_restored_snapshot_replays_a_candidate_against_the_same_opponent_draw():
    game = Game("craigslist", seed=3, first_mover="buyer", opponent="rule:boulware")
    role = game.to_move
    root = game.snapshot()
    game.step(turn("[SUBMIT_DEAL] price:50"))
    first = game.transcript()
    game.restore(root)
    assert game.transcript() == []
    game.step(turn("[SUBMIT_DEAL] price:80"))
    assert game.transcript() != first
    game.restore(root)
    game.step(turn("[SUBMIT_DEAL] price:50"))
    assert game.transcript() == first
    assert game.state_text(role) == game.state_text(role)
    assert game.state_text(role).startswith("State: {")


def test_a_value_callable_commits_the_highest_value_and_the_first_of_equals():
    assert choose([0.1, 0.9, 0.9]) == 1
    with pytest.raises(ValueError):
        choose([])
    game = Game("craigslist", seed=3, first_mover="buyer", opponent="rule:boulware")
    candidates = [turn("[SUBMIT_DEAL] price:90"), turn("[SUBMIT_DEAL] price:60")]
    info, chosen, values = commit(game, candidates, value=lambda state, c: float("60" in c))
    assert (chosen, values) == (1, [0.0, 1.0])
    assert info.played == "submit"


def test_a_role_asked_for_act_labels_is_held_to_the_catalog_and_the_opponent_labels_too():
    game = Game(
        "craigslist",
        seed=3,
        first_mover="buyer",
        opponent="rule:linear",
        rules={"learner_acts": True, "opponent_acts": True},
    )
    role = game.to_move
    assert "#counter-price" in game.observe(role)["messages"][0]["content"]
    assert game.step(turn("[SUBMIT_DEAL] price:50 #haggle")).retry
    info = game.step(turn("[SUBMIT_DEAL] price:50 #init-price"))
    assert info.played == "submit" and not info.retry
    assert all(t["act"] for t in _turns(game)), "every move is labelled, the opponent's too"
    tools = game.tools(role)
    assert all("act" in t["function"]["parameters"]["properties"] for t in tools)


def _turns(game: Game) -> list[dict]:
    snap = game.snapshot()
    while not game.done:
        game.step(turn("[WALK_AWAY] #disagree"))
    turns = [t for t in game.record()["turns"] if t.get("played")]
    game.restore(snap)
    return turns
