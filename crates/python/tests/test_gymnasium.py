"""The single-seat Gymnasium face under Gymnasium's own checker, with each kind of opponent."""

from __future__ import annotations


import gymnasium
import pytest
from gymnasium.utils.env_checker import check_env

import dealgym
import dealgym.gym  # noqa: F401  (registers the ids)
from conftest import GARBAGE, mock_endpoint, offer, turn
from dealgym.gym import IDS, DealEnv
from dealgym.opponents import OpenAIChat


def proposer(messages, state):
    """An opponent that keeps proposing the terms it likes best."""
    return turn(offer(state))


def test_every_two_party_family_of_the_engine_has_its_registered_id():
    """The ids are the engine's two-party families, each registered with Gymnasium: a family
    the engine gains is an id without a hand list to follow (a table plays through the AEC env)."""
    assert list(IDS) == dealgym.families()
    assert {"bundle", "hotel"} <= set(IDS) and "deliberation" not in IDS
    assert len(set(IDS.values())) == len(IDS)
    for family, id_ in IDS.items():
        assert gymnasium.spec(id_).kwargs == {"family": family}
    assert IDS["bundle"] == "dealgym/BundleBargaining-v0"


@pytest.mark.parametrize("family", sorted(IDS))
def test_every_registered_id_passes_gymnasiums_check_env(family):
    env = gymnasium.make(IDS[family], opponent=proposer)
    check_env(env.unwrapped, skip_render_check=False)
    # The default opponent: the built-in boulware negotiator, played in Rust.
    check_env(gymnasium.make(IDS[family]).unwrapped, skip_render_check=False)


@pytest.mark.parametrize("family", sorted(IDS))
def test_a_built_in_negotiator_opponent_plays_whole_episodes(family, tmp_path, replay_verify):
    from dealgym import RecordWriter

    kinds = set()
    path = tmp_path / "rule.jsonl"
    with RecordWriter(str(path)) as writer:
        for seed in range(4):
            env = DealEnv(family, opponent="rule:linear")
            obs, _ = env.reset(seed=seed)
            done = False
            while not done:
                obs, reward, terminated, truncated, info = env.step(turn(offer(obs["state"])))
                done = terminated or truncated
            kinds.add(info["outcome"]["kind"])
            record = env.game.record()
            assert record["seats"]["opponent"]["player"] == "rule:linear"
            writer.write(env.game)
    assert kinds <= {"deal", "reject_loop", "max_turns", "walk_away"}, kinds
    replay_verify(path)


def test_an_opponent_that_fails_says_so_and_that_the_episode_needs_a_reset():
    env = DealEnv("casino", opponent=[turn("[SUBMIT_DEAL] food:3 water:3 firewood:3")])
    obs, _ = env.reset(seed=4, options={"role": "agent_1", "first_mover": "agent_1"})
    obs, *_ = env.step(turn(offer(obs["state"])))
    with pytest.raises(RuntimeError, match="reset"):
        env.step(turn(offer(obs["state"], greedy=False)))


def test_an_unknown_built_in_opponent_is_refused_naming_the_known_ones():
    with pytest.raises(ValueError, match="rule:conceder"):
        DealEnv("casino", opponent="rule:telepath").reset(seed=0)


def test_options_pick_the_scenario_and_the_learners_role():
    env = DealEnv("ahp", opponent=proposer)
    scenario = dealgym.scenario_ids("ahp")[3]
    obs, _ = env.reset(seed=1, options={"scenario": scenario, "role": "seller"})
    assert env.game.scenario_id == scenario and env.game.learner_role == "seller"
    assert obs["state"]["role"] == "seller" and obs["state"]["own"]["kind"] == "seller"
    with pytest.raises(ValueError, match="colour"):
        env.reset(seed=1, options={"colour": "red"})


def test_a_scripted_opponent_and_the_endings_as_gymnasium_reports_them():
    env = DealEnv("casino", opponent=[turn("[WALK_AWAY]")], role="agent_1")
    obs, info = env.reset(seed=4, options={"first_mover": "agent_1"})
    assert env.game.to_move == "agent_1" and info == {}
    obs, reward, terminated, truncated, info = env.step(turn(offer(obs["state"])))
    assert terminated and not truncated and info["outcome"]["kind"] == "walk_away"

    capped = DealEnv(
        "dnd",
        opponent=proposer,
        rules={"max_rounds": 1, "reject_loop": 0, "reject_streak": 0},
    )
    obs, _ = capped.reset(seed=2, options={"role": "agent_1", "first_mover": "agent_1"})
    obs, reward, terminated, truncated, info = capped.step(turn(offer(obs["state"])))
    assert truncated and not terminated and info["outcome"]["kind"] == "max_turns"

    forfeit = DealEnv("ahp", opponent=proposer, rules={"format_retries": 0})
    forfeit.reset(seed=3, options={"role": "buyer", "first_mover": "buyer"})
    _, reward, terminated, _, info = forfeit.step(GARBAGE)
    assert terminated and reward < 0 and info["outcome"]["kind"] == "format_forfeit"


def test_a_model_behind_an_openai_endpoint_as_the_opponent(dealgym_bin, repo_root):
    with mock_endpoint(dealgym_bin, repo_root) as url:
        env = DealEnv("casino", opponent=OpenAIChat(url, "mock"))
        obs, _ = env.reset(seed=6, options={"role": "agent_1", "first_mover": "agent_2"})
        assert any(m["role"] == "user" for m in obs["messages"][1:]), "the model moved first"
        done = False
        while not done:
            obs, reward, terminated, truncated, info = env.step(turn(offer(obs["state"])))
            done = terminated or truncated
        assert info["outcome"]["kind"] in ("deal", "reject_loop", "walk_away", "max_turns")
