"""Seeds per env: the same seed gives the same episode; global random state changes nothing."""

from __future__ import annotations

import json
import random

from conftest import FAMILIES, GARBAGE, turn
from dealgym import Game
from dealgym.pettingzoo import DealAECEnv


def play(game: Game) -> dict:
    game.step(GARBAGE)
    game.step(turn("[WALK_AWAY]"))
    record = game.record()
    record.pop("timing")
    return record


def test_the_same_seed_gives_the_same_record_whatever_the_global_rng():
    for family in FAMILIES:
        random.seed(1)
        a = play(Game(family, seed=7))
        random.seed(2)
        b = play(Game(family, seed=7))
        assert json.dumps(a) == json.dumps(b), family


def test_another_seed_gives_another_episode():
    prompts = set()
    for seed in range(8):
        g = Game("casino", seed=seed)
        prompts.add(g.observe(g.roles[0])["messages"][0]["content"])
    assert len(prompts) > 1


def test_an_env_reset_with_a_seed_repeats_and_an_unseeded_one_does_not_touch_global_random():
    env = DealAECEnv("dnd")
    env.reset(seed=11)
    first = env.observe(env.agent_selection)
    env.reset(seed=11)
    assert env.observe(env.agent_selection) == first
    state = random.getstate()
    env.reset()
    assert random.getstate() == state


def test_unseeded_resets_follow_the_last_seed_and_no_two_seeds_share_them():
    from dealgym._options import SeedSequence

    a, b = SeedSequence(), SeedSequence()
    a.seeded(5)
    b.seeded(5)
    assert [a.next() for _ in range(4)] == [b.next() for _ in range(4)]
    # Seeds that agree modulo 2**61 - 1 (Python's int hash) still give their own sequences.
    b.seeded(2**61 - 1 + 5)
    a.seeded(5)
    assert a.next() != b.next()
    assert all(0 <= a.next() < 2**63 for _ in range(100))
