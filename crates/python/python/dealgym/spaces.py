"""Gymnasium spaces for text negotiation: what PettingZoo's ``api_test`` and Gymnasium's
``check_env`` accept for an observation of chat messages and a structured state, and for an
action that is a model's raw completion.

An observation is a ``Dict`` of ``prompt`` (the last message the seat was sent), ``messages``
(every chat message the seat's model is sent, exactly as the CLI sends them) and ``state`` (the
structured state of the seat: see ``dealgym._core.Game.observe``). There is deliberately no
``"observation"`` key: PettingZoo's checker compares the dtypes of that key's leaves, and text
has none.
"""

from __future__ import annotations

from typing import Any

from gymnasium.spaces import Dict as DictSpace
from gymnasium.spaces import Space, Text

from . import _core

#: The longest message a space admits (characters).
MAX_TEXT = 1 << 20

#: The most bytes one completion may hold as a record writes it: the engine's one limit
#: (``dealgym-core``'s ``DEFAULT_MAX_COMPLETION_BYTES``), read from ``dealgym._core``.
MAX_COMPLETION_BYTES: int = _core.MAX_COMPLETION_BYTES


#: The longest text ``sample()`` draws: a random policy's completion, not a megabyte of it.
SAMPLE_TEXT = 256


class Utf8Text(Text):
    """Any ``str`` up to ``max_length`` characters, in any script (Gymnasium's ``Text`` admits
    only its charset); samples alphanumerics, as ``Text`` does, at most ``SAMPLE_TEXT`` long."""

    def __init__(self, max_length: int = MAX_TEXT, *, seed: Any = None) -> None:
        super().__init__(max_length=max_length, min_length=0, seed=seed)

    def sample(self, mask: Any = None, probability: Any = None) -> str:
        if mask is None and probability is None:
            length = int(self.np_random.integers(0, min(self.max_length, SAMPLE_TEXT) + 1))
            return super().sample(mask=(length, None))
        return super().sample(mask=mask, probability=probability)

    def contains(self, x: Any) -> bool:
        return isinstance(x, str) and len(x) <= self.max_length

    def __repr__(self) -> str:
        return f"Utf8Text({self.max_length})"


class Completion(Utf8Text):
    """An action: the raw completion text, or a dict with its ``text`` and, in token-exact play,
    the sampled ``completion_ids`` and their ``logprobs``. It admits what a step takes: at most
    ``MAX_COMPLETION_BYTES`` bytes as a record writes the completion (text, reasoning and tool
    calls), the one limit a step in process refuses past (``CompletionTooLargeError``) and
    ``dealgym serve`` holds a step to by default; ``max_length`` is that many characters, the
    most such a completion can have."""

    def __init__(self, max_length: int = MAX_COMPLETION_BYTES, *, seed: Any = None) -> None:
        super().__init__(max_length, seed=seed)

    def contains(self, x: Any) -> bool:
        if not isinstance(x, (str, dict)):
            return False
        if isinstance(x, str) and len(x) > self.max_length:
            return False
        try:
            _core.check_action(x)
        except (TypeError, ValueError):
            return False
        return True

    def __repr__(self) -> str:
        return f"Completion({self.max_length})"


class Messages(Space):
    """A chat: a list of ``{"role": str, "content": str}``."""

    def __init__(self, seed: Any = None) -> None:
        super().__init__(shape=None, dtype=None, seed=seed)

    @property
    def is_np_flattenable(self) -> bool:
        return False

    def sample(self, mask: Any = None, probability: Any = None) -> list[dict[str, str]]:
        return [{"role": "user", "content": "Hello."}]

    def contains(self, x: Any) -> bool:
        return isinstance(x, list) and all(
            isinstance(m, dict)
            and isinstance(m.get("role"), str)
            and isinstance(m.get("content"), str)
            for m in x
        )

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Messages)

    def __repr__(self) -> str:
        return "Messages()"


class JsonObject(Space):
    """Any JSON object (a ``dict``): the seat's structured state."""

    def __init__(self, seed: Any = None) -> None:
        super().__init__(shape=None, dtype=None, seed=seed)

    @property
    def is_np_flattenable(self) -> bool:
        return False

    def sample(self, mask: Any = None, probability: Any = None) -> dict[str, Any]:
        return {}

    def contains(self, x: Any) -> bool:
        return isinstance(x, dict)

    def __eq__(self, other: object) -> bool:
        return isinstance(other, JsonObject)

    def __repr__(self) -> str:
        return "JsonObject()"


class TokenIds(Space):
    """Token-exact play: ``{"prompt_ids": [int], "drift": None | dict}`` for the seat to move
    (see ``dealgym.tokens``), ``None`` for a seat that is not."""

    def __init__(self, seed: Any = None) -> None:
        super().__init__(shape=None, dtype=None, seed=seed)

    @property
    def is_np_flattenable(self) -> bool:
        return False

    def sample(self, mask: Any = None, probability: Any = None) -> None:
        return None

    def contains(self, x: Any) -> bool:
        if x is None:
            return True
        return (
            isinstance(x, dict)
            and isinstance(x.get("prompt_ids"), list)
            and all(isinstance(i, int) for i in x["prompt_ids"])
            and (x.get("drift") is None or isinstance(x["drift"], dict))
        )

    def __eq__(self, other: object) -> bool:
        return isinstance(other, TokenIds)

    def __repr__(self) -> str:
        return "TokenIds()"


def observation_space(token_exact: bool = False) -> DictSpace:
    """The space of one seat's observation: ``prompt``, ``messages`` and ``state``, and in
    token-exact play ``token_ids``."""
    leaves: dict[str, Space] = {"prompt": Utf8Text(), "messages": Messages(), "state": JsonObject()}
    if token_exact:
        leaves["token_ids"] = TokenIds()
    return DictSpace(leaves)


def action_space() -> Completion:
    """The space of one seat's action: its raw completion."""
    return Completion()
