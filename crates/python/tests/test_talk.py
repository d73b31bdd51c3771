"""The talk ablation from Python: ``rules={"talk": "off"}`` goes through the same episode
settings as ``[episode] talk``, so the other seat reads each move's action and terms without
its Talk, the state and the record name the setting, and an unknown value is refused. The
silent fixed-concession baseline plays the opponent's seat like any rule player."""

from __future__ import annotations

import pytest

from conftest import turn
from dealgym import Game


def test_talk_off_withholds_the_talk_and_names_the_setting():
    game = Game("casino", seed=7, first_mover="agent_1", rules={"talk": "off"})
    game.step(turn("[SUBMIT_DEAL] food:3 water:1 firewood:0", talk="SECRET-TALK"))
    other = game.to_move
    seen = game.messages(other)[-1]["content"]
    assert seen == "Action: [SUBMIT_DEAL] food:0 water:2 firewood:3"
    assert "withheld" in game.messages(other)[0]["content"]
    assert game.state(other)["rules"]["talk"] == "off"
    game.step(turn("[ACCEPT_DEAL]", talk="SECRET-TOO"))
    record = game.record()
    assert record["setup"]["rules"]["talk"] == "off"
    assert all("SECRET" not in (t.get("forwarded") or "") for t in record["turns"])


def test_talk_on_is_the_default_and_is_left_out():
    game = Game("casino", seed=7, first_mover="agent_1")
    game.step(turn("[SUBMIT_DEAL] food:3 water:1 firewood:0", talk="Hello there."))
    assert game.messages(game.to_move)[-1]["content"].startswith("Talk: Hello there.")
    assert "talk" not in game.state(game.to_move)["rules"]


def test_an_unknown_talk_setting_is_refused():
    with pytest.raises(Exception, match="talk"):
        Game("casino", seed=7, rules={"talk": "whisper"})


def test_the_fixed_concession_baseline_plays_without_talk():
    game = Game("craigslist", seed=3, learner_role="buyer", first_mover="buyer",
                opponent="rule:fixed-concession")
    game.step(turn("[SUBMIT_DEAL] price:1"))
    # The rule seller answered in Rust: its move reaches the buyer with an empty Talk.
    answer = game.messages("buyer")[-1]["content"]
    first, action = answer.split("\n")
    assert first.strip() == "Talk:" and action.startswith("Action: ["), answer
