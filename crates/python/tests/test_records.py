"""Episodes played from Python are the records the CLI reads: `replay --verify` passes on them."""

from __future__ import annotations

import json
import subprocess

from conftest import FAMILIES, GARBAGE, turn
from dealgym import Game, RecordWriter


def test_records_written_from_python_pass_replay_verify(tmp_path, dealgym_bin, repo_root):
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
    done = subprocess.run(
        [dealgym_bin, "replay", str(path), "--verify"],
        cwd=repo_root,
        capture_output=True,
        text=True,
    )
    assert done.returncode == 0, done.stdout + done.stderr


def test_the_record_is_the_games_own_and_its_json_the_same():
    g = Game("job_interview", seed=9)
    g.step(turn("[WALK_AWAY]"))
    record = g.record()
    assert record == json.loads(g.record_json())
    assert record["outcome"]["kind"] == "walk_away"
    assert record["outcome"]["by"] in ("learner", "opponent")
    assert record["scenario_id"] == g.scenario_id
    assert set(g.rewards) == set(g.roles)
