"""The OpenEnv ``Environment`` served by OpenEnv's own server and played by its own clients."""

from __future__ import annotations

import socket
import threading
import time

import pytest

pytest.importorskip("openenv")
import uvicorn  # noqa: E402  (installed with openenv-core)
from openenv.core import GenericEnvClient  # noqa: E402

from conftest import GARBAGE, offer, turn  # noqa: E402
from dealgym.openenv import DealAction, DealEnvClient, DealEnvironment, app  # noqa: E402


@pytest.fixture(scope="module")
def server_url():
    sock = socket.socket()
    sock.bind(("127.0.0.1", 0))
    port = sock.getsockname()[1]
    sock.close()
    server = uvicorn.Server(
        uvicorn.Config(app(max_concurrent_envs=4), host="127.0.0.1", port=port, log_level="warning")
    )
    thread = threading.Thread(target=server.run, daemon=True)
    thread.start()
    deadline = time.monotonic() + 30
    while not server.started:
        assert time.monotonic() < deadline, "the OpenEnv server did not start"
        time.sleep(0.05)
    yield f"http://127.0.0.1:{port}"
    server.should_exit = True
    thread.join(10)


def test_a_whole_deal_through_openenvs_client(server_url):
    free = {"regulate_learner": False, "regulate_opponent": False}
    with DealEnvClient(base_url=server_url).sync() as env:
        result = env.reset(seed=3, family="casino", rules=free)
        first = result.observation.role
        assert result.observation.messages[0]["role"] == "system"
        result = env.step(DealAction(message=turn(offer(result.observation.state)), seat=first))
        assert not result.done and result.observation.role != first
        result = env.step(DealAction(message=turn("[ACCEPT_DEAL]")))
        assert result.done
        state = env.state()
        assert state.done and state.step_count == 2 and state.outcome["kind"] == "deal"
        assert result.observation.state["outcome"]["kind"] == "deal"
        # Both seats' rewards reach the client, not only the last mover's.
        assert set(state.rewards) == set(result.observation.rewards) == {"agent_1", "agent_2"}
        assert result.reward == state.rewards[result.observation.role]


def test_a_wrong_seat_is_an_error_and_the_generic_client_plays_too(server_url):
    with GenericEnvClient(base_url=server_url).sync() as env:
        result = env.reset(seed=5, family="ahp")
        mover = result.observation["role"]
        other = "seller" if mover == "buyer" else "buyer"
        with pytest.raises(Exception, match=other):
            env.step({"message": turn("[WALK_AWAY]"), "seat": other})
    with GenericEnvClient(base_url=server_url).sync() as env:
        env.reset(seed=5, family="ahp", rules={"format_retries": 0})
        result = env.step({"message": GARBAGE})
        assert result.done
        assert result.reward is not None and result.reward < 0


def test_an_unseeded_reset_is_not_always_the_same_episode_and_unknown_arguments_are_refused():
    env = DealEnvironment("casino")
    prompts = {env.reset().messages[0]["content"] for _ in range(6)}
    assert len(prompts) > 1
    with pytest.raises(ValueError, match="scenario"):
        env.reset(seed=1, scenario="casino:0")


def test_the_environment_in_process_answers_the_seat_to_move():
    env = DealEnvironment("dnd")
    obs = env.reset(seed=2)
    # OpenEnv's reward before any step is none, as the server answers a reset.
    assert obs.to_move == obs.role and not obs.done and obs.reward is None
    obs = env.step(DealAction(message=turn("[WALK_AWAY]"), seat=obs.seat))
    assert obs.done and env.state.outcome["kind"] == "walk_away"


def test_a_rule_opponent_plays_inside_and_a_seeded_reset_reseeds(server_url):
    with DealEnvClient(base_url=server_url).sync() as env:
        result = env.reset(seed=4, family="craigslist", opponent="rule:linear", learner_role="buyer")
        while not result.done:
            assert result.observation.role == "buyer"
            result = env.step(DealAction(message=turn(offer(result.observation.state))))
        assert env.state().outcome["kind"] in ("reject_loop", "max_turns", "deal")
    local = DealEnvironment("casino")
    local.reset(seed=9)
    after_seeded = [local.reset().state["scenario_id"] for _ in range(3)]
    local.reset(seed=9)
    assert [local.reset().state["scenario_id"] for _ in range(3)] == after_seeded


def test_a_seat_acting_through_tools_steps_in_process():
    env = DealEnvironment("ahp")
    obs = env.reset(seed=3, learner_role="buyer", first_mover="buyer", rules={"learner_format": "tools"})
    call = {"id": "c0", "type": "function", "function": {"name": "walk_away", "arguments": "{}"}}
    obs = env.step(DealAction(message="", tool_calls=[call], seat=obs.seat))
    assert obs.done and env.state.outcome["kind"] == "walk_away"
    assert obs.messages[-2]["tool_calls"][0]["function"]["name"] == "walk_away"
    assert obs.reward == 0.0
