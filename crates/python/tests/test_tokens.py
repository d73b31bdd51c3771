"""Token-exact play in process, on a real tokenizer shipped by a package: the 65,000-token BPE
in the ``anthropic`` 0.34.2 wheel (installed with ``--no-deps``; nothing of it is imported),
loaded by Hugging Face ``transformers`` with a ChatML chat template.

The property: each seat's prompt at turn k+1 is its prompt at turn k, plus the ids it sampled,
plus the ids of the new messages alone; sampled ids are never re-tokenized. Checked two ways
against a full re-render of the conversation by the same tokenizer: with the canonical ids of
the text a model wrote (the exact sequence equals the re-render, no drift), and with the same
text sampled as one id per character, as a model may sample it (the ids are kept verbatim and
drift is reported where the re-render, which re-tokenizes them, parts from them).
"""

from __future__ import annotations


import pytest
from conftest import GARBAGE, anthropic_tokenizer, offer, turn
from transformers import PreTrainedTokenizerFast

import dealgym
from dealgym import Game, RecordWriter, TokenError
from dealgym.gym import DealEnv
from dealgym.pettingzoo import DealAECEnv
from dealgym.tokens import ExactTokens



@pytest.fixture(scope="module")
def tokenizer() -> PreTrainedTokenizerFast:
    return anthropic_tokenizer()


def canonical(tok, text: str) -> list[int]:
    """What a model that wrote ``text`` and then its end-of-turn token sampled, as vLLM
    returns it (the end-of-turn id included)."""
    return tok.encode(text, add_special_tokens=False) + [tok.convert_tokens_to_ids("<|im_end|>")]


def by_character(tok, text: str) -> list[int]:
    """The same text sampled one character at a time: valid ids, not the canonical split."""
    ids = [i for ch in text for i in tok.encode(ch, add_special_tokens=False)]
    return ids + [tok.convert_tokens_to_ids("<|im_end|>")]


def completion(state: dict, moves: int) -> str:
    """Greedy offers, then a walk-away: each seat plays several turns."""
    if moves >= 3:
        return turn("[WALK_AWAY]", talk="We are too far apart.")
    return turn(offer(state, greedy=True), talk=f"My offer, take {moves}.")


def play(game: Game, tokens: ExactTokens, sample) -> dict[str, list[dict]]:
    """Both seats token-exact to the end; each turn's prompt, sampled ids and re-render."""
    seen: dict[str, list[dict]] = {role: [] for role in game.roles}
    while not game.done:
        role = game.to_move
        added = tokens.next_prompt(game, role)
        prompt = (game.token_sequence(role) or []) + added["prompt_ids"]
        messages, _ = game.prompt_messages(role)
        rerender = tokens.render(messages, continuation=False)
        text = completion(game.observe(role)["state"], len(seen[role]))
        ids = sample(tokens.tokenizer, text)
        game.step({"text": text, "completion_ids": ids, "logprobs": [-0.5] * len(ids)}, role=role)
        seen[role].append(
            {"prompt": prompt, "ids": ids, "drift": added["drift"], "rerender": rerender}
        )
    return seen


@pytest.mark.parametrize("family", ["casino", "craigslist", "job_interview"])
def test_canonical_ids_extend_each_prompt_and_equal_a_full_rerender(tokenizer, family):
    game = Game(family, seed=3)
    seen = play(game, ExactTokens(tokenizer), canonical)
    for role, turns in seen.items():
        assert len(turns) >= 2, role
        for before, after in zip(turns, turns[1:]):
            kept = before["prompt"] + before["ids"]
            assert after["prompt"][: len(kept)] == kept, "the sampled ids were re-tokenized"
            assert len(after["prompt"]) > len(kept), "the new messages add ids"
        for t in turns:
            assert t["drift"] is None
            assert t["prompt"] == t["rerender"]


def test_ids_that_are_not_the_canonical_split_are_kept_and_reported_as_drift(tokenizer):
    game = Game("casino", seed=3)
    seen = play(game, ExactTokens(tokenizer), by_character)
    for role, turns in seen.items():
        first, second = turns[0], turns[1]
        assert first["drift"] is None, "a first prompt is the rendering itself"
        kept = first["prompt"] + first["ids"]
        assert second["prompt"][: len(kept)] == kept, "the exact ids are kept verbatim"
        assert second["prompt"] != second["rerender"], "a re-render re-tokenizes the text"
        drift = second["drift"]
        assert drift is not None
        # The two part where the sampled ids begin: the re-render writes the text canonically.
        assert drift["at"] == len(first["prompt"])
        assert drift["exact_len"] == len(second["prompt"])
        assert drift["rerender_len"] == len(second["rerender"])
        assert drift["exact_len"] > drift["rerender_len"], "one id per character is longer"


def test_the_record_holds_the_exact_ids_and_passes_replay_verify(tokenizer, tmp_path, replay_verify):
    game = Game("casino", seed=11)
    seen = play(game, ExactTokens(tokenizer), by_character)
    record = game.record()
    roles = {seat: record["setup"]["seats"][seat]["role"] for seat in ("learner", "opponent")}
    for seat, role in roles.items():
        turns = [t for t in record["turns"] if t["seat"] == seat]
        assert [t["tokens"]["completion_ids"] for t in turns] == [s["ids"] for s in seen[role]]
        sequence: list[int] = []
        for t, s in zip(turns, seen[role]):
            assert sequence + t["tokens"]["prompt_ids"] == s["prompt"]
            assert t["tokens"]["logprobs"] == [-0.5] * len(s["ids"])
            sequence += t["tokens"]["prompt_ids"] + t["tokens"]["completion_ids"]
        assert sequence == game.token_sequence(role)
    path = tmp_path / "exact.jsonl"
    with RecordWriter(path) as out:
        out.write(game)
    replay_verify(path)


def test_a_seats_trajectory_is_the_core_rule_over_its_calls(tokenizer):
    """``Game.trajectory``: the first call's prompt, then every id since, sampled ids under mask
    1 with their logprobs, the environment's under mask 0 with 0.0; per-call rewards once the
    episode has ended, summing to the seat's reward."""
    game = Game("casino", seed=11)
    seen = play(game, ExactTokens(tokenizer), by_character)
    for role in game.roles:
        t = game.trajectory(role)
        assert t["prompt_ids"] == seen[role][0]["prompt"]
        assert t["prompt_ids"] + t["response_ids"] == game.token_sequence(role)
        sampled = [x for x, m in zip(t["response_ids"], t["mask"], strict=True) if m]
        assert sampled == [x for s in seen[role] for x in s["ids"]]
        assert len(t["mask"]) == len(t["response_ids"]) == len(t["logprobs"])
        assert t["logprobs"] == [-0.5 if m else 0.0 for m in t["mask"]]
        assert len(t["rewards"]) == len(seen[role])
        assert sum(t["rewards"]) == pytest.approx(game.rewards[role])


def test_a_trajectory_in_play_without_logprobs_and_without_ids(tokenizer):
    tokens = ExactTokens(tokenizer)
    game = Game("casino", seed=5)
    role = game.to_move
    with pytest.raises(TokenError, match=f"{role} has no token trajectory: the seat made no call"):
        game.trajectory(role)
    tokens.prompt(game, role)
    text = turn(offer(game.observe(role)["state"]))
    ids = canonical(tokenizer, text)
    game.step({"text": text, "completion_ids": ids}, role=role)
    t = game.trajectory(role)
    assert t["response_ids"] == ids and t["mask"] == [1] * len(ids)
    assert t["logprobs"] is None, "the sampler gave none"
    assert t["rewards"] is None, "the episode runs"
    other = game.to_move
    game.step(turn("[WALK_AWAY]"), role=other)
    with pytest.raises(TokenError, match=f"{other} has no token trajectory: call 0 of the seat has no token ids"):
        game.trajectory(other)


def test_a_format_retry_stays_in_the_sequence(tokenizer):
    """A completion that cannot be read is retried; the failed attempt's ids were sampled and
    sent, so they stay in the seat's sequence, and the retry's prompt extends it."""
    tokens = ExactTokens(tokenizer)
    game = Game("casino", seed=5, rules={"format_retries": 1})
    role = game.to_move
    first = tokens.prompt(game, role)
    ids = canonical(tokenizer, GARBAGE)
    info = game.step({"text": GARBAGE, "completion_ids": ids}, role=role)
    assert info.retry and game.to_move == role
    again = tokens.prompt(game, role)
    assert again[: len(first) + len(ids)] == first + ids
    text = turn(offer(game.observe(role)["state"]))
    game.step({"text": text, "completion_ids": canonical(tokenizer, text)}, role=role)
    assert game.token_sequence(role)[: len(again)] == again


def test_steps_out_of_order_are_token_errors(tokenizer):
    tokens = ExactTokens(tokenizer)
    game = Game("casino", seed=1)
    role = game.to_move
    text = turn(offer(game.observe(role)["state"]))
    with pytest.raises(TokenError, match="follow no prompt ids"):
        game.step({"text": text, "completion_ids": [1, 2]})
    tokens.next_prompt(game, role)
    with pytest.raises(TokenError, match="carries the `completion_ids`"):
        game.step(text)
    with pytest.raises(TokenError, match="1 logprobs for 2 completion_ids"):
        game.step({"text": text, "completion_ids": [1, 2], "logprobs": [-1.0]})
    with pytest.raises(TokenError, match="go with the `completion_ids`"):
        game.step({"text": text, "logprobs": [-1.0]})
    with pytest.raises(TypeError, match="completion_ids"):
        game.step({"text": text, "completion_ids": [-1]})
    other = next(r for r in game.roles if r != role)
    with pytest.raises(dealgym.NotYourTurnError):
        tokens.next_prompt(game, other)
    with pytest.raises(TypeError, match="apply_chat_template"):
        ExactTokens(object())
    # Nothing above moved the game: the turn is still to play, with its prompt ids.
    game.step({"text": text, "completion_ids": canonical(tokenizer, text)})
    assert game.to_move == other


def test_a_seat_that_played_text_cannot_turn_token_exact(tokenizer):
    game = Game("casino", seed=1)
    role = game.to_move
    game.step(turn(offer(game.observe(role)["state"])))
    game.step(turn("[REJECT]"))
    with pytest.raises(TokenError, match="without token ids"):
        ExactTokens(tokenizer).next_prompt(game, role)


def test_the_aec_face_observes_token_ids_for_the_seat_to_move(tokenizer):
    env = DealAECEnv("casino", tokenizer=tokenizer)
    env.reset(seed=4)
    moves = 0
    for agent in env.agent_iter():
        obs, _, terminated, truncated, _ = env.last()
        assert env.observation_space(agent).contains(obs)
        if terminated or truncated:
            env.step(None)
            continue
        other = next(a for a in env.agents if a != agent)
        assert env.observe(other)["token_ids"] is None
        assert obs["token_ids"]["prompt_ids"]
        text = completion(obs["state"], moves // 2)
        env.step({"text": text, "completion_ids": canonical(tokenizer, text)})
        moves += 1
    record = env.record()
    assert all(t["tokens"]["completion_ids"] for t in record["turns"])


def test_the_gym_face_plays_the_learner_token_exact_against_a_rule(tokenizer):
    env = DealEnv("craigslist", tokenizer=tokenizer, opponent="rule:boulware")
    obs, _ = env.reset(seed=2)
    done, moves = False, 0
    while not done:
        assert env.observation_space.contains(obs)
        assert obs["token_ids"] is not None
        text = completion(obs["state"], moves)
        obs, _, terminated, truncated, _ = env.step(
            {"text": text, "completion_ids": canonical(tokenizer, text)}
        )
        done, moves = terminated or truncated, moves + 1
    assert obs["token_ids"] is None
    record = env.game.record()
    learner = [t for t in record["turns"] if t["seat"] == "learner"]
    opponent = [t for t in record["turns"] if t["seat"] == "opponent"]
    assert learner and all(t.get("tokens") for t in learner)
    assert opponent and not any(t.get("tokens") for t in opponent)


def test_a_batch_checks_every_token_exact_action_before_stepping_any(tokenizer):
    tokens = ExactTokens(tokenizer)
    games = [Game("casino", seed=s) for s in range(3)]
    texts = [turn(offer(g.observe(g.to_move)["state"])) for g in games]
    for g in games[:2]:
        tokens.next_prompt(g, g.to_move)
    actions = [{"text": t, "completion_ids": canonical(tokenizer, t)} for t in texts]
    with pytest.raises(TokenError, match=r"games\[2\]"):
        dealgym.step_many(games, actions)
    assert all(g.token_sequence(g.to_move) == [] for g in games), "no game was stepped"
    tokens.next_prompt(games[2], games[2].to_move)
    movers = [g.to_move for g in games]
    infos = dealgym.step_many(games, actions)
    assert [i.played for i in infos] == ["submit"] * 3
    for g, role, action in zip(games, movers, actions):
        assert g.token_sequence(role)[-len(action["completion_ids"]) :] == action["completion_ids"]


def test_the_openenv_face_carries_token_ids_and_sampled_ids(tokenizer):
    from dealgym.openenv import DealAction, DealEnvironment

    env = DealEnvironment("casino", tokenizer=tokenizer)
    obs = env.reset(seed=6)
    moves = 0
    while not obs.done:
        assert obs.token_ids is not None and obs.token_ids["prompt_ids"]
        text = completion(obs.state, moves // 2)
        ids = canonical(tokenizer, text)
        obs = env.step(DealAction(message=text, completion_ids=ids, logprobs=[-0.1] * len(ids)))
        moves += 1
    assert obs.token_ids is None
    turns = env.game.record()["turns"]
    assert all(t["tokens"]["logprobs"] for t in turns)
