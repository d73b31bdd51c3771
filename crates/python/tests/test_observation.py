"""The observation of the loop people run (issue 43): its state is built on first read, yet
holds the same value as an eager one, for every family and at every step; the chat can be asked
for alone; and ``step_many`` may be called from several threads over disjoint games."""

from __future__ import annotations

import copy
import json
import pickle
import threading

import pytest
from conftest import FAMILIES, GARBAGE, REPO, offer, turn
from dealgym import Game, step_many
from dealgym.pettingzoo import DealAECEnv
from dealgym.spaces import observation_space

FREE = {"regulate_learner": False, "regulate_opponent": False}
TABLE = REPO / "tests" / "fixtures" / "table" / "six_party.jsonl"


def games() -> list[Game]:
    """One game of every two-party family, and a table (each seed plays a different game)."""
    return [Game(f, seed=12, rules=FREE) for f in FAMILIES] + [
        Game("deliberation", scenario_file=TABLE, seed=7)
    ]


def completion(g: Game, step: int) -> str:
    """Offers the mover's side would make, with a malformed turn now and then (a retry)."""
    if step % 5 == 3:
        return GARBAGE
    if g.family == "deliberation":
        offers = g.state(g.to_move)["offers"]
        if not offers:
            return turn("[SUBMIT_DEAL] A1 B1 C2 D1 E3")
        return turn("[TALK]" if offers[0]["proposer"] == g.to_move else "[ACCEPT_DEAL] #1")
    return turn(offer(g.state(g.to_move), greedy=step % 2 == 0))


@pytest.mark.parametrize("g", games(), ids=lambda g: g.family)
def test_a_state_read_later_is_the_state_of_its_moment_for_every_family(g):
    """Every seat observed before every step and at the end; each observation's state, read
    only once the episode is over, equals the state an eager read gave at that moment."""
    kept = []
    step = 0
    while True:
        for role in g.roles:
            kept.append((g.observe(role), g.state(role), role, step))
        if g.done:
            break
        g.step(completion(g, step))
        step += 1
    assert step > 2
    states = {json.dumps(eager, sort_keys=True) for _, eager, _, _ in kept}
    assert len(states) > len(g.roles), "the states change as the episode goes"
    for seen, eager, role, at in kept:
        assert seen["state"] == eager, (role, at)
    assert all(seen["state"]["outcome"] for seen, _, _, at in kept if at == step)


def test_every_way_of_reading_a_dict_sees_the_state():
    g = Game("casino", seed=3)
    role = g.to_move
    eager = {**g.observe(role)}
    assert set(eager) == {"prompt", "messages", "state"} and eager["state"] == g.state(role)
    reads = {
        "[]": lambda o: o["state"],
        "get": lambda o: o.get("state"),
        "in": lambda o: "state" in o and o["state"],
        "iter": lambda o: list(o) == ["prompt", "messages", "state"] and o["state"],
        "keys": lambda o: o.keys() == eager.keys() and o["state"],
        "items": lambda o: dict(o.items())["state"],
        "values": lambda o: list(o.values())[2],
        "len": lambda o: len(o) == 3 and o["state"],
        "dict": lambda o: dict(o)["state"],
        "**": lambda o: {**o}["state"],
        "|": lambda o: (o | {})["state"],
        "copy": lambda o: o.copy()["state"],
        "copy.copy": lambda o: copy.copy(o)["state"],
        "deepcopy": lambda o: copy.deepcopy(o)["state"],
        "pickle": lambda o: pickle.loads(pickle.dumps(o))["state"],
        "json": lambda o: json.loads(json.dumps(o))["state"],
        "repr": lambda o: repr(eager["state"]) in repr(o) and o["state"],
        "setdefault": lambda o: o.setdefault("state", None),
        "pop": lambda o: o.pop("state"),
    }
    for name, read in reads.items():
        assert read(g.observe(role)) == eager["state"], name
    for name, same in {
        "==": lambda o: o == eager,
        "== (reflected)": lambda o: eager == o,
        "== (two unread)": lambda o: o == g.observe(role),
        "!=": lambda o: not (o != eager),
        "space": lambda o: observation_space().contains(o),
    }.items():
        assert same(g.observe(role)), name
    # A state set before it was read is the caller's; a deleted one stays deleted.
    seen = g.observe(role)
    seen["state"] = "mine"
    assert seen["state"] == "mine" and dict(seen)["state"] == "mine"
    seen = g.observe(role)
    del seen["state"]
    assert "state" not in seen and seen.get("state") is None
    with pytest.raises(KeyError):
        g.observe(role)["nothing"]


def test_the_readme_loop_never_builds_the_state():
    """The README's PettingZoo loop reads the chat alone: no observation it is handed has had
    its state converted (an eager observation would hold it from the start)."""
    env = DealAECEnv("casino")
    env.reset(seed=0)
    handed = []
    for agent in env.agent_iter():
        obs, reward, terminated, truncated, info = env.last()
        handed.append(obs)
        action = None if terminated or truncated else turn("[WALK_AWAY]")
        action = action if len(handed) > 1 or action is None else turn("[TALK]")
        env.step(action)
    # Unread, the storage holds the pending state, not a converted dict.
    assert handed and not any(isinstance(dict.__getitem__(o, "state"), dict) for o in handed)
    assert all(o["state"]["role"] for o in handed)  # and each still has it when asked
    assert all(isinstance(dict.__getitem__(o, "state"), dict) for o in handed)


def test_code_reading_the_storage_meets_the_pending_state_never_a_missing_one():
    """C code that reads a dict's storage directly (orjson, PyDict_GetItem) sees a `state` key
    from the start, holding an object no encoder takes, so it fails loudly rather than writing
    an observation without its state; a state the caller replaced before reading is kept."""
    g = Game("casino", seed=1)
    role = g.to_move
    obs = g.observe(role)
    assert dict.__contains__(obs, "state") and dict.__len__(obs) == 3
    pending = dict.__getitem__(obs, "state")
    assert not isinstance(pending, dict)
    assert list(dict.keys(obs)) == ["prompt", "messages", "state"]
    assert json.loads(json.dumps(obs))["state"] == g.state(role)
    replaced = g.observe(role)
    replaced["state"] = "mine"
    assert replaced["state"] == "mine" and replaced.get("state") == "mine"


@pytest.mark.parametrize("family", [*FAMILIES, "deliberation"])
def test_the_chat_alone_is_the_observations_chat(family):
    extra = {"scenario_file": TABLE} if family == "deliberation" else {}
    g = Game(family, seed=4, **extra)
    for step in range(4):
        if g.done:
            break
        for role in g.roles:
            assert g.messages(role) == g.observe(role)["messages"]
        g.step(completion(g, step))


def test_the_chat_after_a_restore_is_the_restored_games_own():
    """The chat converted along one line of play is never shown on another: after a restore
    the messages are those of a game that played the other line from the start."""
    g = Game("craigslist", seed=3, first_mover="buyer", opponent="rule:boulware")
    root = g.snapshot()
    g.step(turn("[SUBMIT_DEAL] price:50"))
    for role in g.roles:
        g.observe(role)
    g.restore(root)
    g.step(turn("[SUBMIT_DEAL] price:80"))
    fresh = Game("craigslist", seed=3, first_mover="buyer", opponent="rule:boulware")
    fresh.step(turn("[SUBMIT_DEAL] price:80"))
    for role in g.roles:
        assert g.observe(role)["messages"] == fresh.observe(role)["messages"]
        assert g.messages(role) == fresh.messages(role)
    # And it grows from there as the fresh game's does.
    for game in (g, fresh):
        game.step(turn("[SUBMIT_DEAL] price:70"))
    for role in g.roles:
        assert g.observe(role)["messages"] == fresh.observe(role)["messages"]


def test_step_many_from_threads_over_disjoint_games_equals_one_thread():
    """Two threads, each with its own games, step_many at once: every game ends as it does
    when one thread steps them all (the engine runs without the interpreter's lock)."""

    def play(gs: list[Game]) -> list[str]:
        step = 0
        while any(not g.done for g in gs):
            live = [g for g in gs if not g.done]
            step_many(live, [completion(g, step) for g in live])
            step += 1
        return [g.record_json() for g in gs]

    def fresh() -> list[Game]:
        return [Game(f, seed=s, rules=FREE) for s in range(8) for f in FAMILIES]

    alone = play(fresh())
    shares = fresh()
    halves = [shares[0::2], shares[1::2]]
    got: list[list[str]] = [[], []]
    pool = [threading.Thread(target=lambda i=i: got.__setitem__(i, play(halves[i])))
            for i in range(2)]
    for t in pool:
        t.start()
    for t in pool:
        t.join()
    assert got[0] == alone[0::2] and got[1] == alone[1::2]


def test_a_copied_or_pickled_observation_is_an_observation_with_its_state():
    """Gymnasium's check_env compares an observation's type with its copy's."""
    g = Game("dnd", seed=2)
    eager = {**g.observe(g.to_move)}
    for copied in (copy.copy(g.observe(g.to_move)), copy.deepcopy(g.observe(g.to_move)),
                   pickle.loads(pickle.dumps(g.observe(g.to_move)))):
        assert type(copied) is type(g.observe(g.to_move))
        assert dict.__contains__(copied, "state") and copied == eager
