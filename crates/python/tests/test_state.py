"""The structured state beside the chat: the observer's side of the offer, its own values and
never the other side's, the legal moves, and the ending as the record has it."""

from __future__ import annotations

import pytest
from conftest import FAMILIES, offer, turn
from dealgym import Game

FREE = {"regulate_learner": False, "regulate_opponent": False}


def test_an_items_offer_is_seen_flipped_by_the_receiver_and_accept_becomes_legal():
    g = Game("casino", seed=3, rules=FREE)
    mover = g.to_move
    other = next(r for r in g.roles if r != mover)
    state = g.observe(mover)["state"]
    assert "ACCEPT" not in " ".join(state["legal_actions"]).upper()
    g.step(turn(offer(state)))
    seen = g.observe(other)["state"]
    counts = {i["name"]: i["count"] for i in seen["public"]["items"]}
    # The mover asked for everything: the receiver is offered none of it.
    assert seen["standing_offer"]["terms"] == {name: 0 for name in counts}
    assert seen["standing_offer"]["by"] == mover
    assert seen["counterpart_last"]["terms"] == {name: 0 for name in counts}
    assert any("accept" in a for a in seen["legal_actions"])
    g.step(turn("[ACCEPT_DEAL]"))
    record = g.record()
    for role in g.roles:
        end = g.observe(role)["state"]["outcome"]
        seat = "learner" if role == record["seats"]["learner"]["role"] else "opponent"
        assert end["utility"] == record["outcome"]["utility"][seat]
        assert end["rho"] == record["outcome"]["rho"][seat]


def test_a_seat_sees_its_own_private_values_and_never_the_other_sides():
    g = Game("ahp", seed=5)
    states = {r: g.observe(r)["state"] for r in g.roles}
    assert states["buyer"]["own"].keys() == {"kind", "budget"}
    assert states["seller"]["own"].keys() == {"kind", "cost"}
    for role, state in states.items():
        other = next(r for r in g.roles if r != role)
        hidden = str(states[other]["own"].get("budget", states[other]["own"].get("cost")))
        assert hidden not in str(state["own"]), role


def test_prices_are_in_currency_units_and_turns_add_up():
    g = Game("craigslist", seed=8, rules=FREE)
    mover = g.to_move
    state = g.observe(mover)["state"]
    listing = state["public"]["listing_price"]
    assert isinstance(listing, float) and listing > 1.0
    g.step(turn(offer(state)))
    other = next(r for r in g.roles if r != mover)
    seen = g.observe(other)["state"]
    assert abs(seen["standing_offer"]["terms"]["price"] - round(listing * 0.6, 2)) < 0.006
    assert g.observe(mover)["state"]["turns"]["moves_used"] == 1
    left = seen["turns"]["moves_left"]
    g.step(turn(offer(seen)))
    assert g.observe(other)["state"]["turns"]["moves_left"] == left - 1


def flipped(terms: dict, public: dict) -> dict:
    """An offer's terms from the other side: items are split, prices and issues shared."""
    counts = {i["name"]: i["count"] for i in public.get("items", [])}
    return {k: counts[k] - v if k in counts else v for k, v in terms.items()}


@pytest.mark.parametrize("family", FAMILIES)
def test_the_state_follows_the_record_turn_by_turn(family):
    """Each family played to its end by alternating offers: after every step, the state's own
    last move, the standing offer on both sides, the counterpart's move and the moves used
    match the record's turns."""
    g = Game(family, seed=12, rules=FREE)
    moves = {r: 0 for r in g.roles}
    while not g.done:
        mover = g.to_move
        other = next(r for r in g.roles if r != mover)
        state = g.observe(mover)["state"]
        g.step(turn(offer(state, greedy=moves[mover] % 2 == 0)))
        moves[mover] += 1
        if g.done:
            break
        mine, theirs = g.observe(mover)["state"], g.observe(other)["state"]
        played = mine["last_turn"]["played"]
        assert mine["last_turn"]["read"] == played and mine["last_turn"]["format_ok"]
        assert played["kind"] == "submit"
        assert mine["standing_offer"] == {"by": mover, "terms": played["terms"]}
        expected = flipped(played["terms"], state["public"])
        assert theirs["standing_offer"] == {"by": mover, "terms": expected}
        assert theirs["counterpart_last"] == {"kind": "submit", "terms": expected}
        assert mine["turns"]["moves_used"] == moves[mover]
    record = g.record()
    seat_of = {record["seats"][s]["role"]: s for s in ("learner", "opponent")}
    for role in g.roles:
        turns = [t for t in record["turns"] if t["seat"] == seat_of[role]]
        assert len(turns) == moves[role]
        end = g.observe(role)["state"]
        assert end["turns"]["moves_used"] == moves[role]
        assert end["outcome"]["kind"] == record["outcome"]["kind"]
        assert end["outcome"]["utility"] == record["outcome"]["utility"][seat_of[role]]


def test_a_seat_reads_its_own_offer_back_in_currency_units():
    g = Game("craigslist", seed=8, rules=FREE)
    mover = g.to_move
    g.step(turn("[SUBMIT_DEAL] price:1234.56"))
    last = g.observe(mover)["state"]["last_turn"]
    assert last["read"] == {"kind": "submit", "terms": {"price": 1234.56}}
    assert last["played"] == last["read"]
    assert last["thought"] == "Thinking." and last["talk"] == "Let us see."
