"""The AEC face under PettingZoo's own API checker, and its turn protocol."""

from __future__ import annotations

import pytest
from pettingzoo.test import api_test

from conftest import FAMILIES, GARBAGE, turn
from dealgym import roles
from dealgym.pettingzoo import DealAECEnv


@pytest.mark.parametrize("family", FAMILIES)
def test_every_family_passes_pettingzoos_api_test(family):
    api_test(DealAECEnv(family), num_cycles=200)


def test_agents_are_the_scenarios_roles():
    assert DealAECEnv("ahp").possible_agents == ["buyer", "seller"]
    assert DealAECEnv("job_interview").possible_agents == list(roles("job_interview"))
    assert DealAECEnv("casino").possible_agents == list(roles("casino"))


def test_a_walk_away_terminates_both_and_each_makes_its_dead_step():
    env = DealAECEnv("casino")
    env.reset(seed=3)
    mover = env.agent_selection
    env.step(turn("[WALK_AWAY]", talk="No deal for me."))
    assert all(env.terminations.values()) and not any(env.truncations.values())
    assert env.infos[mover]["outcome"]["kind"] == "walk_away"
    seen = []
    for agent in env.agent_iter():
        obs, reward, terminated, truncated, info = env.last()
        assert terminated and not truncated
        seen.append(agent)
        env.step(None)
    assert sorted(seen) == sorted(env.possible_agents)
    assert env.agents == []


def test_an_unreadable_completion_is_retried_then_forfeits_with_a_penalty():
    env = DealAECEnv("ahp", rules={"format_retries": 1})
    env.reset(seed=1)
    mover = env.agent_selection
    env.step(GARBAGE)
    assert env.agent_selection == mover, "the same seat is asked again"
    # The same info for every family: the retry and why the turn could not be played.
    assert env.infos[mover]["retry"] is True
    assert env.infos[mover]["error"].startswith("Format error: no action token")
    env.step(GARBAGE)
    assert env.infos[mover]["outcome"]["kind"] == "format_forfeit"
    assert env._cumulative_rewards[mover] < 0


def test_the_observation_is_the_chat_the_cli_sends_and_stays_in_its_space():
    env = DealAECEnv("craigslist")
    env.reset(seed=5)
    agent = env.agent_selection
    obs = env.observe(agent)
    assert env.observation_space(agent).contains(obs)
    assert obs["messages"][0]["role"] == "system"
    assert obs["prompt"] == obs["messages"][-1]["content"]


def test_reset_reads_either_spelling_of_an_option_and_refuses_both():
    env = DealAECEnv("casino")
    env.reset(seed=1, options={"scenario": "casino:1", "role": "agent_2"})
    assert env.game.scenario_id == "casino:1" and env.game.learner_role == "agent_2"
    env.reset(seed=1, options={"scenario_id": "casino:1", "learner_role": "agent_1"})
    assert env.game.learner_role == "agent_1"
    with pytest.raises(ValueError, match="both set scenario_id"):
        env.reset(seed=1, options={"scenario": "casino:1", "scenario_id": "casino:2"})


def test_a_sampled_action_is_a_short_random_completion():
    space = DealAECEnv("casino").action_space("agent_1")
    space.seed(0)
    assert all(len(space.sample()) <= 256 for _ in range(20))


def test_render_shows_each_move_by_the_role_that_made_it():
    env = DealAECEnv("ahp", render_mode="ansi")
    env.reset(seed=2)
    first = env.agent_selection
    env.step(turn("[SUBMIT_DEAL] price:100", talk="One hundred."))
    second = env.agent_selection
    env.step(turn("[REJECT_DEAL]", talk="No."))
    shown = env.render()
    mine, theirs = f"{first}: Talk: One hundred.", f"{second}: Talk: No."
    assert shown.startswith(mine) and theirs in shown and shown.index(theirs) > 0
    assert "negotiation" not in shown.lower(), "the engine's own messages are no one's move"
