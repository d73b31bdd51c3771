"""The verifiers 0.4 environment (``dealgym_verifiers``) run by verifiers' own evaluation entry
point, ``vf-eval``, against a live ``dealgym mock`` on 127.0.0.1.

Each run plays real episodes: the harness of every seat (verifiers' ``null`` chat harness in a
local subprocess) streams its completions from the mock through verifiers' interception
server, and the episodes' traces and dealgym records are read back. No Prime login is needed;
the harness's first run installs ``uv`` and syncs its script's environment from PyPI once
(verifiers' own design), later runs reuse ``~/.cache/uv``.
"""

from __future__ import annotations

import json
import os
import pathlib
import subprocess
import sys

import pytest
from conftest import free_port, mock_endpoint

pytest.importorskip(
    "verifiers.v1",
    reason="verifiers is not installed (pip install -r crates/python/requirements-verifiers.txt;"
    " .ci/verifiers.sh runs this file)",
)

#: verifiers' console script, from the interpreter's own environment.
VF_EVAL = pathlib.Path(sys.executable).with_name("vf-eval")


@pytest.fixture(scope="module")
def mock_url(dealgym_bin, repo_root):
    """The mock, with its reasoning in a separate `reasoning_content` (as vLLM's reasoning
    parsers return it), which must reach the game as the turn's reasoning."""
    with mock_endpoint(dealgym_bin, repo_root, "--think", "field") as url:
        yield url


@pytest.fixture(scope="module")
def failing_mock_url(dealgym_bin, repo_root):
    """A mock whose every answer is an injected HTTP 500."""
    with mock_endpoint(dealgym_bin, repo_root, "--error-rate", "1") as url:
        yield url


def vf_eval(out: pathlib.Path, mock_url: str, *args: str, check: bool = True):
    """``vf-eval dealgym-verifiers`` with the run's model at the mock; answers the finished
    process and the episodes of its ``traces.jsonl`` (one per line)."""
    assert VF_EVAL.exists(), f"{VF_EVAL} is missing: verifiers is importable but its script is not"
    env = {**os.environ, "DEALGYM_TEST_KEY": "unused"}
    done = subprocess.run(
        [
            str(VF_EVAL),
            "dealgym-verifiers",
            "--model", "mock",
            "--client.base-url", mock_url,
            "--client.api-key-var", "DEALGYM_TEST_KEY",
            "--no-push",
            "--rich", "None",
            "--output-dir", str(out),
            *args,
        ],
        capture_output=True,
        text=True,
        env=env,
        timeout=540,
    )
    if check:
        assert done.returncode == 0, done.stdout[-4000:] + done.stderr[-4000:]
    traces = sorted(out.glob("*/traces.jsonl"))
    episodes = [json.loads(line) for path in traces for line in path.read_text().splitlines()]
    return done, episodes


def records_by_episode(path: pathlib.Path) -> dict[tuple[str, str], dict]:
    """The records of a file by (run id, episode id): a group's members share a run id."""
    return {
        (r["run_id"], r["episode_id"]): r for r in map(json.loads, path.read_text().splitlines())
    }


def record_of(records: dict, trace: dict) -> dict:
    info = trace["info"]["dealgym"]
    return records[(info["run_id"], info["episode_id"])]


def reward_of(record: dict, role: str) -> float:
    """The record's reward for ``role`` (records name seats learner/opponent)."""
    (seat,) = [s for s, info in record["seats"].items() if info["role"] == role]
    return record["rewards"][seat]


def test_self_play_every_seat_is_an_agent_rewarded_by_the_game(tmp_path, mock_url, replay_verify):
    records = tmp_path / "selfplay.jsonl"
    _, episodes = vf_eval(
        tmp_path / "out", mock_url, "-n", "2", "-r", "2", "--env.records", str(records)
    )
    assert len(episodes) == 4
    by_episode = records_by_episode(records)
    assert len(by_episode) == 4
    groups: dict[int, set[str]] = {}
    for episode in episodes:
        assert episode["ok"] and not episode["errors"], episode["errors"]
        traces = {t["agent"]["name"]: t for t in episode["traces"]}
        assert set(traces) == {"buyer", "seller"}
        found = [record_of(by_episode, t) for t in traces.values()]
        record = found[0]
        assert all(r is record for r in found), "the seats of one episode name two games"
        for role, trace in traces.items():
            assert trace["ok"] and trace["agent"]["trainable"]
            assert trace["info"]["dealgym"]["role"] == role
            assert trace["rewards"]["dealgym"]["score"] == reward_of(record, role)
            assert trace["info"]["dealgym"]["rewards"][role] == reward_of(record, role)
            assert trace["info"]["dealgym"]["outcome"]["kind"] == record["outcome"]["kind"]
        groups.setdefault(episode["task"]["data"]["idx"], set()).add(record["episode_id"])
    # The server's reasoning_content reached the engine as each turn's reasoning.
    for record in by_episode.values():
        assert record["turns"] and all(turn["reasoning"] for turn in record["turns"]), record
    # A task's rollouts are one GRPO group: one setup, each member its own episode.
    assert sorted(len(ids) for ids in groups.values()) == [2, 2], groups
    assert "4 episodes" in replay_verify(records)


def test_one_seat_pinned_to_a_rule_opponent(tmp_path, mock_url, replay_verify):
    records = tmp_path / "pinned.jsonl"
    _, episodes = vf_eval(
        tmp_path / "out",
        mock_url,
        "-n", "1", "-r", "2",
        "--env.taskset.family", "casino",
        "--env.opponent", "rule:linear",
        "--env.learner-role", "agent_2",
        "--env.records", str(records),
    )
    by_episode = records_by_episode(records)
    assert len(episodes) == len(by_episode) == 2
    for episode in episodes:
        assert episode["ok"], episode["errors"]
        (trace,) = episode["traces"]
        assert trace["agent"]["name"] == "agent_2"
        record = record_of(by_episode, trace)
        assert record["family"] == "casino"
        assert record["seats"]["opponent"]["player"] == "rule:linear"
        assert record["seats"]["learner"]["role"] == "agent_2"
        assert trace["rewards"]["dealgym"]["score"] == record["rewards"]["learner"]
    replay_verify(records)


def test_a_seat_pinned_to_a_fixed_model_does_not_train(tmp_path, mock_url):
    _, episodes = vf_eval(
        tmp_path / "out",
        mock_url,
        "-n", "1", "-r", "1",
        "--env.taskset.family", "job_interview",
        "--env.recruiter.model", "fixed-recruiter",
    )
    (episode,) = episodes
    assert episode["ok"], episode["errors"]
    traces = {t["agent"]["name"]: t for t in episode["traces"]}
    assert traces["recruiter"]["agent"]["trainable"] is False
    assert traces["recruiter"]["agent"]["config"]["model"] == "fixed-recruiter"
    assert traces["worker"]["agent"]["trainable"] is True
    rewards = traces["worker"]["info"]["dealgym"]["rewards"]
    for role, trace in traces.items():
        assert trace["rewards"]["dealgym"]["score"] == rewards[role]


def test_an_endpoint_failure_fails_the_episode_and_rewards_no_seat(tmp_path, mock_url):
    closed = f"http://127.0.0.1:{free_port()}/v1"  # nothing listens there
    records = tmp_path / "failed.jsonl"
    _, episodes = vf_eval(
        tmp_path / "out",
        mock_url,
        "-n", "1", "-r", "1",
        "--env.seller.client.type", "eval",
        "--env.seller.client.base-url", closed,
        "--env.seller.client.api-key-var", "DEALGYM_TEST_KEY",
        "--env.records", str(records),
    )
    (episode,) = episodes
    assert episode["ok"] is False
    (error,) = episode["errors"]
    assert error["type"] == "ProviderError"
    assert "seller seat's model call failed" in error["message"], error["message"]
    for trace in episode["traces"]:
        assert trace["rewards"] == {}, trace["agent"]["name"]  # the healthy seat included
        assert "dealgym" not in trace["info"]
    assert records.read_text() == ""  # an unfinished game has no record


def test_server_errors_fail_every_attempt_of_a_retried_episode(
    tmp_path, mock_url, failing_mock_url
):
    records = tmp_path / "failed.jsonl"
    _, episodes = vf_eval(
        tmp_path / "out",
        mock_url,
        "-n", "1", "-r", "1",
        "--env.seller.client.type", "eval",
        "--env.seller.client.base-url", failing_mock_url,
        "--env.seller.client.api-key-var", "DEALGYM_TEST_KEY",
        "--env.retries.rules", '[{"type": "ProviderError", "max_retries": 1}]',
        "--env.records", str(records),
    )
    (episode,) = episodes
    assert episode["ok"] is False
    ours = [e for e in episode["errors"] if "seller seat's model call failed" in e["message"]]
    assert len(ours) >= 2, episode["errors"]  # the first attempt and its retry
    assert all(e["type"] == "ProviderError" for e in episode["errors"])
    assert "upstream 500" in ours[0]["message"]
    assert all(trace["rewards"] == {} for trace in episode["traces"])
    assert records.read_text() == ""


def test_an_agent_limit_hit_before_the_game_ends_fails_the_episode(tmp_path, mock_url):
    _, episodes = vf_eval(
        tmp_path / "out", mock_url, "-n", "1", "-r", "1", "--env.buyer.max-turns", "1"
    )
    (episode,) = episodes
    assert episode["ok"] is False
    (error,) = episode["errors"]
    assert "buyer seat's agent stopped on its limit (max_turns)" in error["message"], error
    assert "--env.buyer.max-turns" in error["message"]
    assert all(trace["rewards"] == {} for trace in episode["traces"])


def test_a_wrong_setting_fails_the_run_before_any_rollout(tmp_path, mock_url):
    done, episodes = vf_eval(
        tmp_path / "out", mock_url, "-n", "1", "--env.opponent", "rule:nope", check=False
    )
    assert done.returncode != 0
    assert "rule:nope" in done.stderr + done.stdout
    assert episodes == []
    done, _ = vf_eval(
        tmp_path / "out2",
        mock_url,
        "-n", "1",
        "--env.taskset.scenario-ids", '["craigslist:nope"]',
        check=False,
    )
    assert done.returncode != 0
    assert "craigslist:nope" in done.stderr + done.stdout
    # A judge-scored reward cannot fail mid-episode here: a Game refuses it up front.
    done, _ = vf_eval(
        tmp_path / "out3",
        mock_url,
        "-n", "1",
        "--env.taskset.rewards",
        '{"judge": {"endpoint": "http://127.0.0.1:9/v1", "model": "m"}, "weights": {"judge": 1.0}}',
        check=False,
    )
    assert done.returncode != 0
    assert "calls a service, which a Game does not" in done.stderr + done.stdout
