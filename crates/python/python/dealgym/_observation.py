"""``Observation``: what ``Game.observe(role)`` answers, a ``dict`` of ``prompt``, ``messages`` and
``state`` whose ``state`` is converted to Python only when it is first read.

A policy that reads the chat alone (the README's loop: ``my_model(obs["messages"])``) then never
pays for the structured state, three quarters of an observation's cost (issue 43). The state is
taken in Rust when the observation is made, so reading it later, after more steps, gives the
state of that moment, the same value an eager dict held.

Every way Python reads a dict sees ``state``: ``obs["state"]``, ``get``, ``in``, iteration,
``keys``/``items``/``values``, ``len``, ``==``, ``repr``, ``dict(obs)``, ``{**obs}``, ``|``,
``copy()`` (a plain dict, as dict's own), ``copy.copy``/``deepcopy``/``pickle`` and
``json.dumps``. Until it is read, the dict's own storage holds the pending state (a private
``_core`` object) under ``state``: C code that reads the storage directly (``orjson``, for one)
meets an object it cannot encode and raises, never a dict without its state. Call
``obs.get("state")`` or ``dict(obs)`` before handing an observation to such a library.
"""

from __future__ import annotations

from typing import Any

STATE = "state"


class Observation(dict):
    """A seat's observation: a ``dict`` whose ``state`` is built on first read (see the module)."""

    # `_state`: the state as the engine took it (a private `_core` object), until it is read.
    __slots__ = ("_state",)

    def _fill(self) -> None:
        pending = getattr(self, "_state", None)
        if pending is not None:
            self._state = None
            # Unless the caller replaced or removed it, `state` still holds the pending state.
            if dict.get(self, STATE) is pending:
                dict.__setitem__(self, STATE, pending.build())

    def __getitem__(self, key: Any) -> Any:
        if key == STATE:
            self._fill()
        return dict.__getitem__(self, key)

    # Everything else that reads the dict builds the state first, then is dict's own.

    def get(self, key: Any, default: Any = None) -> Any:
        self._fill()
        return dict.get(self, key, default)

    def __contains__(self, key: object) -> bool:
        self._fill()
        return dict.__contains__(self, key)

    def __iter__(self):
        self._fill()
        return dict.__iter__(self)

    def __reversed__(self):
        self._fill()
        return dict.__reversed__(self)

    def __len__(self) -> int:
        self._fill()
        return dict.__len__(self)

    def keys(self):
        self._fill()
        return dict.keys(self)

    def items(self):
        self._fill()
        return dict.items(self)

    def values(self):
        self._fill()
        return dict.values(self)

    def __eq__(self, other: object) -> bool:
        self._fill()
        if isinstance(other, Observation):
            other._fill()
        return dict.__eq__(self, other)

    def __ne__(self, other: object) -> bool:
        equal = self.__eq__(other)
        return equal if equal is NotImplemented else not equal

    __hash__ = None  # type: ignore[assignment]  # as dict's

    def __repr__(self) -> str:
        self._fill()
        return dict.__repr__(self)

    def __or__(self, other: Any) -> Any:
        self._fill()
        return dict.__or__(self, other)

    def __ror__(self, other: Any) -> Any:
        self._fill()
        return dict.__ror__(self, other)



    def __delitem__(self, key: Any) -> None:
        self._fill()
        dict.__delitem__(self, key)


    def setdefault(self, key: Any, default: Any = None) -> Any:
        self._fill()
        return dict.setdefault(self, key, default)

    def pop(self, key: Any, *default: Any) -> Any:
        self._fill()
        return dict.pop(self, key, *default)

    def popitem(self) -> tuple[Any, Any]:
        self._fill()
        return dict.popitem(self)

    def clear(self) -> None:
        self._state = None
        dict.clear(self)

    def copy(self) -> dict[str, Any]:
        # As dict's own `copy` does for a subclass: a plain dict of the same items.
        self._fill()
        return dict(dict.items(self))

    def __reduce_ex__(self, protocol: Any) -> Any:
        # copy.copy, copy.deepcopy and pickle: an Observation of the same items, state built.
        self._fill()
        return (Observation, (), None, None, iter(dict.items(self)))
