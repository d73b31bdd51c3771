"""Many episodes stepped at once. ``step_many`` steps every game in one call into the engine,
with the interpreter's lock released while it works; ``astep_many`` is the same for asyncio, on
a worker thread, so the event loop runs on (an HTTP model client, say) while the engine steps."""

from __future__ import annotations

import asyncio
from typing import Any, Mapping, Sequence

from ._core import Game, StepInfo, step_many

__all__ = ["astep_many", "step_many"]


async def astep_many(
    games: Sequence[Game], actions: Sequence[str | Mapping[str, Any]]
) -> list[StepInfo]:
    """``step_many`` awaited: every action is checked before any game is stepped."""
    return await asyncio.to_thread(step_many, games, actions)
