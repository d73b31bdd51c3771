"""Episodes played from Python are the records the CLI reads: `replay --verify` passes on them."""

from __future__ import annotations

import json
import warnings

import pytest
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


def test_a_grpo_group_is_members_of_one_setup_and_a_file_refuses_an_episode_twice(tmp_path):
    group = [Game("casino", seed=7, member=k, opponent="rule:linear") for k in range(3)]
    setups = {json.dumps(g.observe(g.learner_role)["state"]["own"]) for g in group}
    assert len(setups) == 1, "one seed and scenario: one setup for the whole group"
    for g in group:
        while not g.done:
            g.step(turn("[WALK_AWAY]"))
    ids = [g.record()["episode_id"] for g in group]
    assert [i.split("-m")[1] for i in ids] == ["0", "1", "2"]
    assert len({g.record()["group_id"] for g in group}) == 1
    path = tmp_path / "group.jsonl"
    with RecordWriter(path) as out:
        for g in group:
            out.write(g)
        again = Game("casino", seed=7, member=1, opponent="rule:linear")
        while not again.done:
            again.step(turn("[WALK_AWAY]"))
        with pytest.raises(ValueError, match="member"):
            out.write(again)
    # Reopened, the file still knows what it holds.
    with RecordWriter(path) as out, pytest.raises(ValueError, match="already"):
        out.write(group[0])
    assert len(path.read_text().splitlines()) == 3


def test_a_writer_keeps_a_whole_last_line_and_says_where_it_cut_a_torn_one(tmp_path):
    """Before, appending to a file whose last line a crash had cut off cut that line silently."""
    walk = Game("casino", seed=3)
    walk.step(turn("[WALK_AWAY]"))
    line = walk.record_json().encode()
    # A whole last record without its newline is kept (and given its newline), said nowhere.
    whole = tmp_path / "whole.jsonl"
    whole.write_bytes(line)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        RecordWriter(whole).close()
    assert whole.read_bytes() == line + b"\n"
    # A torn last line is cut, and the cut is said: the file, the byte offset and the bytes.
    torn = tmp_path / "torn.jsonl"
    torn.write_bytes(line + b"\n" + line[:100])
    with pytest.warns(RuntimeWarning) as said:
        RecordWriter(torn).close()
    message = str(said[0].message)
    assert str(torn) in message, message
    assert f"byte offset {len(line) + 1}" in message, message
    assert "100 bytes" in message, message
    assert torn.read_bytes() == line + b"\n"


@pytest.mark.parametrize("family", FAMILIES)
def test_rewards_before_the_record_is_built_are_the_records(family):
    """`rewards` is computed without building the record (built on first use): the same
    function, the same totals, under a reward table with per-turn signals."""
    table = {"weights": {"terminal": 1.0, "format": 0.5, "points": 0.2}}
    g = Game(family, seed=3, rewards=table, opponent="rule:boulware")
    while not g.done:
        g.step(turn(offer(g.state(g.to_move))))
    early = g.rewards
    record = g.record()
    for seat in ("learner", "opponent"):
        assert early[record["seats"][seat]["role"]] == record["rewards"][seat]


def test_a_games_training_step_is_checked_and_reaches_its_record():
    g = Game("casino", index=0, opponent="rule:linear", training={"run": "a", "step": 3})
    assert g.training == {"run": "a", "step": 3}
    assert Game("casino", index=0).training is None
    # The run id made without one depends on it: two runs over the same seeds never share ids.
    other = Game("casino", index=0, opponent="rule:linear", training={"run": "b", "step": 3})
    assert g.run_id != other.run_id
    for bad, kind in [
        ({"run": "a"}, ValueError),
        ({"run": "", "step": 1}, ValueError),
        ({"run": "a", "step": -1}, ValueError),
        ({"run": "a", "step": 1, "lr": 0}, ValueError),
        ({"run": 3, "step": 1}, TypeError),
        (("a", 1), TypeError),
    ]:
        with pytest.raises(kind):
            Game("casino", index=0, training=bad)
    while not g.done:
        g.step("Thought: x\nTalk: Bye.\nAction: [WALK_AWAY]", role=g.to_move)
    assert g.record()["training"] == {"run": "a", "step": 3}


def ended(seed: int) -> Game:
    game = Game("casino", seed=seed, opponent="rule:linear")
    while not game.done:
        game.step(turn("[WALK_AWAY]"))
    return game


def test_a_writer_leaves_no_lock_file_once_closed_however_it_is_closed(tmp_path):
    """The core's one sidecar rule, as for the command line: ``F.lock`` names the writer while
    it holds the file, and goes when it lets go (``close()``, the ``with`` block's end, the
    writer dropped, the interpreter's exit)."""
    import subprocess
    import sys

    path = tmp_path / "closed.jsonl"
    lock = tmp_path / "closed.jsonl.lock"
    out = RecordWriter(path)
    assert lock.exists(), "held: the sidecar names the holder"
    out.write(ended(1))
    out.close()
    assert not lock.exists()
    with RecordWriter(path) as out:
        out.write(ended(2))
        assert lock.exists()
    assert not lock.exists()
    out = RecordWriter(path)
    del out
    assert not lock.exists()
    left_open = tmp_path / "exit.jsonl"
    script = (
        "import dealgym, sys\n"
        "g = dealgym.Game('casino', seed=3, opponent='rule:linear')\n"
        "while not g.done: g.step('Thought: x\\nTalk: bye\\nAction: [WALK_AWAY]')\n"
        "w = dealgym.RecordWriter(sys.argv[1]); w.write(g)\n"
    )
    subprocess.run([sys.executable, "-c", script, str(left_open)], check=True)
    assert len(left_open.read_text().splitlines()) == 1
    assert not (tmp_path / "exit.jsonl.lock").exists()
    assert len(path.read_text().splitlines()) == 2


def test_a_writer_makes_the_folders_its_file_is_in(tmp_path):
    path = tmp_path / "runs" / "today" / "out.jsonl"
    with RecordWriter(path) as out:
        out.write(ended(4))
    assert path.read_text().count("\n") == 1
    assert sorted(p.name for p in path.parent.iterdir()) == ["out.jsonl"]
