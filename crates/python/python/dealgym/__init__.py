"""dealgym in Python, in process: two language models negotiating, stepped by raw completions.

The engine is Rust (``dealgym._core``): parsing, flipping, regulation, termination, scoring and
records are the same code as the ``dealgym`` command line, so a record written here passes
``dealgym replay --verify``.
"""

from dealgym._core import (
    EpisodeEndedError,
    Game,
    GameSnapshot,
    NotYourTurnError,
    RecordWriter,
    ScenarioError,
    StepInfo,
    TableGame,
    TableStepInfo,
    TokenError,
    choose,
    families,
    roles,
    scenario_ids,
    step_many,
    table_roles,
    table_scenario_ids,
)

__all__ = [
    "EpisodeEndedError",
    "Game",
    "GameSnapshot",
    "NotYourTurnError",
    "RecordWriter",
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
