"""Type stubs of ``dealgym._core``, the Rust engine bound with PyO3."""

from collections.abc import Mapping, Sequence
from os import PathLike
from types import TracebackType
from typing import Any, final

class ScenarioError(ValueError):
    """An unknown family, role, scenario id or index: the message names it and the choices."""

class EpisodeEndedError(RuntimeError):
    """A step after the episode ended: the message names how it ended."""

class NotYourTurnError(ValueError):
    """A step for a role that is not to move: the message names the role to move."""

class TokenError(ValueError):
    """Token-exact play out of order: sampled ids without prompt ids for this turn, a text step
    after prompt ids were set, logprobs that do not pair with the ids, or a seat whose earlier
    turns have no ids."""

@final
class StepInfo:
    """What one step did."""

    @property
    def role(self) -> str: ...
    @property
    def played(self) -> str | None: ...
    @property
    def retry(self) -> bool: ...
    @property
    def terminated(self) -> bool: ...
    @property
    def truncated(self) -> bool: ...
    @property
    def done(self) -> bool: ...
    @property
    def to_move(self) -> str | None: ...
    @property
    def outcome(self) -> str | None: ...

@final
class Game:
    """One episode of a family's scenario, both seats played from outside with raw completions."""

    def __init__(
        self,
        family: str,
        *,
        scenario_id: str | None = None,
        index: int | None = None,
        seed: int = 0,
        member: int = 0,
        learner_role: str | None = None,
        first_mover: str | None = None,
        rules: Mapping[str, Any] | None = None,
        rewards: Mapping[str, Any] | None = None,
        players: Mapping[str, str] | None = None,
        run_id: str | None = None,
        opponent: str | None = None,
        training: dict[str, Any] | None = None,
    ) -> None:
        """``opponent="rule:NAME"`` (boulware, tough, linear, conceder) plays the opponent's
        seat in Rust after each step; without it both seats are played from Python.
        ``member`` tells apart the episodes of a GRPO group: one seed and scenario (so one
        setup), each member its own episode id and sampling seeds. ``training={"run": NAME,
        "step": N}`` names the training run and optimizer step whose policy plays: the record
        carries it (``dealgym report`` charts its figures per step) and the run id made
        without ``run_id`` depends on it."""
    @property
    def family(self) -> str: ...
    @property
    def scenario_id(self) -> str: ...
    @property
    def roles(self) -> tuple[str, str]: ...
    @property
    def learner_role(self) -> str: ...
    @property
    def training(self) -> dict[str, Any] | None: ...
    @property
    def seed(self) -> int: ...
    @property
    def run_id(self) -> str: ...
    @property
    def to_move(self) -> str | None: ...
    @property
    def done(self) -> bool: ...
    @property
    def terminated(self) -> bool: ...
    @property
    def truncated(self) -> bool: ...
    @property
    def rewards(self) -> dict[str, float] | None: ...
    @property
    def outcome(self) -> dict[str, Any] | None: ...
    def step(self, action: str | Mapping[str, Any], *, role: str | None = None) -> StepInfo:
        """``action``: the completion text, or ``{"text", "reasoning"?, "role"?}`` and, in
        token-exact play, ``"completion_ids"``, ``"logprobs"``? and ``"finish_reason"``?; a
        seat acting through tools sends ``{"tool_calls", "text"?}`` (the calls as a chat
        completion's message holds them)."""
    def tools(self, role: str) -> list[dict[str, Any]]:
        """``role``'s moves as OpenAI-style tool definitions, their terms the scenario's own."""
    def observe(self, role: str) -> dict[str, Any]: ...
    def state(self, role: str) -> dict[str, Any]:
        """``observe(role)["state"]`` without the chat."""
    def state_text(self, role: str) -> str:
        """The episode as ``role`` knows it, as one deterministic text: what a value model scores."""
    def snapshot(self) -> GameSnapshot:
        """Freeze the game now, for look-ahead; ``restore`` goes back to it."""
    def restore(self, snapshot: GameSnapshot) -> None:
        """Undo every step since ``snapshot`` (same scenario and setup, else ``ValueError``)."""
    def outcome_for(self, role: str) -> dict[str, Any] | None:
        """How the episode ended from ``role``'s side; ``None`` while it runs."""
    def transcript(self) -> list[tuple[str, str]]:
        """``(role, text)`` per move that took effect, as forwarded to the other seat."""
    def record(self) -> dict[str, Any]: ...
    def record_json(self) -> str: ...
    def token_sequence(self, role: str) -> list[int] | None:
        """The ids ``role`` was sent and sampled so far; ``None`` if a turn of it had none."""
    def prompt_messages(
        self, role: str
    ) -> tuple[list[dict[str, str]], list[dict[str, str]] | None]:
        """The messages to render with a generation prompt, and those to render continuing the
        seat's own last message (``None`` on its first token-exact turn)."""
    def set_prompt_ids(
        self, role: str, full: Sequence[int], before: Sequence[int] | None = None
    ) -> dict[str, Any]:
        """Set the prompt ids of ``role``'s turn now from the two renderings; returns
        ``{"prompt_ids", "drift"}``."""

@final
class RecordWriter:
    """Appends the records of finished games to a record file, as ``dealgym run`` writes one.

    A last line a crash cut off is removed first, with a ``RuntimeWarning`` naming the file, the
    byte offset and the bytes cut; a whole last record is never cut."""

    def __init__(self, path: str | PathLike[str]) -> None: ...
    def write(self, game: Game | TableGame) -> None: ...
    @property
    def written(self) -> int: ...
    def close(self) -> None: ...
    def __enter__(self) -> RecordWriter: ...
    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> bool: ...

class GameSnapshot:
    """A game frozen at one point (``Game.snapshot()``)."""
    @property
    def turns(self) -> int: ...

def choose(values: Sequence[float]) -> int:
    """The candidate to commit: the highest value, the first of equals (``ValueError`` if empty)."""

def step_many(games: Sequence[Game], actions: Sequence[str | Mapping[str, Any]]) -> list[StepInfo]: ...
def families() -> list[str]: ...
def roles(family: str) -> tuple[str, str]: ...
def scenario_ids(family: str) -> list[str]: ...

@final
class TableStepInfo:
    """What one step of a table did."""

    @property
    def role(self) -> str: ...
    @property
    def retry(self) -> bool: ...
    @property
    def error(self) -> str | None: ...
    @property
    def terminated(self) -> bool: ...
    @property
    def truncated(self) -> bool: ...
    @property
    def done(self) -> bool: ...
    @property
    def to_move(self) -> str | None: ...
    @property
    def outcome(self) -> str | None: ...

@final
class TableGame:
    """One n-party table (the ``deliberation`` family), every seat named by its role and played
    with raw completions, or in process by the scripted party of its incentive."""

    def __init__(
        self,
        scenario_id: str | None = None,
        *,
        scenario_file: str | PathLike[str] | None = None,
        index: int | None = None,
        seed: int = 0,
        member: int = 0,
        retries: int | None = None,
        regulated: Sequence[str] | None = None,
        format: str | None = None,
        players: Mapping[str, str] | None = None,
        run_id: str | None = None,
    ) -> None: ...
    @property
    def scenario_id(self) -> str: ...
    @property
    def roles(self) -> list[str]: ...
    @property
    def agents(self) -> list[str]: ...
    @property
    def agent_selection(self) -> str | None: ...
    @property
    def seed(self) -> int: ...
    @property
    def run_id(self) -> str: ...
    @property
    def schedule(self) -> list[str]: ...
    @property
    def to_move(self) -> str | None: ...
    @property
    def done(self) -> bool: ...
    @property
    def terminated(self) -> bool: ...
    @property
    def truncated(self) -> bool: ...
    @property
    def rewards(self) -> dict[str, float] | None: ...
    @property
    def outcome(self) -> dict[str, Any] | None: ...
    def observe(self, role: str) -> dict[str, Any]:
        """``prompt``, ``messages`` (the seat's own chat) and ``state`` (the table's public state)."""
    def step(self, role: str, action: str | Mapping[str, Any]) -> TableStepInfo:
        """Play ``role``'s turn; ``NotYourTurnError`` (a ``ValueError``) names both roles if it
        is another's."""
    def transcript(self) -> list[tuple[str, str]]: ...
    def record(self) -> dict[str, Any]: ...
    def record_json(self) -> str: ...

def table_scenario_ids(scenario_file: str | PathLike[str] | None = None) -> list[str]: ...
def table_roles(
    scenario_id: str | None = None,
    *,
    scenario_file: str | PathLike[str] | None = None,
    index: int | None = None,
) -> list[str]: ...
