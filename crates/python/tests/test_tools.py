"""A seat that acts through tools: the tool definitions carry the scenario's own terms, the
calls a chat endpoint returns are played as the seat's move, and a malformed call gets the
malformed-turn policy."""

from __future__ import annotations

import json

import pytest
from dealgym import Game

TOOLS = {"learner_format": "tools"}


def tools_game(family: str, seed: int) -> Game:
    """The learner acting through tools, and opening: its role (the seed's) moves first."""
    learner = Game(family, seed=seed).learner_role
    return Game(family, seed=seed, learner_role=learner, first_mover=learner, rules=TOOLS)


def call(name, **arguments):
    return {"id": f"call_{name}", "type": "function", "function": {"name": name, "arguments": json.dumps(arguments)}}


def test_the_tools_carry_the_scenarios_terms_and_a_call_is_the_seats_move():
    g = tools_game("casino", 2)
    mover = g.to_move
    tools = g.tools(mover)
    assert [t["function"]["name"] for t in tools] == ["make_offer", "accept", "reject", "walk_away", "say"]
    terms = tools[0]["function"]["parameters"]["properties"]["terms"]
    assert set(terms["required"]) == {"food", "water", "firewood"}
    assert "make_offer(terms, message)" in g.observe(mover)["messages"][0]["content"]
    # Arguments as JSON text (as the OpenAI API gives them) or as a dict.
    g.step({"tool_calls": [call("make_offer", terms={"food": 3, "water": 2, "firewood": 0}, message="Mine?")]})
    other = g.to_move
    assert g.observe(other)["state"]["standing_offer"]["terms"] == {"food": 0, "water": 1, "firewood": 3}
    g.step("Thought: fine\nTalk: ok\nAction: [ACCEPT_DEAL]")
    record = g.record()
    assert record["outcome"]["kind"] == "deal"
    assert record["setup"]["seats"]["learner"]["format"] == "tools"
    assert record["turns"][0]["tool_calls"][0]["function"]["name"] == "make_offer"
    dict_args = tools_game("ahp", 1)
    dict_args.step({"tool_calls": [{"function": {"name": "make_offer", "arguments": {"terms": {"price": 10}}}}]})
    assert dict_args.observe(dict_args.to_move)["state"]["standing_offer"]["terms"] == {"price": 10.0}


@pytest.mark.parametrize(
    "calls",
    [
        [call("haggle")],
        [call("make_offer")],
        [call("accept", terms={})],
        [call("make_offer", terms={"price": -1})],
        [call("accept")],
        [call("accept"), call("walk_away")],
    ],
)
def test_a_malformed_call_is_corrected_then_forfeits(calls):
    g = tools_game("ahp", 4)
    mover = g.to_move
    g.step({"tool_calls": calls})
    assert g.to_move == mover and not g.done
    assert g.observe(mover)["state"]["last_turn"]["error"] is not None
    g.step({"tool_calls": calls})
    assert g.outcome["kind"] == "format_forfeit"


def test_a_call_that_is_not_a_call_is_refused_before_it_is_played():
    g = tools_game("ahp", 4)
    with pytest.raises(TypeError, match="tool_calls"):
        g.step({"tool_calls": ["accept"]})
    with pytest.raises(TypeError, match="tool_calls"):
        g.step({"tool_calls": "accept"})
    assert g.observe(g.to_move)["state"]["turns"]["attempts"] == 0
    # A dict in any shape a model or client sends is a call; what is wrong with it is the
    # seat's malformed turn (here: nothing on the table to accept).
    g.step({"tool_calls": [{"name": "accept"}]})
    assert g.observe(g.to_move)["state"]["last_turn"]["error"]["kind"] == "illegal"
