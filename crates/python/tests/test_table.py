"""n-party tables in Python: ``Game("deliberation", ...)`` over the core's table engine, and
the one PettingZoo AEC face (``dealgym.pettingzoo.DealAECEnv``) with n agents under
PettingZoo's own API checker; the old names (``TableGame``, ``TableAECEnv``) as aliases.
The game is the six-party test fixture (made-up scores, secret markers in each party's
confidential instructions)."""

from __future__ import annotations

import json

import pytest
from pettingzoo.test import api_test

from conftest import REPO, turn
import dealgym
from dealgym import EpisodeEndedError, Game, NotYourTurnError, ScenarioError, table_roles
from dealgym.pettingzoo import DealAECEnv

FIXTURE = REPO / "tests" / "fixtures" / "table" / "six_party.jsonl"
ROLES = [f"party_{i}" for i in range(6)]
#: A deal every party of the fixture scores at or above its minimum on.
GOOD_DEAL = "A1 B1 C2 D1 E3"


def game(seed: int = 7, **kwargs) -> Game:
    return Game("deliberation", scenario_file=FIXTURE, seed=seed, **kwargs)


def TableAECEnv(**kwargs) -> DealAECEnv:
    return DealAECEnv("deliberation", **kwargs)


def propose_then_accept(g: Game) -> str:
    """The first to move proposes GOOD_DEAL; everyone else accepts proposal #1 (its proposer
    only talks)."""
    role = g.to_move
    offers = g.observe(role)["state"]["offers"]
    if not offers:
        return turn(f"[SUBMIT_DEAL] {GOOD_DEAL}", talk="Here is a fair package.",
                    thought=f"SECRET-THOUGHT-OF-{role}")
    if offers[0]["proposer"] == role:
        return turn("[TALK]", talk="Please accept.", thought=f"SECRET-THOUGHT-OF-{role}")
    return turn("[ACCEPT_DEAL] #1", talk="I can live with that.", thought=f"SECRET-THOUGHT-OF-{role}")


def play(g: Game, policy=propose_then_accept) -> None:
    while not g.done:
        g.step(policy(g), role=g.to_move)


def test_a_six_party_table_plays_to_a_deal_with_scripted_text():
    g = game()
    assert g.roles == g.agents == ROLES
    assert g.to_move == g.agent_selection == "party_0", "the lead opens"
    play(g)
    assert g.done and g.terminated and not g.truncated
    outcome = g.outcome
    assert outcome["kind"] == "deal" and outcome["deal_text"] == GOOD_DEAL and outcome["offer"] == 1
    assert set(g.rewards) == set(ROLES)
    assert g.rewards == outcome["rho"] and all(0 < r <= 1 for r in g.rewards.values())
    record = json.loads(g.record_json())
    assert record["kind"] == "table" and record["scenario_id"] == "deliberation:test:cooperative"
    assert [s["role"] for s in record["seats"]] == ROLES
    assert all(s["player"] == "python" for s in record["seats"])
    assert record == g.record()
    # Five acceptors including both veto parties made the deal.
    acceptors = set(record["offers"][0]["acceptors"])
    assert len(acceptors) == 5 and {0, 1} <= acceptors
    with pytest.raises(EpisodeEndedError):
        g.step(turn("[TALK]"), role="party_0")


def test_pettingzoos_api_test_passes_on_the_six_party_table():
    api_test(TableAECEnv(scenario_file=FIXTURE), num_cycles=300)


def test_agents_are_the_parties_and_rewards_come_only_at_the_end():
    env = TableAECEnv(scenario_file=FIXTURE)
    assert env.possible_agents == ROLES == table_roles(scenario_file=FIXTURE)
    env.reset(seed=11)
    steps, final = 0, {}
    for agent in env.agent_iter():
        obs, reward, terminated, truncated, info = env.last()
        assert env.observation_space(agent).contains(obs)
        if terminated or truncated:
            assert info["outcome"]["kind"] == "deal" and terminated and not truncated
            final[agent] = reward
            env.step(None)
            continue
        assert reward == 0.0
        env.step(propose_then_accept(env.game))
        steps += 1
    assert env.agents == []
    assert steps == len(env.record()["turns"])
    assert final == env.game.rewards and all(r > 0 for r in final.values())


def private_lines(g: Game) -> dict[str, set[str]]:
    """Each role's system-prompt lines that no other seat's system prompt holds: its score
    lines, its minimum, its confidential instructions."""
    system = {r: set(g.observe(r)["messages"][0]["content"].splitlines()) for r in g.roles}
    out = {}
    for r in g.roles:
        others = set().union(*(system[o] for o in g.roles if o != r))
        out[r] = {line for line in system[r] - others if line.strip()}
    return out


def test_the_schedule_running_out_truncates_every_agent():
    env = TableAECEnv(scenario_file=FIXTURE)
    env.reset(seed=2)
    ends = set()
    for agent in env.agent_iter():
        obs, reward, terminated, truncated, info = env.last()
        if terminated or truncated:
            ends.add((terminated, truncated, info["outcome"]["kind"], reward))
            env.step(None)
            continue
        env.step(turn("[TALK]", talk="Still thinking."))
    assert ends == {(False, True, "max_turns", 0.0)}


def test_no_agent_ever_sees_another_agents_scores_minimum_instructions_or_thoughts():
    g = game(seed=5, retries=1)
    private = private_lines(g)
    for r in ROLES:
        joined = "\n".join(private[r])
        assert f"SECRET-INSTRUCTIONS-OF-{r[-1]}" in joined
    assert any("Your minimum is 85" in line for line in private["party_0"]), "the lead's own minimum"
    texts = iter([
        turn("[SUBMIT_DEAL] A2 B2 C2 D2 E2", talk="A start."),
        turn("[REJECT_DEAL]", talk="Not for me."),
        turn("[SUBMIT_DEAL] A9 B1 C1 D1 E1", talk="Off the menu."),  # an illegal option: retried
        turn("[TALK]", talk="Let us think."),
    ])

    def policy(g: Game) -> str:
        role = g.to_move
        text = next(texts, None) or propose_then_accept(g)
        return text.replace("Thought: Thinking.", f"Thought: SECRET-THOUGHT-OF-{role}")

    while not g.done:
        g.step(policy(g), role=g.to_move)
        for viewer in ROLES:
            seen = g.observe(viewer)
            text = json.dumps(seen)
            for other in ROLES:
                if other == viewer:
                    continue
                assert f"SECRET-THOUGHT-OF-{other}" not in text, (viewer, other)
                assert f"SECRET-INSTRUCTIONS-OF-{other[-1]}" not in text, (viewer, other)
                for line in private[other]:
                    assert line not in text, (viewer, other, line)
            assert "scores" not in seen["state"] and "minimum" not in json.dumps(seen["state"])
    assert g.done


def test_a_seat_acting_out_of_turn_is_refused_naming_both_roles():
    g = game()
    assert g.to_move == "party_0"
    with pytest.raises(NotYourTurnError) as caught:
        g.step(turn("[TALK]"), role="party_3")
    assert isinstance(caught.value, ValueError)
    assert "party_3" in str(caught.value) and "party_0" in str(caught.value)
    assert g.to_move == "party_0" and g.observe("party_0")["state"]["turns"] == 0
    with pytest.raises(ScenarioError, match="`mayor` is not a party of scenario"):
        g.step(turn("[TALK]"), role="mayor")
    env = TableAECEnv(scenario_file=FIXTURE)
    env.reset(seed=1)
    with pytest.raises(ScenarioError):
        env.observe("mayor")


def test_an_unknown_offer_or_option_is_a_turn_error_then_a_forfeit():
    g = game(retries=1)
    info = g.step(turn("[SUBMIT_DEAL] A1 B1 C9 D1 E1"), role="party_0")
    assert info.retry and not info.done and info.to_move == "party_0"
    assert g.observe("party_0")["messages"][-1]["role"] == "user", "a correction is asked for"
    info = g.step(turn(f"[SUBMIT_DEAL] {GOOD_DEAL}"), role="party_0")
    assert not info.retry and info.error is None
    second = g.to_move
    info = g.step(turn("[ACCEPT_DEAL] #7"), role=second)
    assert info.retry and "#7" in info.error
    info = g.step(turn("[ACCEPT_DEAL] #42"), role=second)
    assert info.done and info.terminated and info.outcome == "format_forfeit"
    assert g.rewards[second] == -1.0
    assert all(g.rewards[r] == 0.0 for r in ROLES if r != second)


def test_the_same_seed_gives_the_same_schedule_and_record():
    a, b = game(seed=21), game(seed=21)
    assert a.schedule == b.schedule and a.run_id == b.run_id
    play(a)
    play(b)
    assert a.record_json() == b.record_json()
    schedules = {tuple(game(seed=s).schedule) for s in range(8)}
    assert len(schedules) > 1, "the schedule is drawn from the seed"
    env1, env2 = TableAECEnv(scenario_file=FIXTURE), TableAECEnv(scenario_file=FIXTURE)
    env1.reset(seed=3)
    env2.reset(seed=3)
    assert env1.game.schedule == env2.game.schedule
    env1.reset()
    env2.reset()
    assert env1.game.schedule == env2.game.schedule, "unseeded resets follow the last seed"


def test_scripted_parties_play_in_process_and_leave_one_agent():
    others = {r: "rule:deliberation" for r in ROLES if r != "party_2"}
    env = TableAECEnv(scenario_file=FIXTURE, players=others, render_mode="ansi")
    assert env.possible_agents == ["party_2"]
    env.reset(seed=4)
    for agent in env.agent_iter():
        assert agent == "party_2"
        obs, reward, terminated, truncated, info = env.last()
        if terminated or truncated:
            env.step(None)
            continue
        offers = obs["state"]["offers"]
        action = turn(f"[ACCEPT_DEAL] #{offers[-1]['id']}") if offers else turn("[TALK]")
        env.step(action)
    record = env.record()
    players = {s["role"]: s["player"] for s in record["seats"]}
    assert players["party_2"] == "python"
    assert all(players[r] == "rule:deliberation" for r in others)
    assert env.render().startswith("party_0: ")


def test_bad_arguments_name_what_is_wrong(tmp_path):
    with pytest.raises(ScenarioError, match="no table scenario `nope`"):
        Game("deliberation", scenario_id="nope", scenario_file=FIXTURE)
    with pytest.raises(ScenarioError, match="not a party"):
        Game("deliberation", scenario_file=FIXTURE, players={"mayor": "python"})
    with pytest.raises(ScenarioError, match="regulated role `mayor`"):
        Game("deliberation", scenario_file=FIXTURE, regulated=["mayor"])
    with pytest.raises(ValueError, match="tagged`, `xml` or `tools`"):
        Game("deliberation", scenario_file=FIXTURE, format="json")
    # The naive scripted party sits at `dealgym run`'s tables only: refused, not taken as a label.
    with pytest.raises(ValueError, match="`party_0` = `rule:deliberation-naive`"):
        Game("deliberation", scenario_file=FIXTURE, players={"party_0": "rule:deliberation-naive"})
    broken = tmp_path / "broken.jsonl"
    line = json.loads(FIXTURE.read_text().splitlines()[0])
    line["parties"][3]["private"]["scores"].pop()
    broken.write_text(json.dumps(line) + "\n")
    with pytest.raises(ScenarioError, match=r"broken.jsonl:1: field `parties\[3\]\.private\.scores`"):
        Game("deliberation", scenario_file=broken)


def test_a_regulated_seat_below_its_minimum_rejects_instead():
    g = game(regulated=["party_1"])
    g.step(turn("[SUBMIT_DEAL] A1 B1 C1 D4 E5"), role="party_0")  # 30 for party_1, under its 70
    while g.to_move != "party_1":
        g.step(turn("[TALK]"), role=g.to_move)
    g.step(turn("[ACCEPT_DEAL] #1"), role="party_1")
    assert g.observe("party_0")["state"]["offers"][0]["acceptors"] == ["party_0"]
    play(g, lambda g: turn("[TALK]"))
    accepted = [t for t in g.record()["turns"] if t["role"] == "party_1" and t.get("regulation")]
    assert len(accepted) == 1
    assert accepted[0]["regulation"]["score"] == 30 and accepted[0]["regulation"]["minimum"] == 70


def test_a_record_writer_appends_ended_tables_and_refuses_one_twice(tmp_path):
    from dealgym import RecordWriter

    path = tmp_path / "tables.jsonl"
    games = [game(seed=1), game(seed=1, member=1)]
    for g in games:
        play(g)
    with RecordWriter(path) as writer:
        with pytest.raises(RuntimeError, match="has not ended"):
            writer.write(game(seed=2))
        for g in games:
            writer.write(g)
        with pytest.raises(ValueError, match="already"):
            writer.write(games[0])
        assert writer.written == 2
    lines = path.read_text().splitlines()
    assert lines == [g.record_json() for g in games]
    assert [json.loads(l)["episode_id"] for l in lines] == ["g0-m0", "g0-m1"]


def test_one_seed_draws_one_table_in_python_and_in_dealgym_serve(dealgym_bin, tmp_path):
    """The same seed and scenario give the same schedule and system prompts in a table Game and
    at a table of `dealgym serve`, and a seat's chat is the same after the same moves."""
    import subprocess
    import time
    import urllib.error
    import urllib.request

    from conftest import free_port

    port = free_port()
    log = tmp_path / "serve.jsonl"
    server = subprocess.Popen(
        [dealgym_bin, "serve", "--port", str(port), "--scenarios", str(FIXTURE), "--log", str(log)],
        cwd=REPO,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    base = f"http://127.0.0.1:{port}/v1/tables"

    tokens: dict[str, str] = {}

    def call(url: str, body: dict | None = None) -> dict:
        data = None if body is None else json.dumps(body).encode()
        request = urllib.request.Request(url, data=data, method="POST" if body is not None else "GET")
        if "/seats/" in url:
            # Each seat is read and played with its own token, as its player would.
            request.add_header("x-seat-token", tokens[url.split("/seats/")[1].split("/")[0]])
        with urllib.request.urlopen(request, timeout=10) as answer:
            return json.loads(answer.read())

    try:
        deadline = time.monotonic() + 30
        while True:
            try:
                urllib.request.urlopen(f"http://127.0.0.1:{port}/health", timeout=1)
                break
            except OSError:
                assert time.monotonic() < deadline, "dealgym serve did not start"
                time.sleep(0.1)
        table = call(base, {"scenario_id": "deliberation:test:cooperative", "seed": 13})
        tokens.update(table["seat_tokens"])
        g = game(seed=13)
        assert table["roles"] == g.roles and table["to_move"] == g.to_move
        for _ in range(4):
            role = g.to_move
            text = propose_then_accept(g)
            g.step(text, role=role)
            call(f"{base}/{table['table_id']}/seats/{role}/step", {"message": text})
        for role in g.roles:
            seen = call(f"{base}/{table['table_id']}/seats/{role}")
            assert seen["messages"] == g.observe(role)["messages"], role
            assert seen["state"] == g.observe(role)["state"], role
        with pytest.raises(urllib.error.HTTPError) as refused:
            other = next(r for r in g.roles if r != g.to_move)
            call(f"{base}/{table['table_id']}/seats/{other}/step", {"message": "Action: [TALK]"})
        assert refused.value.code == 409
    finally:
        server.terminate()
        server.wait(10)


def test_a_scenario_file_changed_on_disk_is_read_again(tmp_path):
    path = tmp_path / "games.jsonl"
    line = json.loads(FIXTURE.read_text().splitlines()[0])
    path.write_text(json.dumps(line) + "\n")
    assert Game("deliberation", scenario_file=path).scenario_id == "deliberation:test:cooperative"
    line["id"] = "deliberation:test:renamed-and-longer"
    path.write_text(json.dumps(line) + "\n")
    assert Game("deliberation", scenario_id="deliberation:test:renamed-and-longer", scenario_file=path).roles == ROLES



def test_the_built_in_deliberation_games_play_without_a_file():
    """The importer's scenarios/deliberation.jsonl is compiled in: a game by id, with the base
    game's six parties, each seat's chat its own."""
    from dealgym import _core

    ids = _core.table_scenario_ids()
    assert "deliberation:base:cooperative" in ids and len(ids) == len(set(ids))
    with open(REPO / "scenarios" / "deliberation.jsonl") as f:
        assert len(ids) == sum(1 for line in f if line.strip())
    game = Game("deliberation", scenario_id="deliberation:base:cooperative", seed=3)
    assert "sportco" in game.roles and len(game.roles) == 6
    seat = game.to_move
    chat = game.observe(seat)["messages"]
    assert chat[0]["role"] == "system" and "Your minimum is" in chat[0]["content"]
    assert sum(m["content"].count("Your minimum is") for m in chat) == 1


def test_the_old_names_are_aliases_of_the_one_game_and_env_for_one_release():
    """``TableGame`` is ``Game("deliberation", ...)`` with the old ``step(role, action)`` order and
    a DeprecationWarning naming the new call; ``TableStepInfo`` is ``StepInfo``; ``TableAECEnv`` is
    the one ``DealAECEnv``."""
    from dealgym.table_pettingzoo import TableAECEnv as OldEnv

    with pytest.warns(DeprecationWarning, match=r"use dealgym.Game\('deliberation'"):
        old = dealgym.TableGame(scenario_file=FIXTURE, seed=7)
    new = game(seed=7)
    assert isinstance(old, Game) and old.family == new.family == "deliberation"
    assert old.schedule == new.schedule
    while not new.done:
        text = propose_then_accept(new)
        assert old.step(new.to_move, text).__repr__() == new.step(text, role=new.to_move).__repr__()
    assert old.record_json() == new.record_json()
    assert dealgym.TableStepInfo is dealgym.StepInfo
    env = OldEnv(scenario_file=FIXTURE)
    assert isinstance(env, DealAECEnv) and env.possible_agents == ROLES


def test_a_table_and_a_two_party_game_answer_in_the_same_shapes():
    """One class: the same step info, the same outcome dict from a seat's side, and what only
    one kind has refused on the other, naming it."""
    table, pair = game(seed=7), Game("casino", seed=7)
    info_table = table.step(turn("Thought: x\nTalk: hm"), role=table.to_move)
    info_pair = pair.step(turn("no action here"), role=pair.to_move)
    fields = ("role", "played", "retry", "error", "terminated", "truncated", "done", "to_move", "outcome")
    for info in (info_table, info_pair):
        assert isinstance(info, dealgym.StepInfo)
        assert all(hasattr(info, f) for f in fields)
        assert info.retry and info.error
    play(table)
    pair.step(turn("[WALK_AWAY]"), role=pair.to_move)
    for g in (table, pair):
        for role in g.roles:
            outcome = g.outcome_for(role)
            assert {"kind", "by", "utility", "rho"} <= set(outcome), outcome
    assert [t["function"]["name"] for t in table.tools("party_0")] == [
        t["function"]["name"] for t in pair.tools(pair.roles[0])
    ], "one set of tools, a table's accept naming a proposal"
    with pytest.raises(ValueError, match="a deliberation game does not take `opponent`"):
        Game("deliberation", scenario_file=FIXTURE, opponent="rule:linear")
    with pytest.raises(ValueError, match="a casino game does not take `retries`"):
        Game("casino", retries=2)
    with pytest.raises(ValueError, match="games\\[0\\]: `step_many` is a two-party game's"):
        dealgym.step_many([game()], [turn("[TALK]")])


def tool_call(name: str, **arguments) -> dict:
    return {"id": f"call_{name}", "type": "function",
            "function": {"name": name, "arguments": json.dumps(arguments)}}


def test_a_table_seat_acts_through_tool_calls_as_a_two_party_seat_does():
    g = game(format="tools")
    tools = g.tools("party_0")
    accept = next(t["function"] for t in tools if t["function"]["name"] == "accept")
    assert accept["parameters"]["required"] == ["offer"]
    terms = tools[0]["function"]["parameters"]["properties"]["terms"]["properties"]
    assert sorted(terms) == ["A", "B", "C", "D", "E"] and terms["A"]["enum"][0] == "A1"
    assert "accept(offer, message)" in g.observe("party_0")["messages"][0]["content"]
    deal = dict(zip("ABCDE", GOOD_DEAL.split()))

    def policy(g: Game) -> dict:
        role = g.to_move
        offers = g.observe(role)["state"]["offers"]
        if not offers:
            call = tool_call("make_offer", terms=deal, message="Here is a fair package.")
        elif offers[0]["proposer"] == role:
            call = tool_call("say", text="Please accept.")
        else:
            call = tool_call("accept", offer=1, message="I can live with that.")
        return {"text": f"SECRET-THOUGHT-OF-{role}", "tool_calls": [call]}

    # A wrong call is a format error, sent back; an option not in the game is illegal.
    info = g.step({"tool_calls": [tool_call("accept")]}, role="party_0")
    assert info.retry and "needs `offer`" in info.error
    play(g, policy)
    assert g.outcome["kind"] == "deal" and g.outcome["deal_text"] == GOOD_DEAL
    own = [m for m in g.observe("party_1")["messages"] if m["role"] == "assistant"]
    assert own and all(m.get("tool_calls") for m in own), "the seat's history keeps its calls"
    assert not any("SECRET-THOUGHT-OF-party_0" in m["content"]
                   for m in g.observe("party_1")["messages"])
