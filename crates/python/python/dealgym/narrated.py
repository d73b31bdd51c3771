"""Narrated seats: strategy apart from language. A decider picks each move — a built-in
negotiator (``"rule:linear"``, any ``rule:NAME`` a ``Game``'s ``opponent=`` takes; at a table
``"rule:deliberation"``) or a Python callable ``(messages, state) -> str`` that answers an action
line or a whole completion — and a narrator, any opponent (an ``OpenAIChat``, a function
``(messages, state) -> completion``), writes the Thought and Talk around it.

This module only asks the two. What a narrated turn is stays the engine's, as ``dealgym run``'s
``narrate:DECIDER+MODEL`` player has it: the brief the narrator is sent
(``Game.narration_brief``), where its words end and how the decided line is written after them
(``Game.append_decided``), and, once stepped, the brief kept in the seat's history before its
reply, the turn held to the decided move (another move is an ``illegal`` turn, corrected and
asked again, then forfeited) and where its Talk contradicts the move
(``StepInfo.narration["contradictions"]``, the record's ``narration``).
"""

from __future__ import annotations

from typing import Any, Callable, Union

from . import _core
from .opponents import OpenAIChat, Opponent, Script, opponent_of

#: What decides a narrated seat's moves: a built-in player's spec, or a callable answering the
#: seat's messages and state with an action line (``[SUBMIT_DEAL] price:120``) or a completion.
Decider = Union[str, Callable[[list[dict[str, str]], dict[str, Any]], str]]

#: The ways a Python narrated seat holds its action line to the decided move.
FORCES = ("appended", "prompt")


class Narrated:
    """A seat whose moves ``decider`` picks and whose words ``narrator`` writes.

    ``force="appended"`` (the default): the narrator's reply is cut at its first action label
    after any reasoning (``Action:``, ``**ACTIONS**:``, any case; xml ``<action>``), as
    ``dealgym run``'s narrated player cuts it, and the decided action line is written after its
    words. ``force="prompt"``: the narrator is asked to end with the decided line and writes the
    whole turn; a turn that plays another move is refused by the engine and asked again.
    ``"grammar"`` needs an endpoint's constrained decoding, which a Python narrator has not.

    Play it as a single-seat environment's opponent (``DealEnv(opponent=Narrated(...))``), or on
    a ``Game`` yourself: ``seat.play(game, role)`` steps one turn of ``role``.
    """

    def __init__(self, decider: Decider, narrator: Any, *, force: str = "appended") -> None:
        if force == "grammar":
            raise ValueError(
                "force='grammar' holds the action line by an endpoint's constrained decoding, "
                "which a Python narrator has not: use force='appended' (the decided line is "
                "written after the narrator's words) or force='prompt' (asked for and checked by "
                "the engine); `dealgym run` narrates with grammar (narrate:DECIDER+MODEL)"
            )
        if force not in FORCES:
            raise ValueError(f"force {force!r}: 'appended' or 'prompt'")
        if isinstance(decider, str):
            if not decider.startswith("rule:"):
                raise ValueError(
                    f"decider {decider!r}: a built-in player's spec (rule:NAME) or a callable "
                    "(messages, state) -> action line"
                )
        elif not callable(decider):
            raise TypeError(
                "a decider is a spec (rule:NAME) or a callable (messages, state) -> action line, "
                f"not {type(decider).__name__}"
            )
        if isinstance(narrator, Narrated):
            raise TypeError("a narrator writes words: a model or a callable, not a narrated seat")
        self.decider = decider
        self.narrator: Opponent = opponent_of(narrator)
        self.force = force

    def restart(self) -> None:
        """Start a scripted decider or narrator from its first entry (a new episode)."""
        for part in (self.decider, self.narrator):
            if isinstance(part, Script):
                part.restart()

    def decide(self, game: _core.Game, role: str) -> str:
        """The action line ``role``, the role to move, plays now: the built-in decider's
        (``Game.decide``), or the callable decider's answer read as an action line."""
        if isinstance(self.decider, str):
            return game.decide(role, self.decider)
        seen = game.observe(role)
        answer = self.decider(seen["messages"], seen["state"])
        if not isinstance(answer, str):
            raise TypeError(
                f"the decider answered {type(answer).__name__}, not an action line (str)"
            )
        line = _core.action_text(answer)
        if line is None:
            raise ValueError(
                f"the decider's answer has no action line to narrate: {answer[:120]!r}"
            )
        return line

    def turn(self, game: _core.Game, role: str | None = None) -> dict[str, Any]:
        """``role``'s narrated turn (the role to move by default), not yet played: the action
        dict ``Game.step`` takes, with the completion's ``text`` and its ``narration`` (the
        ``decided`` line, the ``brief`` the narrator was sent, the ``force``)."""
        role = role if role is not None else game.to_move
        if role is None:
            raise _core.EpisodeEndedError("the episode has ended: no seat is to move")
        decided = self.decide(game, role)
        brief = game.narration_brief(role, decided)
        seen = game.observe(role)
        asked = [*seen["messages"], {"role": "user", "content": brief}]
        written = self.narrator(asked, seen["state"])
        if not isinstance(written, str):
            raise TypeError(f"the narrator answered {type(written).__name__}, not text (str)")
        text = game.append_decided(role, written, decided) if self.force == "appended" else written
        narration = {"decided": decided, "brief": brief, "force": self.force}
        return {"text": text, "narration": narration}

    def play(self, game: _core.Game, role: str | None = None) -> _core.StepInfo:
        """Step ``role``'s narrated turn (the role to move by default) on ``game``; the step's
        ``narration`` holds the contradictions the engine found."""
        role = role if role is not None else game.to_move
        return game.step(self.turn(game, role), role=role)

    def __repr__(self) -> str:
        decider = self.decider if isinstance(self.decider, str) else type(self.decider).__name__
        narrator = type(self.narrator).__name__
        return f"Narrated(decider={decider!r}, narrator={narrator}, force={self.force!r})"
