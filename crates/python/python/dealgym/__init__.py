"""dealgym in Python, in process: two language models negotiating, stepped by raw completions.

The engine is Rust (``dealgym._core``): parsing, flipping, regulation, termination, scoring and
records are the same code as the ``dealgym`` command line, so a record written here passes
``dealgym replay --verify``.
"""

from dealgym._core import (
    MAX_COMPLETION_BYTES,
    CompletionTooLargeError,
    EpisodeEndedError,
    Game,
    GameSnapshot,
    NotYourTurnError,
    RecordWriter,
    ResetNeededError,
    ScenarioError,
    StepInfo,
    TokenError,
    choose,
    families,
    roles,
    scenario_ids,
    step_many,
    table_roles,
    table_scenario_ids,
)



class TableGame(Game):
    """Deprecated alias, for one release: ``Game("deliberation", ...)``, the one game class of
    every family. Its constructor takes the table's arguments (``scenario_id`` first, then
    ``scenario_file``, ``index``, ``seed``, ``member``, ``retries``, ``regulated``, ``format``,
    ``players``, ``run_id``) and its ``step`` the old order, ``step(role, action)``;
    ``Game.step`` is ``step(action, role=...)``."""

    def __new__(cls, scenario_id=None, **kwargs):
        import warnings

        warnings.warn(
            "dealgym.TableGame is deprecated: use dealgym.Game('deliberation', scenario_id=...), "
            "whose step is step(action, role=...)",
            DeprecationWarning,
            stacklevel=2,
        )
        return super().__new__(cls, "deliberation", scenario_id=scenario_id, **kwargs)

    def __init__(self, *args, **kwargs) -> None:
        pass

    def step(self, role, action):  # type: ignore[override]
        """The old order: ``role`` first. ``Game.step(action, role=role)``."""
        return super().step(action, role=role)


#: Deprecated alias, for one release: a table's step answers the one ``StepInfo``.
TableStepInfo = StepInfo

__all__ = [
    "MAX_COMPLETION_BYTES",
    "CompletionTooLargeError",
    "EpisodeEndedError",
    "Game",
    "GameSnapshot",
    "NotYourTurnError",
    "RecordWriter",
    "ResetNeededError",
    "ScenarioError",
    "StepInfo",
    "TableGame",
    "TableStepInfo",
    "TokenError",
    "choose",
    "families",
    "roles",
    "scenario_ids",
    "step_many",
    "table_roles",
    "table_scenario_ids",
]
