"""Narrated seats from Python (issue 47): a decider picks the move, a narrator writes the words,
and the engine keeps the brief in the seat's history, holds the turn to the decided move and
counts where its Talk contradicts it: on a ``Game``, in the single-seat env, the AEC env and the
record."""

from __future__ import annotations

import json
import re

import pytest

import dealgym
from conftest import mock_endpoint, offer, turn
from dealgym import _core
from dealgym.gym import DealEnv
from dealgym.narrated import Narrated
from dealgym.opponents import OpenAIChat

BRIEF_START = "Your move this turn is already decided"


def decided_in(messages) -> str:
    """The decided action line the last message (the brief) names."""
    assert messages[-1]["role"] == "user" and messages[-1]["content"].startswith(BRIEF_START)
    return re.search(r"already decided: (.*?)\. Write", messages[-1]["content"]).group(1)


def faithful(messages, state):
    """A narrator that talks about its move and writes an action line of its own (another
    move), which ``force="appended"`` cuts off."""
    decided_in(messages)
    return "Thought: Keep it short.\nTalk: Here is my move.\nAction: [WALK_AWAY]"


def priced(talk_price: int):
    """A narrator whose Talk names ``talk_price`` dollars, whatever it was told."""

    def narrator(messages, state):
        decided_in(messages)
        return f"Thought: Push.\nTalk: I can do ${talk_price}, not a cent more."

    return narrator


def craigslist(seed: int = 3) -> dealgym.Game:
    return dealgym.Game("craigslist", seed=seed)


def test_a_rule_decider_plays_its_move_with_the_narrators_words():
    game = craigslist()
    role = game.to_move
    line = game.decide(role, "rule:linear")
    assert line.startswith("[SUBMIT_DEAL] price:"), line
    step = Narrated("rule:linear", faithful).play(game, role)
    assert step.error is None and step.played == "submit", step
    narration = step.narration
    assert narration["decided"] == line and narration["force"] == "appended"
    assert narration["contradictions"] == []
    # The narrator's own action line was cut off: the turn ends with the decided one.
    reply = game.messages(role)[-1]
    assert reply["role"] == "assistant"
    assert reply["content"] == f"Thought: Keep it short.\nTalk: Here is my move.\nAction: {line}"


def test_the_brief_is_in_the_seats_messages_before_its_reply():
    game = craigslist()
    role = game.to_move
    before = game.messages(role)
    step = Narrated("rule:linear", faithful).play(game, role)
    after = game.messages(role)
    assert after[: len(before)] == before
    assert after[len(before)] == {"role": "user", "content": step.narration["brief"]}
    assert after[len(before)]["content"] == game.narration_brief(role, step.narration["decided"])
    assert after[len(before) + 1]["role"] == "assistant"
    # The other seat reads the Talk and the move, never the brief.
    other = next(r for r in game.roles if r != role)
    assert all(BRIEF_START not in m["content"] for m in game.messages(other))


def test_a_talk_that_names_another_price_is_a_contradiction_of_that_turn():
    game = craigslist()
    role = game.to_move
    line = game.decide(role, "rule:linear")
    price = int(float(line.split("price:")[1]))
    # Within a dollar or half a percent a price is the same one; half of it is another.
    step = Narrated("rule:linear", priced(price // 2)).play(game, role)
    assert step.played == "submit" and step.error is None
    named = [price // 2 * 100]
    assert step.narration["contradictions"] == [{"kind": "other_price", "named": named}]
    # The next narrated turn, true to its price, has none.
    game.step(turn("[REJECT_DEAL]"), role=game.to_move)
    line = game.decide(role, "rule:linear")
    price = int(float(line.split("price:")[1]))
    assert Narrated("rule:linear", priced(price)).play(game, role).narration["contradictions"] == []


def test_a_prompt_narrator_that_writes_another_move_is_refused_and_corrected():
    game = craigslist()
    role = game.to_move
    asked = []

    def stubborn_then_faithful(messages, state):
        asked.append(messages)
        if len(asked) == 1:
            return turn("[WALK_AWAY]", talk="Goodbye.")
        return turn(decided_in(messages), talk="Let us talk about it.")

    seat = Narrated("rule:linear", stubborn_then_faithful, force="prompt")
    first = seat.play(game, role)
    assert first.played is None and first.retry and first.to_move == role
    assert first.error.lower().startswith("illegal") and "decided move" in first.error, first.error
    assert first.narration["force"] == "prompt"
    assert {c["kind"] for c in first.narration["contradictions"]} == {"leaves_without_leaving"}
    second = seat.play(game, role)
    assert second.error is None and second.played == "submit"
    # The retry was asked after the correction, with a fresh brief last.
    assert any("decided move" in m["content"] for m in asked[1][:-1] if m["role"] == "user")
    assert asked[1][-1]["content"].startswith(BRIEF_START)


def test_a_callable_decider_answers_an_action_line_or_a_whole_completion():
    game = craigslist()
    role = game.to_move
    seen = []

    def bare(messages, state):
        seen.append(state)
        return offer(state)

    step = Narrated(bare, faithful).play(game, role)
    assert step.narration["decided"] == offer(seen[0]) and step.played == "submit"
    game.step(turn("[REJECT_DEAL]"), role=game.to_move)

    def whole(messages, state):
        return turn("[WALK_AWAY]", talk="Bye.")

    step = Narrated(whole, faithful).play(game, role)
    assert step.narration["decided"] == "[WALK_AWAY]" and step.played == "walk_away"
    assert game.outcome["kind"] == "walk_away" and game.outcome["by"] == role


def test_a_decider_that_decides_nothing_is_an_error_naming_it():
    game = craigslist()
    with pytest.raises(ValueError, match="no action line"):
        Narrated(lambda m, s: "Talk: I have no idea.", faithful).play(game)
    with pytest.raises(ValueError, match="decider `rule:nobody`"):
        Narrated("rule:nobody", faithful).play(game)
    with pytest.raises(dealgym.NotYourTurnError):
        game.decide(next(r for r in game.roles if r != game.to_move), "rule:linear")


def test_grammar_and_unknown_forces_are_refused_with_what_to_use():
    with pytest.raises(ValueError, match="constrained decoding"):
        Narrated("rule:linear", faithful, force="grammar")
    with pytest.raises(ValueError, match="'appended' or 'prompt'"):
        Narrated("rule:linear", faithful, force="loud")
    with pytest.raises(ValueError, match="rule:NAME"):
        Narrated("linear", faithful)


def test_a_narration_the_step_cannot_read_is_refused_before_anything_is_played():
    game = craigslist()
    role = game.to_move
    for narration, error in [
        ({"decided": "[REJECT_DEAL]"}, ValueError),
        ({"decided": "[REJECT_DEAL]", "brief": "b", "force": "loud"}, ValueError),
        ({"decided": "[REJECT_DEAL]", "brief": "b", "contradictions": []}, ValueError),
        ("[REJECT_DEAL]", TypeError),
    ]:
        with pytest.raises(error):
            game.step({"text": turn("[REJECT_DEAL]"), "narration": narration}, role=role)
    with pytest.raises(dealgym.TokenError, match="narrated"):
        game.step(
            {
                "text": turn("[REJECT_DEAL]"),
                "narration": {"decided": "[REJECT_DEAL]", "brief": "b"},
                "completion_ids": [1, 2],
            },
            role=role,
        )
    assert game.messages(role) == dealgym.Game("craigslist", seed=3).messages(role)


def test_a_narrated_opponent_plays_the_single_seat_env_and_its_turns_are_in_info_and_record(
    tmp_path, replay_verify
):
    narrated_turns = []

    def chatty(messages, state):
        narrated_turns.append(decided_in(messages))
        return "Thought: Fine.\nTalk: Deal, I accept!\n"

    path = tmp_path / "narrated.jsonl"
    with dealgym.RecordWriter(str(path)) as writer:
        env = DealEnv("craigslist", opponent=Narrated("rule:conceder", chatty))
        obs, info = env.reset(seed=5)
        seen = [info.get("narration", [])]
        done = False
        while not done:
            obs, reward, terminated, truncated, info = env.step(turn(offer(obs["state"])))
            seen.append(info.get("narration", []))
            done = terminated or truncated
        writer.write(env.game)
    narrations = [n for step in seen for n in step]
    assert narrations and len(narrations) == len(narrated_turns)
    assert [n["decided"] for n in narrations] == narrated_turns
    # "Deal, I accept!" beside a move that is not an acceptance is counted on that turn.
    for n in narrations:
        accepts = n["decided"].startswith("[ACCEPT_DEAL]")
        kinds = {c["kind"] for c in n["contradictions"]}
        assert ("accepts_without_accepting" in kinds) == (not accepts), n
    record = json.loads(path.read_text())
    recorded = [t["narration"] for t in record["turns"] if "narration" in t]
    assert [r["decided"] for r in recorded] == narrated_turns
    assert all(t["seat"] == "opponent" for t in record["turns"] if "narration" in t)
    replay_verify(path)


class RecordedChat(OpenAIChat):
    """An ``OpenAIChat`` that keeps what it answered."""

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        self.answers = []

    def __call__(self, messages, state):
        answer = super().__call__(messages, state)
        self.answers.append(answer)
        return answer


def test_an_openai_narrators_own_action_line_gives_way_to_the_decided_one(dealgym_bin, repo_root):
    with mock_endpoint(dealgym_bin, repo_root) as url:
        game = craigslist()
        role = game.to_move
        chat = RecordedChat(url, "mock")
        step = Narrated("rule:linear", chat).play(game, role)
    assert step.error is None and step.played == "submit", step
    assert step.narration["contradictions"] == []
    [answer] = chat.answers
    # The mock narrator ends with the line itself; the words before it are kept, the line
    # written after them is the decided one.
    assert answer.rstrip().endswith(step.narration["decided"]), answer
    reply = game.messages(role)[-1]["content"]
    assert reply == game.append_decided(role, answer, step.narration["decided"])
    assert reply.endswith(f"Action: {step.narration['decided']}") and reply.count("Action:") == 1


def test_a_table_seat_is_narrated_with_its_scripted_party_deciding():
    game = dealgym.Game("deliberation", seed=2)
    role = game.to_move
    line = game.decide(role, "rule:deliberation")
    step = Narrated("rule:deliberation", faithful).play(game, role)
    assert step.error is None, step
    assert step.narration["decided"] == line
    record_turns = game.messages(role)
    assert record_turns[-2]["content"] == step.narration["brief"]
    with pytest.raises(ValueError, match="rule:deliberation"):
        game.decide(game.to_move, "rule:linear")


def test_a_narrated_agent_of_the_aec_env_has_its_narration_in_its_info():
    pytest.importorskip("pettingzoo")
    from dealgym.pettingzoo import DealAECEnv

    env = DealAECEnv("craigslist")
    env.reset(seed=3)
    agent = env.agent_selection
    env.step(Narrated("rule:linear", priced(1)).turn(env.game, agent))
    narration = env.infos[agent]["narration"]
    assert narration["decided"].startswith("[SUBMIT_DEAL]")
    assert [c["kind"] for c in narration["contradictions"]] == ["other_price"]
    other = env.agent_selection
    env.step(turn("[REJECT_DEAL]"))
    assert "narration" not in env.infos[other]


def test_appended_cuts_at_the_first_action_label_after_the_reasoning():
    game = craigslist()
    role = game.to_move
    line = game.decide(role, "rule:linear")
    words = "Thought: ok\nTalk: Here it is.\n**Actions**: [WALK_AWAY]"
    assert game.append_decided(role, words, line) == f"Thought: ok\nTalk: Here it is.\nAction: {line}"
    assert game.append_decided(role, "Talk: fine", line) == f"Talk: fine\nAction: {line}"
    thinking = "<think>Action: maybe</think>\nTalk: fine\nAction: [WALK_AWAY]"
    assert game.append_decided(role, thinking, line) == (
        f"<think>Action: maybe</think>\nTalk: fine\nAction: {line}"
    )


def test_action_text_reads_a_completion_or_a_bare_line():
    assert _core.action_text(turn("[SUBMIT_DEAL] price:120")) == "[SUBMIT_DEAL] price:120"
    assert _core.action_text(" [ACCEPT_DEAL] ") == "[ACCEPT_DEAL]"
    assert _core.action_text("Talk: nothing decided") is None
