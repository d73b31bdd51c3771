"""Stepping many games in one call gives what stepping them one by one gives."""

from __future__ import annotations

import asyncio
import time
import json

import pytest

from conftest import FAMILIES, GARBAGE, offer, turn
from dealgym import Game, step_many
from dealgym.batch import astep_many


def games(n: int) -> list[Game]:
    return [Game(FAMILIES[i % len(FAMILIES)], seed=i) for i in range(n)]


def script(game: Game, k: int) -> str:
    """A reply that depends on the game's state: offers, then a walk-away."""
    if k >= 3:
        return turn("[WALK_AWAY]")
    if k == 1:
        return GARBAGE
    return turn(offer(game.observe(game.to_move)["state"], greedy=k == 0))


def records(gs: list[Game]) -> list[str]:
    out = []
    for g in gs:
        r = g.record()
        r.pop("timing")
        out.append(json.dumps(r))
    return out


def test_a_batch_steps_each_game_as_one_step_would():
    one, many = games(64), games(64)
    for k in range(4):
        for g in one:
            if not g.done:
                g.step(script(g, k))
        live = [g for g in many if not g.done]
        infos = step_many(live, [script(g, k) for g in live])
        assert [i.done for i in infos] == [g.done for g in live]
    assert all(g.done for g in one) and all(g.done for g in many)
    assert records(one) == records(many)


def test_a_bad_action_in_a_batch_steps_no_game():
    gs = games(4)
    before = [g.observe(g.to_move) for g in gs]
    with pytest.raises(TypeError):
        step_many(gs, [turn("[WALK_AWAY]")] * 3 + [7])
    assert [g.observe(g.to_move) for g in gs] == before
    with pytest.raises(ValueError):
        step_many(gs, [turn("[WALK_AWAY]")] * 3)


def test_the_async_batch_awaits_the_same_steps():
    gs = games(8)
    infos = asyncio.run(astep_many(gs, [turn("[WALK_AWAY]")] * len(gs)))
    assert all(i.done and i.outcome == "walk_away" for i in infos)


def test_python_threads_run_while_a_batch_steps():
    """The engine steps a batch with the interpreter's lock released: a Python thread keeps
    running during the call (one holding the lock would not run at all until it returned)."""
    import threading

    gs = [Game("casino", seed=i) for i in range(4096)]
    actions = [turn(offer(g.observe(g.to_move)["state"])) for g in gs]
    in_call = threading.Event()
    stop = threading.Event()
    seen_in_call = []

    def watch():
        while not stop.is_set():
            if in_call.is_set():
                seen_in_call.append(1)
            time.sleep(0.0005)

    watcher = threading.Thread(target=watch)
    watcher.start()
    try:
        in_call.set()
        step_many(gs, actions)
        in_call.clear()
    finally:
        stop.set()
        watcher.join()
    assert len(seen_in_call) >= 3, len(seen_in_call)
