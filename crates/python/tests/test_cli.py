"""The install gives the command (issue 43): ``pip install .`` puts a ``dealgym`` console script
beside the interpreter that runs the same Rust command line as the binary, from any folder (the
scenarios are built in), and a record written from Python verifies where it was written."""

from __future__ import annotations

import pathlib
import signal
import subprocess
import sys

import pytest
from dealgym import RecordWriter
from test_records import play_to

#: The console script the wheel's ``[project.scripts]`` installs beside this interpreter.
SCRIPT = pathlib.Path(sys.executable).parent / ("dealgym.exe" if sys.platform == "win32" else "dealgym")


def dealgym(*args: str, cwd: pathlib.Path) -> subprocess.CompletedProcess:
    assert SCRIPT.exists(), f"the install put no `dealgym` command at {SCRIPT}"
    return subprocess.run(
        [str(SCRIPT), *args], cwd=cwd, capture_output=True, text=True, timeout=300
    )


def test_the_install_gives_the_dealgym_command(tmp_path):
    done = dealgym("--version", cwd=tmp_path)
    assert done.returncode == 0, done.stdout + done.stderr
    assert done.stdout.startswith("dealgym "), done.stdout


def test_the_command_plays_the_demo_and_verifies_it_in_a_folder_without_scenarios(tmp_path):
    assert not (tmp_path / "scenarios").exists()
    done = dealgym("demo", "--per-family", "1", cwd=tmp_path)
    assert done.returncode == 0, done.stdout + done.stderr
    assert (tmp_path / "runs" / "demo.jsonl").exists()
    done = dealgym("replay", "--verify", "runs/demo.jsonl", cwd=tmp_path)
    assert done.returncode == 0, done.stdout + done.stderr
    assert "7 episodes in 1 files replay identically" in done.stdout, done.stdout


def test_a_record_written_from_python_verifies_in_its_own_folder(tmp_path):
    with RecordWriter(str(tmp_path / "python.jsonl")) as writer:
        for seed, family in enumerate(("casino", "craigslist")):
            writer.write(play_to(family, "deal", seed=seed))
    done = dealgym("replay", "--verify", "python.jsonl", cwd=tmp_path)
    assert done.returncode == 0, done.stdout + done.stderr
    assert "2 episodes in 1 files replay identically" in done.stdout, done.stdout


def test_an_unknown_scenario_could_not_be_checked_and_does_not_differ(tmp_path):
    path = tmp_path / "python.jsonl"
    with RecordWriter(str(path)) as writer:
        writer.write(play_to("casino", "deal", seed=1))
    text = path.read_text()
    scenario = text.split('"scenario_id":"', 1)[1].split('"', 1)[0]
    path.write_text(text.replace(scenario, "casino:no-such-scenario"))
    done = dealgym("replay", "--verify", "python.jsonl", cwd=tmp_path)
    assert done.returncode == 1, done.stdout + done.stderr
    assert "could not check 1 of 1 episodes" in done.stdout, done.stdout
    assert "casino:no-such-scenario" in done.stdout, done.stdout
    assert "differ" not in done.stdout, done.stdout


@pytest.mark.skipif(sys.platform == "win32", reason="SIGINT is a POSIX signal")
def test_ctrl_c_stops_the_command_as_it_stops_the_binary(tmp_path):
    # The mock endpoint serves until it is stopped and installs no handler of its own: under
    # Python's SIGINT handler it would never see Ctrl-C.
    assert SCRIPT.exists(), f"the install put no `dealgym` command at {SCRIPT}"
    child = subprocess.Popen(
        [str(SCRIPT), "mock", "--port", "0"],
        cwd=tmp_path,
        stderr=subprocess.PIPE,
        stdout=subprocess.DEVNULL,
        text=True,
    )
    try:
        assert "mock endpoint on" in child.stderr.readline()
        child.send_signal(signal.SIGINT)
        assert child.wait(timeout=20) == -signal.SIGINT
    finally:
        child.kill()
        child.wait()
