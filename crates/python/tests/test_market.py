"""Markets in Python (issue 45): ``Game("market", ...)`` over the core's market rulebook, hosted
by the same code that hosts a table, and the one PettingZoo AEC face
(``dealgym.pettingzoo.DealAECEnv("market")``) with one agent per trader under PettingZoo's own
API checker. The game is the four-trader test fixture (made-up limits no two traders share)."""

from __future__ import annotations

import json
import pathlib
import subprocess
import sys

import pytest
from pettingzoo.test import api_test

from conftest import REPO, turn
import dealgym
from dealgym import EpisodeEndedError, Game, NotYourTurnError, RecordWriter, ScenarioError
from dealgym.pettingzoo import DealAECEnv

FIXTURE = REPO / "tests" / "fixtures" / "market" / "four_traders.jsonl"
ROLES = ["buyer_1", "buyer_2", "seller_1", "seller_2"]
#: Each trader's one limit: a buyer's value, a seller's cost (the fixture's).
LIMITS = {
    t["role"]: t["private"]["limits"][0]
    for t in json.loads(FIXTURE.read_text().splitlines()[0])["traders"]
}
#: The console script the wheel installs beside this interpreter (test_cli.py's).
SCRIPT = pathlib.Path(sys.executable).parent / ("dealgym.exe" if sys.platform == "win32" else "dealgym")


def market(seed: int = 3, **kwargs) -> Game:
    return Game("market", scenario_file=FIXTURE, seed=seed, **kwargs)


def trader(g: Game) -> str:
    """A trader played from Python: takes the best quote of the other side it gains on, else
    quotes its limit's middle ground (a buyer 20 under its value, a seller 20 over its cost),
    its thought a secret no other trader may read."""
    role = g.to_move
    state = g.observe(role)["state"]
    buyer = state["side"] == "buyer"
    limit = LIMITS[role]
    assert state["next_limit"] == limit, "a trader's state holds its own limit"
    others = [q for q in state["book"] if q["side"] != state["side"]]
    # Prices are in currency units, as the limits are.
    gains = [q for q in others if (q["price"] < limit if buyer else q["price"] > limit)]
    thought = f"SECRET-THOUGHT-OF-{role}"
    if gains:
        best = min(gains, key=lambda q: q["price"]) if buyer else max(gains, key=lambda q: q["price"])
        return turn(f"[ACCEPT_DEAL] #{best['id']}", talk="Deal.", thought=thought)
    price = limit - 20 if buyer else limit + 20
    return turn(f"[SUBMIT_DEAL] price: {price}", talk="My quote.", thought=thought)


def play(g: Game, policy=trader) -> None:
    while not g.done:
        g.step(policy(g), role=g.to_move)


def expected_rewards(trades: list[dict]) -> dict[str, float]:
    """Each role's surplus from the trades: a buyer's value less the price, a seller's price
    less its cost (the price and the limits in currency units); 0 for a trader that did not
    trade."""
    out = dict.fromkeys(ROLES, 0.0)
    for t in trades:
        out[t["buyer"]] += LIMITS[t["buyer"]] - t["price"]
        out[t["seller"]] += t["price"] - LIMITS[t["seller"]]
    return out


def test_a_hand_played_market_with_two_zic_sellers_ends_with_each_traders_surplus():
    g = market(seed=3, players={"seller_1": "rule:zic", "seller_2": "rule:zic", "buyer_2": "rule:truthful"})
    assert g.family == "market" and g.roles == ROLES
    assert g.in_process == ["buyer_2", "seller_1", "seller_2"]
    assert g.to_move == "buyer_1", "the scripted traders moved on their own up to the Python seat"
    moved = 0
    while not g.done:
        assert g.to_move == "buyer_1", "only the seat played from Python is ever asked"
        info = g.step(trader(g), role="buyer_1")
        assert info.role == "buyer_1" and not info.retry, info
        moved += 1
    assert moved >= 1 and g.done and (g.terminated or g.truncated)
    outcome = g.outcome
    trades = outcome["trades"]
    assert any(t["buyer"] == "buyer_1" for t in trades), trades
    for t in trades:
        assert set(t) >= {"buyer", "seller", "taker", "order", "price"}
        assert t["buyer"] in ROLES and t["seller"] in ROLES, "trades name roles"
        assert (t["value"], t["cost"]) == (LIMITS[t["buyer"]], LIMITS[t["seller"]])
    assert set(g.rewards) == set(ROLES)
    assert g.rewards == pytest.approx(expected_rewards(trades))
    assert outcome["metrics"]["surplus"] == pytest.approx(g.rewards), "surplus keyed by role"
    buyer = g.outcome_for("buyer_1")
    assert buyer["kind"] == outcome["kind"] and buyer["utility"] == pytest.approx(g.rewards["buyer_1"])
    record = json.loads(g.record_json())
    assert record == g.record()
    assert record["kind"] == "market" and record["scenario_id"] == "market:test:four"
    assert [(s["role"], s["player"]) for s in record["seats"]] == [
        ("buyer_1", "python"), ("buyer_2", "rule:truthful"),
        ("seller_1", "rule:zic"), ("seller_2", "rule:zic"),
    ]
    with pytest.raises(EpisodeEndedError):
        g.step(turn("[REJECT_DEAL]"), role="buyer_1")


def test_pettingzoos_api_test_passes_on_a_market():
    api_test(DealAECEnv("market", scenario_file=FIXTURE), num_cycles=300)


def test_pettingzoos_api_test_passes_on_a_built_in_market_with_scripted_traders():
    env = DealAECEnv("market", index=1, players={"buyer_1": "rule:zic", "seller_1": "rule:sniper"})
    assert "buyer_1" not in env.possible_agents and "seller_1" not in env.possible_agents
    api_test(env, num_cycles=300)


def test_agents_are_the_traders_and_rewards_come_only_at_the_end():
    env = DealAECEnv("market", scenario_file=FIXTURE)
    assert env.possible_agents == ROLES
    env.reset(seed=5)
    final = {}
    for agent in env.agent_iter():
        obs, reward, terminated, truncated, info = env.last()
        assert env.observation_space(agent).contains(obs)
        if terminated or truncated:
            assert info["outcome"]["kind"] == env.game.outcome["kind"]
            final[agent] = reward
            env.step(None)
            continue
        assert reward == 0.0
        env.step(trader(env.game))
    assert env.agents == []
    assert final == env.game.rewards == pytest.approx(expected_rewards(env.game.outcome["trades"]))
    assert any(r > 0 for r in final.values()), "the traders traded"


def private_lines(g: Game) -> dict[str, set[str]]:
    """Each role's system-prompt lines no other trader's system prompt holds: its limits."""
    system = {r: set(g.observe(r)["messages"][0]["content"].splitlines()) for r in g.roles}
    out = {}
    for r in g.roles:
        others = set().union(*(system[o] for o in g.roles if o != r))
        out[r] = {line for line in system[r] - others if line.strip()}
    return out


def keys(value) -> set[str]:
    """Every key of a nested structure of dicts and lists."""
    if isinstance(value, dict):
        return set(value).union(*(keys(v) for v in value.values()))
    if isinstance(value, list):
        return set().union(*(keys(v) for v in value))
    return set()


def test_no_trader_ever_sees_another_traders_value_cost_or_thoughts():
    g = market(seed=3)
    secret = private_lines(g)
    for role in ROLES:
        assert f"- unit 1: {LIMITS[role]}" in secret[role], secret[role]
    seen_states = []
    while True:
        for viewer in ROLES:
            seen = g.observe(viewer)
            text = json.dumps(seen["messages"])
            for other in ROLES:
                if other == viewer:
                    continue
                for line in secret[other]:
                    assert line not in text, f"{viewer} sees {other}'s {line!r}"
                assert f"SECRET-THOUGHT-OF-{other}" not in text
            state = seen["state"]
            assert state["role"] == viewer and state["next_limit"] in (LIMITS[viewer], None)
            assert not keys(state) & {"limits", "value", "cost", "private"}, state
            seen_states.append(state)
        if g.done:
            break
        g.step(trader(g), role=g.to_move)
    assert any(s["trades"] for s in seen_states), "the check ran past a trade"


def test_a_seat_out_of_turn_an_unknown_role_and_a_bad_spec_are_refused_by_name():
    g = market()
    mover = g.to_move
    other = next(r for r in ROLES if r != mover)
    with pytest.raises(NotYourTurnError, match=f"{other}.*{mover}|{mover}.*{other}"):
        g.step(turn("[REJECT_DEAL]"), role=other)
    with pytest.raises(ScenarioError, match="buyer_9"):
        g.observe("buyer_9")
    with pytest.raises(ScenarioError, match="buyer_9"):
        market(players={"buyer_9": "rule:zic"})
    with pytest.raises(ValueError, match="rule:boulware.*rule:zic"):
        market(players={"buyer_1": "rule:boulware"})
    with pytest.raises(ValueError, match="learner_role"):
        Game("market", learner_role="buyer_1")
    with pytest.raises(ValueError, match="tools"):
        market().tools("buyer_1")
    with pytest.raises(ValueError, match="format `tools`: a market is played in `tagged` or `xml`"):
        market(format="tools")
    with pytest.raises(ScenarioError, match="nobody"):
        market(regulated=["nobody"])


def test_the_same_seed_and_completions_give_byte_identical_records(tmp_path):
    def written(name: str, seed: int) -> bytes:
        g = market(seed=seed, players={"seller_1": "rule:zic", "seller_2": "rule:zic"})
        play(g)
        path = tmp_path / name
        with RecordWriter(str(path)) as writer:
            writer.write(g)
        return path.read_bytes()

    first, again = written("a.jsonl", 11), written("b.jsonl", 11)
    assert first == again
    assert written("c.jsonl", 12) != first, "another seed draws another schedule and quotes"


def verify(path: pathlib.Path, *scenarios: pathlib.Path) -> subprocess.CompletedProcess:
    """`dealgym replay --verify PATH` by the installed console script, in PATH's folder (no
    `scenarios/` there: the built-in markets stand in for `scenarios/market.jsonl`)."""
    assert SCRIPT.exists(), f"the install put no `dealgym` command at {SCRIPT}"
    flags = [arg for s in scenarios for arg in ("--scenarios", str(s))]
    return subprocess.run(
        [str(SCRIPT), "replay", "--verify", str(path), *flags],
        cwd=path.parent, capture_output=True, text=True, timeout=300,
    )


def test_a_record_written_from_python_verifies_with_the_command_line(tmp_path):
    fixture, built_in = tmp_path / "fixture.jsonl", tmp_path / "built_in.jsonl"
    with RecordWriter(str(fixture)) as writer:
        for seed in range(3):
            g = market(seed=seed, players={"seller_2": "rule:zic", "buyer_2": "rule:sniper"})
            play(g)
            writer.write(g)
    with RecordWriter(str(built_in)) as writer:
        g = Game("market", index=2, seed=1, players={"seller_1": "rule:truthful"})
        play(g, policy=lambda g: turn("[REJECT_DEAL]"))
        writer.write(g)
    assert not (tmp_path / "scenarios").exists()
    for path, scenarios, n in [(fixture, [FIXTURE], 3), (built_in, [], 1)]:
        done = verify(path, *scenarios)
        assert done.returncode == 0, done.stdout + done.stderr
        assert f"{n} episodes in 1 files replay identically" in done.stdout, done.stdout
    # A changed price does not.
    text = fixture.read_text()
    changed = text.replace("Action: [SUBMIT_DEAL] price: ", "Action: [SUBMIT_DEAL] price: 1", 1)
    assert changed != text
    fixture.write_text(changed)
    done = verify(fixture, FIXTURE)
    assert done.returncode != 0 and "differ" in done.stdout, done.stdout


def test_a_market_seat_plays_token_exact_as_a_table_seat_does():
    g = market(seed=3, players={"seller_1": "rule:zic", "seller_2": "rule:zic", "buyer_2": "rule:zic"})
    role = g.to_move
    assert g.token_sequence(role) == []
    prompt_ids = [1, 2, 3, 4]
    g.set_prompt_ids(role, prompt_ids)
    text = trader(g)
    g.step({"text": text, "completion_ids": [9, 9, 9], "logprobs": [-0.5, -0.5, -0.5]}, role=role)
    assert g.token_sequence(role) == prompt_ids + [9, 9, 9]
    t = g.trajectory(role)
    assert t["prompt_ids"] == prompt_ids and t["response_ids"] == [9, 9, 9]
    assert t["mask"] == [1, 1, 1]


@pytest.mark.parametrize("family", ["market", "deliberation"])
@pytest.mark.parametrize("setting", [{"learner_role": "buyer_1"}, {"first_mover": "seller_1"}])
def test_the_aec_env_refuses_a_two_party_setting_at_a_market_or_a_table(family, setting):
    """``learner_role`` and ``first_mover`` are a two-party game's: the AEC env of a market or a
    table refuses them by name, as ``Game`` does, rather than taking and ignoring them (before:
    taken, and dropped with the reset options)."""
    where = {"scenario_file": FIXTURE} if family == "market" else {}
    with pytest.raises(ValueError, match=next(iter(setting))):
        DealAECEnv(family, **where, **setting)


def test_an_aec_env_whose_every_seat_is_played_in_process_is_refused_by_name():
    """A market (or a table) whose every seat ``players`` scripts leaves the AEC env no agent:
    refused when it is made, naming why and what plays it, where ``reset()`` raised an
    ``IndexError`` (the ending handed to the first of no agents)."""
    with pytest.raises(ValueError, match="every seat of .* is played in process"):
        DealAECEnv("market", scenario_file=FIXTURE, players=dict.fromkeys(ROLES, "rule:zic"))
    g = market(players=dict.fromkeys(ROLES, "rule:zic"))
    assert g.done and g.in_process == ROLES, "a Game plays it to its end"
