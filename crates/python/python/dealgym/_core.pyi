"""Type stubs of ``dealgym._core``, the Rust engine bound with PyO3."""

from collections.abc import Mapping, Sequence
from os import PathLike
from types import TracebackType
from typing import Any, TypedDict, final

# The shapes of the dicts the module hands out, named once (the Python chapter's table,
# docs/src/python/index.md, says the same). Every face names a seat by its role and gives
# agreed terms as a dict; the raw record (``record()``, a written line) keeps its shape on disk.

#: A deal's terms from one side: a term's key to its value (a price in currency units, a
#: count of items, an issue's number or the name of its option).
Terms = dict[str, int | float | str]

class Message(TypedDict):
    """One chat message a seat's model is sent."""

    role: str
    content: str

class Observation(TypedDict):
    """``Game.observe(role)``: the chat the seat's model is sent, its last message, and the
    seat's structured state (offers' ``by`` and ``terms`` a role and ``Terms``)."""

    prompt: str
    messages: list[Message]
    state: dict[str, Any]

class SeatOutcome(TypedDict, total=False):
    """``Game.outcome_for(role)``, a PettingZoo agent's and the Gymnasium env's
    ``info["outcome"]``: how the episode ended from ``role``'s side, the same keys at a table
    (which adds ``offer`` and ``deal``, the agreed proposal in the games' notation)."""

    kind: str
    by: str | None
    terms: Terms | None
    utility: float | None
    rho: float | None
    detail: str
    offer: int | None
    deal: str | None

class Outcome(TypedDict, total=False):
    """``Game.outcome`` (and OpenEnv's ``state.outcome``): the record's outcome with its
    metrics, in roles. Two-party: ``by`` the role that ended it, ``terms`` the agreed
    ``Terms`` from the learner's side and ``terms_text`` the grammar's text of them, and
    ``utility``, ``rho`` and ``metrics["seats"]`` keyed by role. A table: ``by`` a role,
    ``offer``, ``deal`` (one option index per issue), ``deal_text``, ``scores`` and ``rho``
    by role, ``metrics``. A market: ``by`` a role, ``trades`` (each ``MarketTrade``) and
    ``metrics`` (efficiency, the equilibrium, ``surplus`` and ``share`` by role)."""

    kind: str
    by: str
    terms: Terms
    terms_text: str
    utility: dict[str, float]
    rho: dict[str, float]
    detail: str
    error_kind: str
    metrics: dict[str, Any]
    offer: int
    deal: list[int]
    deal_text: str
    scores: dict[str, int]
    trades: list[MarketTrade]

class Contradiction(TypedDict, total=False):
    """One way a narrated turn's Talk contradicts its decided move: ``kind`` (``other_price``,
    ``accepts_without_accepting``, ``refuses_while_accepting``, ``leaves_without_leaving``) and,
    for ``other_price``, the prices it ``named`` (in cents)."""

    kind: str
    named: list[int]

class Narration(TypedDict):
    """``StepInfo.narration``: a narrated turn's ``decided`` action line, the ``brief`` its
    narrator was sent, how the line was held to it (``force``: ``appended``, ``grammar`` or
    ``prompt``), and where its Talk contradicts it, as the engine read it (the record's
    ``narration``)."""

    decided: str
    brief: str
    force: str
    contradictions: list[Contradiction]

class MarketTrade(TypedDict):
    """A trade of a market's ``Outcome``: the ``buyer``, the ``seller`` and the ``taker``
    (roles), the quote taken (``order``), the ``price`` in currency units (as the state gives
    it), the buyer's ``value`` and the seller's ``cost`` of the unit, whole currency units (the
    record's; an observation's state never holds them)."""

    buyer: str
    seller: str
    taker: str
    order: int
    price: float
    value: int
    cost: int

#: The most bytes one completion may hold as a record writes it (text, reasoning and tool
#: calls, JSON-escaped): a step past it raises ``CompletionTooLargeError``, the action space
#: does not admit it, and ``dealgym serve`` refuses it by default (``--max-completion-bytes``).
MAX_COMPLETION_BYTES: int

class ScenarioError(ValueError):
    """An unknown family, role, scenario id or index: the message names it and the choices."""

class EpisodeEndedError(RuntimeError):
    """A step after the episode ended: the message names how it ended."""

class NotYourTurnError(ValueError):
    """A step for a role that is not to move: the message names the role to move."""

class ResetNeededError(RuntimeError):
    """An environment (PettingZoo, Gymnasium, OpenEnv) stepped or observed before its first
    ``reset()``: the message says to call it."""

class CompletionTooLargeError(ValueError):
    """A completion past ``MAX_COMPLETION_BYTES``: the message names its size and the limit;
    nothing is played."""

class TokenError(ValueError):
    """Token-exact play out of order: sampled ids without prompt ids for this turn, a text step
    after prompt ids were set, logprobs that do not pair with the ids, or a seat whose earlier
    turns have no ids."""

@final
class StepInfo:
    """What one step did, in the same shape for every family."""

    @property
    def role(self) -> str: ...
    @property
    def played(self) -> str | None: ...
    @property
    def retry(self) -> bool: ...
    @property
    def error(self) -> str | None:
        """Why the completion could not be used (its kind and message), else ``None``."""
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
    @property
    def narration(self) -> Narration | None:
        """A narrated turn's decided move, brief, force and ``contradictions``; ``None`` for a
        turn not narrated."""

class Game:
    """One episode of any family, every seat named by its role and played from outside with raw
    completions: a two-party family's two seats, a table's (``Game("deliberation", ...)``)
    n parties, or a market's (``Game("market", ...)``) buyers and sellers. What only one kind has (``snapshot``: a two-party game's) raises ``ValueError``
    on the other, naming it; tools and token-exact play are every seat's."""

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
        scenario_file: str | PathLike[str] | None = None,
        retries: int | None = None,
        regulated: Sequence[str] | None = None,
        format: str | None = None,
    ) -> None:
        """A table family (``deliberation``) and a market (``market``) take ``scenario_file``
        (else the built-in catalog), ``retries``, ``regulated``, ``format`` and ``players``
        (``"rule:deliberation"`` seats a party's scripted player in process; in a market
        ``"rule:zic"``, ``"rule:sniper"`` or ``"rule:truthful"`` a scripted trader); a
        two-party family ``learner_role``,
        ``first_mover``, ``rules``, ``rewards``, ``opponent`` and ``training``. An argument the
        family does not take raises ``ValueError``.

        ``learner_role`` and ``first_mover`` name roles of the family (``first_mover``: the
        role that moves first; left out, drawn from the seed); a seat word (``learner``,
        ``opponent``) or ``random`` for ``first_mover``, or ``first_mover`` in ``rules``, is a
        ``ScenarioError`` naming the roles.

        ``opponent="rule:NAME"`` (boulware, tough, linear, conceder, fixed-concession) plays
        the opponent's seat in Rust after each step; without it both seats are played from
        Python. ``rules={"talk": "off"}`` is the talk ablation: each move reaches the other
        seat as its action and terms alone.
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
    def roles(self) -> list[str]:
        """Every role in the game's order (the PettingZoo agents)."""
    @property
    def agents(self) -> list[str]: ...
    @property
    def agent_selection(self) -> str | None: ...
    @property
    def in_process(self) -> list[str]:
        """The roles a built-in player plays in process (a table's scripted parties, a
        market's scripted traders, a two-party game's ``opponent=``): they move on their own
        and are no AEC agents."""
    @property
    def learner_role(self) -> str | None:
        """The record's learner seat; ``None`` at a table or in a market."""
    @property
    def schedule(self) -> list[str] | None:
        """A table's or a market's turn order drawn from the seed; ``None`` for a two-party
        game."""
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
    def outcome(self) -> Outcome | None:
        """The record's outcome with its metrics, in roles (``Outcome``); ``None`` while it
        runs. ``record()["outcome"]`` is the same outcome in the record's own shape."""
    def step(self, action: str | Mapping[str, Any], *, role: str | None = None) -> StepInfo:
        """``action``: the completion text, or ``{"text", "reasoning"?, "role"?}`` and, in
        token-exact play, ``"completion_ids"``, ``"logprobs"``? and ``"finish_reason"``?; a
        two-party seat acting through tools sends ``{"tool_calls", "text"?}`` (the calls as a
        chat completion's message holds them). A table seat plays token-exact as a two-party
        seat does. A narrated turn adds ``"narration": {"decided", "brief", "force"?}`` (the
        decided action line, the brief its narrator was sent, ``appended`` by default): the
        brief is kept in ``role``'s history before the reply, a turn that plays another move
        is ``illegal``, and the step's ``narration`` says where its Talk contradicts the move
        (``dealgym.narrated.Narrated`` makes such turns)."""
    def decide(self, role: str, decider: str) -> str:
        """The action line the built-in player ``decider`` plays as ``role``, the role to move,
        now: a two-party game's ``rule:NAME`` negotiators (those ``opponent=`` takes), a table's
        ``rule:deliberation``. A narrated seat's decided move; a market's seats are not
        narrated."""
    def narration_brief(self, role: str, decided: str) -> str:
        """The brief ``role``'s narrator is sent before it writes the turn that plays the
        ``decided`` action line (``prompts/narrate.j2``, in the seat's format)."""
    def append_decided(self, role: str, words: str, decided: str) -> str:
        """``force="appended"``: the narrator's ``words`` cut where they end — at their first
        action label after any reasoning (at a line's start in any case, plural or emphasised,
        or inside a line where an action token follows; xml ``<action>``) — with the
        ``decided`` action line written after them, as ``dealgym run``'s narrated player does."""
    def tools(self, role: str) -> list[dict[str, Any]]:
        """``role``'s moves as OpenAI-style tool definitions, their terms the scenario's own (at a
        table, ``accept`` names the proposal it accepts: ``{"offer": 3}``)."""
    def observe(self, role: str) -> Observation:
        """``{"prompt", "messages", "state"}``: a ``dict`` (``dealgym._observation.Observation``)
        whose ``state``, the state of this moment, is converted to Python when first read."""
    def messages(self, role: str) -> list[Message]:
        """``observe(role)["messages"]`` alone: the chat ``role``'s model is sent."""
    def state(self, role: str) -> dict[str, Any]:
        """``observe(role)["state"]`` without the chat."""
    def state_text(self, role: str) -> str:
        """The episode as ``role`` knows it, as one deterministic text: what a value model scores."""
    def snapshot(self) -> GameSnapshot:
        """Freeze the game now, for look-ahead; ``restore`` goes back to it."""
    def restore(self, snapshot: GameSnapshot) -> None:
        """Undo every step since ``snapshot`` (same scenario and setup, else ``ValueError``)."""
    def outcome_for(self, role: str) -> SeatOutcome | None:
        """How the episode ended from ``role``'s side; ``None`` while it runs."""
    def transcript(self) -> list[tuple[str, str]]:
        """``(role, text)`` per move that took effect, as forwarded to the other seat."""
    def record(self) -> dict[str, Any]:
        """The record line ``dealgym run`` writes, in its shape on disk (the book's
        ``design/record.md``): seats named ``learner``/``opponent`` (a table's by index) and a
        deal's ``terms`` positional, beside their ``terms_text``. ``outcome`` gives its outcome
        in roles."""
    def record_json(self) -> str: ...
    def token_sequence(self, role: str) -> list[int] | None:
        """The ids ``role`` was sent and sampled so far; ``None`` if a turn of it had none."""
    def trajectory(self, role: str) -> dict[str, Any]:
        """``role``'s token trajectory so far by the core's one rule (what ``export --format
        verl`` writes): ``prompt_ids``, ``response_ids``, ``mask`` (1 sampled, 0 the
        environment's), ``logprobs`` (``None`` when the sampler gave none) and ``rewards`` (one
        per call; ``None`` until the end). ``TokenError`` names why a seat has none."""
    def prompt_messages(
        self, role: str
    ) -> tuple[list[dict[str, str]], list[dict[str, str]] | None]:
        """The messages to render with a generation prompt, and those to render continuing the
        seat's own last message (``None`` on its first token-exact turn)."""
    def set_prompt_ids(
        self, role: str, full: Sequence[int], before: Sequence[int] | None = None
    ) -> dict[str, Any]:
        """Set the prompt ids of ``role``'s turn now from the two renderings (a two-party seat
        or a table's); returns ``{"prompt_ids", "drift"}``."""

@final
class RecordWriter:
    """Appends the records of finished games to a record file, as ``dealgym run`` writes one.

    The file, and any folder above it that is missing, is created. While the writer is open it
    holds a lock on the file, and a second writer (in any process) is refused, naming the
    holder from the sidecar ``FILE.lock``; the sidecar is removed when the writer lets go
    (``close()``, the ``with`` block's end, the writer dropped), as for the command line. A
    last line a crash cut off is removed first, with a ``RuntimeWarning`` naming the file, the
    byte offset and the bytes cut; a whole last record is never cut."""

    def __init__(self, path: str | PathLike[str]) -> None: ...
    def write(self, game: Game) -> None: ...
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

def action_text(text: str) -> str | None:
    """The action part of a completion as written (``[SUBMIT_DEAL] price:120``), or ``None``
    when it has none; a one-line text that starts with an action token is the line itself. How
    a Python decider's answer is read as a decided move."""

def check_action(action: str | Mapping[str, Any]) -> None:
    """Raise what a step would for ``action`` before anything is played: ``TypeError`` or
    ``ValueError`` for what is no action, ``CompletionTooLargeError`` past
    ``MAX_COMPLETION_BYTES``. What the action space's ``contains`` asks."""

def step_many(games: Sequence[Game], actions: Sequence[str | Mapping[str, Any]]) -> list[StepInfo]:
    """``actions[i]`` for ``games[i]``, every action checked before any game steps; the engine
    then steps them all without the interpreter's lock, so Python threads calling it over
    disjoint games run at once."""

def main(argv: Sequence[str]) -> int:
    """The ``dealgym`` command line on ``argv`` (the program's name first), with the GIL released:
    its exit status. ``--help``, ``--version`` and some commands end the process themselves; the
    console script ``dealgym`` (``dealgym._cli``) is its caller."""

def families() -> list[str]: ...
def roles(family: str) -> tuple[str, str]: ...
def scenario_ids(family: str) -> list[str]: ...
def tool_specs(family: str, scenario_id: str | None = None) -> list[dict[str, Any]]:
    """The family's moves as tool specs, their terms from the core's term schemas (every
    scenario's merged, or ``scenario_id``'s): what ``dealgym.trl`` builds its tool classes from."""

def table_scenario_ids(scenario_file: str | PathLike[str] | None = None) -> list[str]: ...
def table_roles(
    scenario_id: str | None = None,
    *,
    scenario_file: str | PathLike[str] | None = None,
    index: int | None = None,
) -> list[str]: ...
