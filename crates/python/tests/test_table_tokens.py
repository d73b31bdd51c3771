"""Token-exact play of a table seat from Python: ``Game("deliberation", ...)`` takes a seat's
sampled ids after the prompt ids set for its turn (``prompt_messages``, ``set_prompt_ids``),
as a two-party game does, by the same code; the table keeps the seat's exact sequence, and
``Game.trajectory(role)`` is the core's one trajectory rule over its calls, the same ids
``dealgym export --format verl`` writes from the game's record.

Tokenizer-free: prompt and sampled ids are fixed lists, each prompt after the first given as
the seat's sequence so far (``before``) plus new ids (``full``), so the ids a test feeds are
the ids it expects back."""

from __future__ import annotations

import json
import subprocess

import pytest
from conftest import REPO, anthropic_tokenizer, turn

from dealgym import Game, NotYourTurnError, RecordWriter, TokenError
from dealgym.pettingzoo import DealAECEnv

FIXTURE = REPO / "tests" / "fixtures" / "table" / "six_party.jsonl"
GOOD_DEAL = "A1 B1 C2 D1 E3"
#: The seat played token-exact; the others are played with text.
EXACT = "party_0"


def game(seed: int = 7) -> Game:
    return Game("deliberation", scenario_file=FIXTURE, seed=seed)


def policy(g: Game, calls: int = 0) -> str:
    """EXACT talks on its first two calls and proposes GOOD_DEAL on its third, then talks; the
    others talk until there is an offer and then accept #1."""
    role = g.to_move
    offers = g.observe(role)["state"]["offers"]
    if role == EXACT:
        if calls == 2:
            return turn(f"[SUBMIT_DEAL] {GOOD_DEAL}", talk="A fair package.")
        return turn("[TALK]", talk="Let us hear everyone first.")
    if not offers:
        return turn("[TALK]", talk="I am listening.")
    return turn("[ACCEPT_DEAL] #1", talk="Fine by me.")


def play(g: Game) -> list[dict]:
    """Play to the end, EXACT token-exact: per call of EXACT, the prompt ids fed (the new ones),
    the sampled ids and their logprobs."""
    calls: list[dict] = []
    while not g.done:
        role = g.to_move
        if role != EXACT:
            g.step(policy(g), role=role)
            continue
        k = len(calls)
        messages, before = g.prompt_messages(role)
        assert messages == g.observe(role)["messages"]
        sequence = g.token_sequence(role)
        if k == 0:
            assert before is None and sequence == [], "the first call's rendering is the prompt"
            new = [100 + i for i in range(7)]
            answer = g.set_prompt_ids(role, new)
        else:
            # `before` is the seat's chat up to and including its own last reply.
            assert before == messages[: len(before)] and before[-1]["role"] == "assistant"
            new = [200 + 10 * k + i for i in range(3)]
            answer = g.set_prompt_ids(role, sequence + new, sequence)
        assert answer == {"prompt_ids": new, "drift": None}
        ids = [1000 + 10 * k + i for i in range(4)]
        logprobs = [-0.25 * (i + 1) - k for i in range(4)]
        g.step({"text": policy(g, k), "completion_ids": ids, "logprobs": logprobs}, role=role)
        calls.append({"prompt": new, "ids": ids, "logprobs": logprobs})
    return calls


def test_a_table_seats_trajectory_is_the_ids_it_was_fed():
    g = game()
    calls = play(g)
    assert g.done and g.outcome["kind"] == "deal"
    assert len(calls) == 3, "the seat plays several calls"
    t = g.trajectory(EXACT)
    assert t["prompt_ids"] == calls[0]["prompt"]
    response, mask, logprobs = [], [], []
    for i, call in enumerate(calls):
        if i:
            response += call["prompt"]
            mask += [0] * len(call["prompt"])
            logprobs += [0.0] * len(call["prompt"])
        response += call["ids"]
        mask += [1] * len(call["ids"])
        logprobs += call["logprobs"]
    assert t["response_ids"] == response
    assert t["mask"] == mask
    assert t["logprobs"] == pytest.approx(logprobs)
    assert g.token_sequence(EXACT) == t["prompt_ids"] + t["response_ids"]
    assert len(t["rewards"]) == len(calls)
    assert sum(t["rewards"]) == pytest.approx(g.rewards[EXACT])
    # A seat played with text has no token trajectory, and says so.
    with pytest.raises(TokenError, match="party_1 has no token trajectory"):
        g.trajectory("party_1")
    assert g.token_sequence("party_1") is None


def test_the_records_verl_export_has_the_same_ids(dealgym_bin, tmp_path):
    g = game()
    play(g)
    path = tmp_path / "table.jsonl"
    with RecordWriter(path) as out:
        out.write(g)
    verified = subprocess.run(
        [dealgym_bin, "replay", str(path), "--verify", "--scenarios", str(FIXTURE)],
        cwd=REPO,
        capture_output=True,
        text=True,
    )
    assert verified.returncode == 0, verified.stdout + verified.stderr
    done = subprocess.run(
        [dealgym_bin, "export", str(path), "--format", "verl", "--role", EXACT],
        cwd=REPO,
        capture_output=True,
        text=True,
    )
    assert done.returncode == 0, done.stderr
    lines = [json.loads(line) for line in done.stdout.splitlines()]
    assert len(lines) == 1
    line, t = lines[0], g.trajectory(EXACT)
    assert line["extra_fields"]["role"] == EXACT
    assert line["extra_fields"]["turn_rewards"] == pytest.approx(t["rewards"])
    assert line["prompt_ids"] == t["prompt_ids"]
    assert line["response_ids"] == t["response_ids"]
    assert line["response_mask"] == t["mask"]
    assert line["response_logprobs"] == pytest.approx(t["logprobs"])


def test_table_token_play_is_refused_where_it_would_lose_ids():
    g = game()
    role = g.to_move
    with pytest.raises(TokenError, match="follow no prompt ids of this turn"):
        g.step({"text": policy(g), "completion_ids": [1, 2]}, role=role)
    other = next(r for r in g.roles if r != role)
    with pytest.raises(NotYourTurnError, match=f"it is {role}'s turn, not {other}'s"):
        g.set_prompt_ids(other, [1, 2, 3])
    g.set_prompt_ids(role, [1, 2, 3])
    with pytest.raises(TokenError, match="carries the `completion_ids`"):
        g.step(policy(g), role=role)
    g.step({"text": policy(g), "completion_ids": [4, 5]}, role=role)
    # Prompt ids hold for the turn they were set at only: the next seat's step ignores none.
    nxt = g.to_move
    with pytest.raises(TokenError, match="follow no prompt ids"):
        g.step({"text": policy(g), "completion_ids": [6]}, role=nxt)
    g.step(policy(g), role=nxt)
    # A seat that played a turn with text has no sequence to extend.
    while g.to_move != nxt and not g.done:
        g.step(policy(g), role=g.to_move)
    if not g.done:
        with pytest.raises(TokenError, match="played a turn without token ids"):
            g.set_prompt_ids(nxt, [1], [])


def test_the_aec_env_plays_a_table_token_exact_with_a_tokenizer():
    """``DealAECEnv("deliberation", tokenizer=)``: every seat observes the prompt ids of its
    turn and steps with its sampled ids; each seat's trajectory holds exactly them."""
    tok = anthropic_tokenizer()
    eot = tok.convert_tokens_to_ids("<|im_end|>")
    env = DealAECEnv("deliberation", scenario_file=FIXTURE, tokenizer=tok)
    env.reset(seed=7)
    sampled: dict[str, list[int]] = {}
    calls = {role: 0 for role in env.agents}
    for agent in env.agent_iter():
        seen, _, terminated, truncated, _ = env.last()
        if terminated or truncated:
            env.step(None)
            continue
        assert seen["token_ids"]["prompt_ids"], agent
        text = policy(env.game, calls[agent])
        ids = tok.encode(text, add_special_tokens=False) + [eot]
        env.step({"text": text, "completion_ids": ids})
        sampled.setdefault(agent, []).extend(ids)
        calls[agent] += 1
    assert env.game.outcome["kind"] == "deal"
    for role, ids in sampled.items():
        t = env.game.trajectory(role)
        assert [x for x, m in zip(t["response_ids"], t["mask"], strict=True) if m] == ids
        assert t["logprobs"] is None
