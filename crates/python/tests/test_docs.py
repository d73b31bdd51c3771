"""What the docs show a newcomer is what the code does: the well-formed completion the README and
the PettingZoo page show is played by the engine as the move they say it is."""

from __future__ import annotations

import pathlib
import re

import pytest

from conftest import REPO
from dealgym import Game

#: The line above the fenced completion on each page that shows one.
MARKER = "<!-- a well-formed completion: crates/python/tests/test_docs.py plays it -->"
PAGES = ["README.md", "docs/src/python/pettingzoo.md"]


def shown_completion(page: str) -> str:
    """The fenced block right after the marker on ``page``."""
    text = (REPO / page).read_text()
    assert text.count(MARKER) == 1, f"{page}: the completion's marker, once"
    after = text.split(MARKER, 1)[1]
    found = re.match(r"\s*```text\n(.*?)\n```", after, re.S)
    assert found, f"{page}: a ```text block right after the marker"
    return found.group(1)


@pytest.mark.parametrize("page", PAGES)
def test_the_completion_the_docs_show_is_format_ok_and_the_move_they_say(page):
    completion = shown_completion(page)
    game = Game("casino", seed=0)
    role = game.to_move
    assert "Thought:" in game.observe(role)["messages"][0]["content"], "the system prompt teaches it"
    info = game.step(completion, role=role)
    assert not info.retry and info.error is None, info.error
    assert info.played == "submit"
    turn = game.state(role)["last_turn"]
    offer = {"kind": "submit", "terms": {"food": 2, "water": 3, "firewood": 0}}
    assert turn["format_ok"] is True and turn["read"] == turn["played"] == offer, turn
    assert game.state(role)["standing_offer"] == {"by": role, "terms": offer["terms"]}


def test_the_readme_and_the_pettingzoo_page_show_the_same_completion():
    assert shown_completion(PAGES[0]) == shown_completion(PAGES[1])


def test_a_completion_that_breaks_the_grammar_is_not_what_the_docs_show():
    """The check can fail: the shown turn without its Talk line is read, but not format-ok, and
    without its Action line it is no move at all."""
    shown = shown_completion(PAGES[0]).splitlines()
    for left_out, played in [("Talk:", True), ("Action:", False)]:
        broken = "\n".join(line for line in shown if not line.startswith(left_out))
        game = Game("casino", seed=0)
        role = game.to_move
        info = game.step(broken, role=role)
        assert game.state(role)["last_turn"]["format_ok"] is False, left_out
        assert (info.played is not None) == played and info.retry != played, (left_out, info)


#: The line above the market example the PettingZoo page runs.
MARKET_MARKER = "<!-- a market that runs: crates/python/tests/test_docs.py runs it -->"


def test_the_market_example_on_the_pettingzoo_page_runs_to_its_end(capsys):
    pytest.importorskip("pettingzoo")
    text = (REPO / PAGES[1]).read_text()
    assert text.count(MARKET_MARKER) == 1, "the market example's marker, once"
    found = re.match(r"\s*```python\n(.*?)\n```", text.split(MARKET_MARKER, 1)[1], re.S)
    assert found, "a ```python block right after the marker"
    scope: dict = {}
    exec(compile(found.group(1), "pettingzoo.md", "exec"), scope)
    env = scope["env"]
    assert env.agents == [] and env.game.done, "it played the market to its end"
    assert env.possible_agents == ["buyer_1", "buyer_2"]
    assert set(env.game.rewards) == set(env.game.roles)
    printed = capsys.readouterr().out.splitlines()
    assert printed[0] == "['buyer_1', 'buyer_2']", printed


#: The line above the narrated seat's example the Python chapter runs.
NARRATED_MARKER = "<!-- a narrated seat that runs: crates/python/tests/test_docs.py runs it -->"


def test_the_narrated_seat_example_on_the_python_page_plays_its_decided_move(capsys):
    text = (REPO / "docs/src/python/index.md").read_text()
    assert text.count(NARRATED_MARKER) == 1, "the narrated example's marker, once"
    found = re.match(r"\s*```python\n(.*?)\n```", text.split(NARRATED_MARKER, 1)[1], re.S)
    assert found, "a ```python block right after the marker"
    scope: dict = {}
    exec(compile(found.group(1), "index.md", "exec"), scope)
    step, game = scope["step"], scope["game"]
    assert step.error is None and step.played == "submit"
    reply = game.messages(step.role)[-1]["content"]
    assert reply.endswith("Action: " + step.narration["decided"]), reply
    assert capsys.readouterr().out.strip() == f"{step.narration['decided']} []"
