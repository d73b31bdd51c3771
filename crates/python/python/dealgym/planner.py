"""Propose-then-commit from Python (the DialogXpert setting): score candidate completions with
any callable value model ``value(state_text, candidate) -> float`` and commit the best, with the
engine's own selection rule; look ahead with ``Game.snapshot()`` / ``Game.restore()``.

    from dealgym import Game
    from dealgym.planner import commit

    game = Game("craigslist", seed=1, opponent="rule:boulware")
    candidates = [my_model(game.observe(role)["messages"]) for _ in range(4)]
    info, chosen, values = commit(game, candidates, value=my_q_network)
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

from dealgym._core import Game, StepInfo, choose

ValueModel = Callable[[str, str], float]


def values_of(game: Game, candidates: Sequence[str], value: ValueModel, role: str | None = None) -> list[float]:
    """``value(state, candidate)`` for each candidate, the state being ``game.state_text`` of the
    role to move (or ``role``)."""
    who = role or game.to_move
    if who is None:
        raise ValueError("the episode has ended: no role to move")
    state = game.state_text(who)
    return [float(value(state, c)) for c in candidates]


def commit(
    game: Game, candidates: Sequence[str], value: ValueModel | None = None
) -> tuple[StepInfo, int, list[float] | None]:
    """Step the candidate the value model ranks first (the first candidate without one):
    ``(step info, chosen index, values)``."""
    if not candidates:
        raise ValueError("no candidates to commit")
    values = values_of(game, candidates, value) if value is not None else None
    chosen = choose(values) if values is not None else 0
    return game.step(candidates[chosen]), chosen, values

