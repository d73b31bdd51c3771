"""Every family played to each ending through the AEC face: deal, walk-away, reject loop, turn
cap and format forfeit. Only the turn cap truncates; the others terminate."""

from __future__ import annotations

import pytest

from conftest import FAMILIES, GARBAGE, offer, turn
from dealgym.pettingzoo import DealAECEnv

#: Regulation off, so an ACCEPT always stands (regulation has its own tests in Rust).
FREE = {"regulate_learner": False, "regulate_opponent": False}


def play(env: DealAECEnv, moves) -> tuple[str, dict]:
    """Step `moves(agent, state, k)` until the episode ends; answer the first mover and the
    outcome."""
    first = env.agent_selection
    k = 0
    while not any(env.terminations.values()) and not any(env.truncations.values()):
        agent = env.agent_selection
        state = env.observe(agent)["state"]
        env.step(moves(agent, state, k))
        k += 1
        assert k < 100, "the episode should have ended"
    return first, env.game.outcome


def ended(env: DealAECEnv, kind: str, truncated: bool = False) -> None:
    assert env.game.outcome["kind"] == kind
    assert all(env.truncations.values()) is truncated
    assert all(env.terminations.values()) is not truncated
    for agent in env.possible_agents:
        assert env.infos[agent]["outcome"]["kind"] == kind


@pytest.mark.parametrize("family", FAMILIES)
def test_a_deal(family):
    env = DealAECEnv(family, rules=FREE)
    env.reset(seed=21)
    first, outcome = play(
        env, lambda a, s, k: turn(offer(s)) if k == 0 else turn("[ACCEPT_DEAL]", talk="Deal.")
    )
    ended(env, "deal")
    assert outcome["terms"] is not None
    mover_state = env.observe(first)["state"]
    assert mover_state["outcome"]["kind"] == "deal"


@pytest.mark.parametrize("family", FAMILIES)
def test_a_walk_away(family):
    env = DealAECEnv(family)
    env.reset(seed=22)
    play(env, lambda a, s, k: turn("[WALK_AWAY]"))
    ended(env, "walk_away")


@pytest.mark.parametrize("family", FAMILIES)
def test_a_reject_loop(family):
    env = DealAECEnv(family, rules={**FREE, "reject_loop": 3})
    env.reset(seed=23)
    first = env.agent_selection
    # The first mover proposes the same terms every time; the other alternates two offers.
    _, outcome = play(
        env,
        lambda a, s, k: turn(offer(s, greedy=(a == first) or k % 4 == 1)),
    )
    ended(env, "reject_loop")
    assert outcome["by"] in env.possible_agents, "a role, as every face names a seat"


@pytest.mark.parametrize("family", FAMILIES)
def test_the_turn_cap_truncates(family):
    env = DealAECEnv(family, rules={**FREE, "max_rounds": 2, "reject_loop": 0, "reject_streak": 0})
    env.reset(seed=24)
    play(env, lambda a, s, k: turn(offer(s, greedy=k % 4 < 2)))
    ended(env, "max_turns", truncated=True)


@pytest.mark.parametrize("family", FAMILIES)
def test_a_format_forfeit_costs_the_seat_that_forfeited(family):
    env = DealAECEnv(family, rules={"format_retries": 1})
    env.reset(seed=25)
    first, outcome = play(env, lambda a, s, k: GARBAGE)
    ended(env, "format_forfeit")
    other = next(a for a in env.possible_agents if a != first)
    assert env._cumulative_rewards[first] < env._cumulative_rewards[other]
