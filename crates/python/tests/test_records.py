"""Episodes played from Python are the records the CLI reads: `replay --verify` passes on them."""

from __future__ import annotations

import json

from conftest import FAMILIES, GARBAGE, offer, turn
from dealgym import Game, RecordWriter

FREE = {"regulate_learner": False, "regulate_opponent": False}

#: Each ending: the rules it is played under, and the completion of move k by `role` (the first
#: mover is `first`).
ENDINGS = {
    "deal": (FREE, lambda role, first, s, k: turn(offer(s) if k == 0 else "[ACCEPT_DEAL]")),
    "walk_away": ({}, lambda role, first, s, k: turn("[WALK_AWAY]")),
    "reject_loop": (
        {**FREE, "reject_loop": 3},
        lambda role, first, s, k: turn(offer(s, greedy=role == first or k % 4 == 1)),
    ),
    "max_turns": (
        {**FREE, "max_rounds": 2, "reject_loop": 0, "reject_streak": 0},
        lambda role, first, s, k: turn(offer(s, greedy=k % 4 < 2)),
    ),
    "format_forfeit": ({"format_retries": 1}, lambda role, first, s, k: GARBAGE),
}


def play_to(family: str, ending: str, seed: int) -> Game:
    rules, move = ENDINGS[ending]
    game = Game(family, seed=seed, rules=rules)
    first = game.to_move
    k = 0
    while not game.done:
        role = game.to_move
        game.step(move(role, first, game.observe(role)["state"], k), role=role)
        k += 1
    assert game.outcome["kind"] == ending, (family, ending, game.outcome)
    return game


def test_every_family_and_ending_written_from_python_passes_replay_verify(
    tmp_path, replay_verify
):
    path = tmp_path / "endings.jsonl"
    with RecordWriter(str(path)) as writer:
        for i, family in enumerate(FAMILIES):
            for j, ending in enumerate(ENDINGS):
                writer.write(play_to(family, ending, seed=10 * i + j))
    assert writer.written == len(FAMILIES) * len(ENDINGS)
    out = replay_verify(path)
    assert f"{len(FAMILIES) * len(ENDINGS)} episodes" in out, out


def test_records_written_from_python_pass_replay_verify(tmp_path, replay_verify):
    path = tmp_path / "python.jsonl"
    with RecordWriter(str(path)) as writer:
        for i, family in enumerate(FAMILIES):
            walk = Game(family, seed=i)
            walk.step(GARBAGE)
            walk.step(turn("[WALK_AWAY]", talk="I will look elsewhere."))
            writer.write(walk)
            forfeit = Game(family, seed=100 + i, rules={"format_retries": 0})
            forfeit.step(GARBAGE)
            writer.write(forfeit)
        assert writer.written == 2 * len(FAMILIES)
    lines = path.read_text().splitlines()
    assert len(lines) == 2 * len(FAMILIES)
    kinds = sorted(json.loads(line)["outcome"]["kind"] for line in lines)
    assert kinds == sorted(["walk_away", "format_forfeit"] * len(FAMILIES))
    replay_verify(path)


def test_the_record_is_the_games_own_and_its_json_the_same():
    g = Game("job_interview", seed=9)
    g.step(turn("[WALK_AWAY]"))
    record = g.record()
    assert record == json.loads(g.record_json())
    assert record["outcome"]["kind"] == "walk_away"
    assert record["outcome"]["by"] in ("learner", "opponent")
    assert record["scenario_id"] == g.scenario_id
    assert set(g.rewards) == set(g.roles)
