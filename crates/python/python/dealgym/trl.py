"""dealgym for TRL's ``GRPOTrainer`` (trl 1.16), in process, both ways TRL takes an environment:

- ``environment_factory``: one class per family whose public methods are the learner's tools
  (``make_offer`` typed from the family's own terms, ``accept``, ``reject``, ``say``,
  ``walk_away``). Each tool call writes one turn in dealgym's grammar and steps a ``Game``
  against a built-in negotiator; what it returns is what the learner's seat reads next.
  ``get_reward`` is the learner's reward. Rows: ``dataset(family, n)``.
- ``rollout_func``: ``make_rollout_func()`` plays whole episodes in dealgym's text grammar with
  the trainer's own sampler (its vLLM in either mode, or the model's ``generate``), token-exact
  (``dealgym.tokens``): the ids the model sampled are never re-tokenized, the environment's
  ids between turns are masked out of the loss. The reward travels as the rollout's
  ``dealgym_reward`` field, read by ``rollout_reward``. Rows: ``dataset(family, n,
  kind="rollout")``.

Importing this module imports neither torch nor trl; the rollout function imports them when it
is first called. See docs/src/python/trl.md.
"""

from __future__ import annotations

import collections
import contextlib
import copy
import decimal
import functools
import inspect
import itertools
import json
import logging
import os
import re
import threading
from collections.abc import Mapping, Sequence
from typing import Any, ClassVar, Literal

from . import _core
from .tokens import ExactTokens

log = logging.getLogger(__name__)

#: What the tool environments append to the learner's first message: the system prompt
#: describes the turn format, which the tools write for the model.
TOOL_INSTRUCTIONS = (
    "Make each move by calling exactly one of your tools: make_offer, accept, reject, say or "
    "walk_away. The `message` you pass is what the other side reads; the tools write the "
    "turn format above for you. Each call answers with the other side's reply. When the "
    "negotiation is over, stop calling tools."
)

#: How a rollout can end: the engine's endings (its own `error`, a failed model endpoint, cannot
#: happen in process), `error` for a game that raised, and `unfinished` for one stopped early.
OUTCOMES = (
    "deal",
    "walk_away",
    "reject_loop",
    "max_turns",
    "format_forfeit",
    "error",
    "unfinished",
)

# What would change the move a tool writes if it were inside a message or a term: the XML
# turn tags, a reasoning block, a chat-template marker (the engine's parser reads all three).
_STRUCTURE = re.compile(
    r"<\s*/?\s*(?:thought|talk|action|think)\s*>"
    r"|<\|(?:im_start|im_end|endoftext|eot_id|end|start_header_id|end_header_id|assistant|user|system)\|>"
    r"|</s>",
    re.IGNORECASE,
)


# ---------------------------------------------------------------------------------------------
# Training rows
# ---------------------------------------------------------------------------------------------


def tool_rules(rules: Mapping[str, Any] | None) -> dict[str, Any]:
    """The ``[episode]`` rules a tool environment plays under: ``rules`` with the learner's
    turns in the XML format, the one where ``[TALK]`` (the ``say`` tool) is a move. Another
    learner format is refused."""
    chosen = dict(rules or {})
    fmt = chosen.setdefault("learner_format", "xml")
    if fmt != "xml":
        raise ValueError(
            f"rules['learner_format'] = {fmt!r}: the tool environments write the learner's turns "
            "in the XML format, where [TALK] (the `say` tool) is a move; leave learner_format unset"
        )
    return chosen


def rows(
    family: str,
    count: int,
    *,
    offset: int = 0,
    seed: int = 0,
    role: str | None = None,
    first_mover: str | None = None,
    kind: Literal["tools", "rollout"] = "tools",
    rules: Mapping[str, Any] | None = None,
    environment: str | None = None,
) -> list[dict[str, Any]]:
    """The training rows of scenarios ``offset .. offset + count`` of ``family``, one each:
    ``family``, ``index``, ``seed``, ``learner_role`` and ``first_mover`` columns, and the
    ``prompt``.

    ``kind="tools"`` (``environment_factory``): the prompt is the learner's system message and a
    first user message left empty, which ``reset`` fills with the episode's own opening (the
    opponent may have moved already, and may open differently for each member of a GRPO
    group). ``rules`` must be the tool environment's (they are in the
    system prompt); ``environment`` adds the column a dict of factories is keyed by.

    ``kind="rollout"`` (``rollout_func``): TRL hands a rollout function only the prompt column,
    so the prompt is the episode's spec as JSON (``family``, ``index``, ``seed``,
    ``learner_role``, ``first_mover``); the rules are the rollout function's.

    ``role`` is the learner's role (else the family's default: the buyer, the worker, or a side
    drawn from the seed); the row keeps the role drawn, so every member plays it."""
    if kind not in ("tools", "rollout"):
        raise ValueError(f"kind={kind!r}: a row is for 'tools' (environment_factory) or 'rollout'")
    if count < 1 or offset < 0:
        raise ValueError(
            f"count={count}, offset={offset}: count is at least 1 and offset at least 0"
        )
    game_rules = tool_rules(rules) if kind == "tools" else dict(rules or {})
    out = []
    for index in range(offset, offset + count):
        game = _core.Game(
            family,
            index=index,
            seed=seed,
            learner_role=role,
            first_mover=first_mover,
            rules=game_rules,
        )
        row: dict[str, Any] = {
            "family": game.family,
            "index": index,
            "seed": seed,
            "learner_role": game.learner_role,
            "first_mover": first_mover,
        }
        if kind == "tools":
            system = game.observe(game.learner_role)["messages"][0]
            row["prompt"] = [
                {"role": "system", "content": system["content"]},
                {"role": "user", "content": ""},
            ]
        else:
            row["prompt"] = json.dumps(
                {k: row[k] for k in ("family", "index", "seed", "learner_role", "first_mover")}
            )
        if environment is not None:
            row["environment"] = environment
        out.append(row)
    return out


def dataset(family: str, count: int, **options: Any) -> Any:
    """``rows(family, count, **options)`` as a Hugging Face ``datasets.Dataset``, what
    ``GRPOTrainer(train_dataset=...)`` takes."""
    import datasets

    return datasets.Dataset.from_list(rows(family, count, **options))


# ---------------------------------------------------------------------------------------------
# Shared pieces
# ---------------------------------------------------------------------------------------------


def _process() -> tuple[int, int]:
    """This process's rank and the number of processes, as torchrun and accelerate set them."""
    return int(os.environ.get("RANK", "0")), max(1, int(os.environ.get("WORLD_SIZE", "1")))


_WRITERS: dict[str, _core.RecordWriter] = {}
_WRITERS_LOCK = threading.Lock()


def _record_path(path: str | os.PathLike[str], rank: int, world: int) -> str:
    """One record file per process (a file is locked by its writer): ``runs/x.jsonl`` on rank 0,
    ``runs/x.rank1.jsonl`` on rank 1."""
    path = os.fspath(path)
    if world == 1 or rank == 0:
        return path
    stem, ext = os.path.splitext(path)
    return f"{stem}.rank{rank}{ext}"


def _write_record(path: str, game: _core.Game) -> None:
    """Append ``game``'s record to ``path``, through one writer per file in this process."""
    with _WRITERS_LOCK:
        writer = _WRITERS.get(path)
        if writer is None:
            writer = _WRITERS[path] = _core.RecordWriter(path)
        writer.write(game)


def close_records() -> None:
    """Close the record files this module opened (each write is flushed already; closing
    releases the files' locks, so another writer may open them)."""
    with _WRITERS_LOCK:
        for writer in _WRITERS.values():
            writer.close()
        _WRITERS.clear()


def _terms_text(game: _core.Game, terms: Mapping[str, Any] | None) -> str:
    """Deal terms in the family's own key order, as the grammar writes them."""
    if not terms:
        return ""
    public = game.state(game.learner_role)["public"]
    if public.get("parts"):
        keys = ["price"] + [p["key"] for p in public["parts"] if p["removable"]]
    elif public.get("items"):
        keys = [i["name"] for i in public["items"]]
    elif public.get("issues"):
        keys = [i["key"] for i in public["issues"]]
    else:
        keys = list(terms)
    keys += [k for k in terms if k not in keys]
    return " ".join(f"{k}:{terms[k]}" for k in keys if k in terms)


def ending(game: _core.Game) -> str:
    """How the episode ended, from the learner's side, in one sentence with its reward."""
    me = game.learner_role
    seen = game.outcome_for(me)
    if seen is None:
        raise RuntimeError("the episode has not ended")
    kind, by = seen["kind"], seen.get("by")
    who = "you" if by == me else "the other side"
    if kind == "deal":
        what = f"a deal on {_terms_text(game, seen.get('terms'))} (your side)"
    elif kind == "walk_away":
        what = f"no deal: {who} walked away"
    elif kind == "reject_loop":
        what = "no deal: the same offer or rejection came too many times in a row"
    elif kind == "max_turns":
        what = "no deal: the turns ran out"
    elif kind == "format_forfeit":
        detail = seen.get("detail")
        what = f"{who} forfeited with a move that could not be used" + (
            f" ({detail})" if detail else ""
        )
    else:
        what = f"it ended as {kind}"
    reward = game.rewards[me]
    return (
        f"The negotiation is over: {what}. Your reward is {reward:.3f}. Do not call any more tools."
    )


# ---------------------------------------------------------------------------------------------
# environment_factory: the tools
# ---------------------------------------------------------------------------------------------


class NegotiationTools:
    """The learner's seat of one family as TRL tools (``GRPOTrainer(environment_factory=...)``).
    Use a family's class (``CasinoTools``, ``DndTools``, ``AhpTools``, ``CraigslistTools``,
    ``JobInterviewTools``, ``BundleTools``; ``TOOLS[family]``), or ``functools.partial`` of one
    to set its arguments, since TRL calls the factory with none.

    Each public method is a tool. A tool call writes one turn in dealgym's grammar (the XML
    spelling, where ``[TALK]`` is a move), steps the ``Game`` for the learner, and lets the
    ``opponent`` (a built-in negotiator, ``"rule:linear"`` unless set) answer inside the
    engine. It returns what the learner's seat reads next: the other side's reply, the
    engine's correction for a move that cannot be used (an out-of-range term, an accept with
    nothing on the table; after ``format_retries`` of them the learner forfeits), or, once the
    episode is over, a sentence saying how it ended. A tool call after the end raises
    ``EpisodeEndedError`` (TRL hands the model an error result and counts a tool failure).

    ``get_reward`` is the learner's reward from the game's rewards (``rewards=`` is the
    ``[rewards]`` table), or ``unfinished_reward`` when the model stopped calling tools (or
    TRL's token budget stopped it) before the episode ended. ``records`` appends each finished
    episode's record there the first time its reward is asked for (one file per process)."""

    #: The family this class plays; set by each family's subclass.
    family: ClassVar[str | None] = None

    def __init__(
        self,
        *,
        opponent: str = "rule:linear",
        rules: Mapping[str, Any] | None = None,
        rewards: Mapping[str, Any] | None = None,
        unfinished_reward: float = -1.0,
        instructions: str | None = TOOL_INSTRUCTIONS,
        records: str | os.PathLike[str] | None = None,
    ) -> None:
        if self.family is None:
            raise TypeError(
                "NegotiationTools is the family classes' base: use CasinoTools, DndTools, "
                "AhpTools, CraigslistTools, JobInterviewTools or BundleTools "
                "(dealgym.trl.TOOLS[family])"
            )
        if not opponent.startswith("rule:"):
            raise ValueError(
                f"opponent={opponent!r}: the tool environments play a built-in negotiator "
                "(rule:linear, rule:boulware, rule:tough, rule:conceder, rule:ina, rule:ina-code)"
            )
        self.opponent = opponent
        self.rules = tool_rules(rules)
        self.rewards = dict(rewards) if rewards else None
        self.unfinished_reward = float(unfinished_reward)
        self.instructions = instructions
        rank, world = _process()
        self.records = None if records is None else _record_path(records, rank, world)
        #: The episode of the rollout in progress (``None`` before the first ``reset``).
        self.game: _core.Game | None = None
        #: Tool calls that stepped the game this episode.
        self.moves = 0
        self._recorded = False

    #: Every reset of any tool environment in this process, numbered: a GRPO group's rows are
    #: the same scenario and seed, and each its own episode through its own ``member``.
    _resets: ClassVar[itertools.count] = itertools.count()

    def reset(
        self,
        *,
        family: str | None = None,
        index: int | None = None,
        seed: int = 0,
        learner_role: str | None = None,
        first_mover: str | None = None,
        scenario_id: str | None = None,
        prompt: Any = None,
        **row: Any,
    ) -> str:
        """Start the episode of a training row (TRL passes every column; those dealgym does not
        read are left alone) and return the learner's first message, which TRL appends to the
        row's last prompt message."""
        if family is not None and family != self.family:
            raise ValueError(
                f"a row of family {family!r} reached a {self.family} tool environment: give "
                "environment_factory a dict of factories and the rows an `environment` column"
            )
        if index is None and scenario_id is None:
            raise ValueError(
                "reset needs a row with `index` (or `scenario_id`): make the training rows with "
                "dealgym.trl.dataset(family, count)"
            )
        rank, world = _process()
        member = next(NegotiationTools._resets) * world + rank
        self.game = _core.Game(
            self.family,
            index=index,
            scenario_id=scenario_id,
            seed=int(seed),
            member=member,
            learner_role=learner_role,
            first_mover=first_mover,
            rules=self.rules,
            rewards=self.rewards,
            opponent=self.opponent,
        )
        self.moves = 0
        self._recorded = False
        messages = self.game.observe(self.game.learner_role)["messages"]
        self._check_prompt(prompt, messages)
        if self.game.done:
            return ending(self.game)
        # The learner's view after the system prompt: the opening, or the opponent's first move.
        first = "\n\n".join(m["content"] for m in messages[1:])
        if self.instructions:
            first = f"{first}\n\n{self.instructions}"
        before = prompt[-1].get("content") if isinstance(prompt, list) and prompt else ""
        return f"\n\n{first}" if isinstance(before, str) and before else first

    def _check_prompt(self, prompt: Any, messages: list[dict[str, str]]) -> None:
        """The row's system message must be this game's: rows made under other rules, or for
        another role, would show the model one setup and play another."""
        if not isinstance(prompt, list):
            return
        for given in prompt:
            if isinstance(given, Mapping) and given.get("role") == "system":
                if given.get("content") != messages[0]["content"]:
                    raise ValueError(
                        f"the row's system message is not this episode's ({self.game.scenario_id}, "
                        f"{self.game.learner_role}): make the rows with "
                        "dealgym.trl.dataset(family, count, rules=...) under the environment's rules"
                    )
                return

    def get_reward(self) -> float:
        """The learner's reward: the game's, once the episode has ended; ``unfinished_reward``
        if the model stopped calling tools (or the token budget stopped it) before the end."""
        game = self._game()
        if not game.done:
            return self.unfinished_reward
        if self.records is not None and not self._recorded:
            _write_record(self.records, game)
            self._recorded = True
        return float(game.rewards[game.learner_role])

    def _offer(self, terms: Mapping[str, Any], message: str) -> str:
        """A ``[SUBMIT_DEAL]`` of ``terms`` (from the learner's side): the engine judges them,
        as it judges a model's text. A term left out (``None``) is not written; ``leave_out``
        (a family whose parts may be left out) writes each of this scenario's parts in or out,
        in the order its own terms list them, and a key it does not have as written, for the
        engine to name."""
        game = self._game()
        pairs: list[tuple[str, Any]] = []
        leave_out = terms.get(_LEAVE_OUT, ...)
        for key, value in terms.items():
            if key == _LEAVE_OUT or value is None:
                continue
            if isinstance(value, bool) or not isinstance(value, (int, float, str)):
                # The engine reads numbers and option names; anything else has no spelling.
                raise TypeError(
                    f"{key} must be a number or an option name, not {type(value).__name__}"
                )
            pairs.append((key, value))
        if leave_out is not ...:
            out = list(leave_out or [])
            if not all(isinstance(k, str) for k in out):
                raise TypeError(f"{_LEAVE_OUT} must be a list of part keys")
            spec = _specs(self.family, game.scenario_id)["make_offer"]
            parts = [t["key"] for t in spec["terms"] if _is_part(t["schema"])]
            pairs += [(k, "out" if k in out else "in") for k in parts]
            # A key the scenario does not have, or one left out twice, goes to the engine as
            # written: it judges the terms as it judges a model's text, and says what is wrong.
            pairs += [(k, "out") for i, k in enumerate(out) if k not in parts or out.index(k) != i]
        written = " ".join(f"{key}:{_term(key, value)}" for key, value in pairs)
        return self._play("make_offer", f"[SUBMIT_DEAL] {written}", message)

    def _play(self, tool: str, action: str, message: str) -> str:
        game = self._game()
        if game.done:
            raise _core.EpisodeEndedError(
                f"{tool}: the negotiation is over ({game.outcome['kind']}); no more moves"
            )
        if not isinstance(message, str):
            raise TypeError(f"message must be text, not {type(message).__name__}")
        _plain("message", message)
        me = game.learner_role
        seen = len(game.observe(me)["messages"])
        text = f"<thought>(tool call: {tool})</thought>\n<talk>{message}</talk>\n<action>{action}</action>"
        game.step(text, role=me)
        self.moves += 1
        replies = [m["content"] for m in game.observe(me)["messages"][seen:] if m["role"] == "user"]
        if game.done:
            return "\n\n".join([*replies, ending(game)])
        if not replies:
            raise RuntimeError(f"{tool}: the learner is to move again and was sent nothing")
        return "\n\n".join(replies)

    def _game(self) -> _core.Game:
        if self.game is None:
            raise RuntimeError("call reset() before a tool")
        return self.game


def _plain(name: str, text: str) -> None:
    """Refuse text that would change the move a tool writes (a turn tag in the message)."""
    found = _STRUCTURE.search(text)
    if found:
        raise ValueError(
            f"{name} holds {found.group(0)!r}, which would change the move this tool makes: "
            "write it as plain text"
        )


def _term(key: str, value: int | float | str) -> str:
    """A term's value as the grammar writes it: numbers in plain decimal (the engine reads no
    exponent), option names as given."""
    if isinstance(value, str):
        _plain(key, value)
        return value.strip()
    if isinstance(value, float) and value.is_integer():
        return str(int(value))
    if isinstance(value, float) and value == value and abs(value) != float("inf"):
        return format(decimal.Decimal(repr(value)), "f")
    return str(value)


#: The move each tool writes, in dealgym's grammar (the XML spelling, where [TALK] is a move).
_MOVES = {
    "make_offer": "[SUBMIT_DEAL]",
    "accept": "[ACCEPT_DEAL]",
    "reject": "[REJECT_DEAL]",
    "walk_away": "[WALK_AWAY]",
    "say": "[TALK]",
}

#: The argument that stands for a family's parts that may be left out of a deal (terms whose
#: schema is a choice of "in" or "out", which differ from scenario to scenario).
_LEAVE_OUT = "leave_out"

_RETURNS = (
    "The other side's reply; the engine's correction if the move cannot be used; or, once "
    "the negotiation is over, how it ended."
)


@functools.lru_cache(maxsize=None)
def _spec_list(family: str, scenario_id: str | None) -> tuple[dict[str, Any], ...]:
    return tuple(_core.tool_specs(family, scenario_id))


def _specs(family: str, scenario_id: str | None = None) -> dict[str, dict[str, Any]]:
    """The core's tools of ``family`` (its every scenario's terms merged), or of one scenario,
    by name."""
    return {spec["name"]: spec for spec in _spec_list(family, scenario_id)}


def _is_part(schema: Mapping[str, Any]) -> bool:
    """A term that is a part of the deal, in or out of it."""
    return schema.get("type") == "string" and sorted(schema.get("enum", ())) == ["in", "out"]


def _hint(schema: Mapping[str, Any]) -> Any:
    """The Python type of a JSON Schema, as TRL (transformers' ``get_json_schema``) renders it
    back: ``int`` an integer, ``float`` a number, a ``Literal`` an enum, ``str`` text."""
    if "anyOf" in schema:
        hints = tuple(_hint(s) for s in schema["anyOf"])
        return functools.reduce(lambda a, b: a | b, hints)
    if "enum" in schema:
        return Literal[tuple(schema["enum"])]
    kind = schema.get("type")
    if kind == "integer":
        return int
    if kind == "number":
        return float
    if kind == "array":
        return list[_hint(schema.get("items", {}))]
    if kind == "string":
        return str
    raise TypeError(f"a tool argument of schema {schema!r} has no Python type here")


def _arguments(family: str, spec: Mapping[str, Any]) -> list[tuple[str, Any, bool, str]]:
    """A tool's arguments as TRL shows them to the model, ``(name, type, required,
    description)``: ``make_offer``'s terms one argument each (in the grammar's order; a term
    only some scenarios have may be left out), the parts that may be left out as one
    ``leave_out`` list, and the talk, which every tool takes as ``message``."""
    props = spec["parameters"].get("properties", {})
    out: list[tuple[str, Any, bool, str]] = []
    if spec["name"] == "make_offer":
        parts = [t for t in spec["terms"] if _is_part(t["schema"])]
        for term in spec["terms"]:
            if term in parts:
                continue
            hint = _hint(term["schema"])
            described = term["schema"].get("description", term["key"])
            if not term["required"]:
                hint = hint | None
                described += f" None where the scenario has no {term['key']}."
            out.append((term["key"], hint, term["required"], described))
        if parts:
            out.append(
                (
                    _LEAVE_OUT,
                    list[str] | None,
                    False,
                    "The keys of the parts to leave out of the deal (each scenario's parts "
                    "are in its setup); every other part is in.",
                )
            )
    talk = props.get("message") or props.get("text") or {}
    required = "text" in spec["parameters"].get("required", ())
    out.append(("message", str, required, talk.get("description", "What you say.")))
    return out


def _tool(family: str, spec: Mapping[str, Any]) -> Any:
    """One tool method of ``family``'s class, made from the core's spec: its signature, type
    hints and Google-style docstring are what TRL builds the tool's JSON schema from."""
    name = spec["name"]
    arguments = _arguments(family, spec)
    # A required argument after one that may be left out would not be a valid signature.
    arguments.sort(key=lambda a: not a[2])
    params = [inspect.Parameter("self", inspect.Parameter.POSITIONAL_OR_KEYWORD)]
    for arg, hint, required, _ in arguments:
        default = inspect.Parameter.empty if required else ("" if arg == "message" else None)
        params.append(
            inspect.Parameter(
                arg, inspect.Parameter.POSITIONAL_OR_KEYWORD, default=default, annotation=hint
            )
        )
    signature = inspect.Signature(params, return_annotation=str)

    def tool(self: NegotiationTools, *args: Any, **kwargs: Any) -> str:
        bound = signature.bind(self, *args, **kwargs)
        bound.apply_defaults()
        values = dict(bound.arguments)
        values.pop("self")
        message = values.pop("message")
        if name == "make_offer":
            return self._offer(values, message)
        return self._play(name, _MOVES[name], message)

    description = spec["description"]
    if name == "make_offer" and spec.get("terms_description"):
        description = f"{description} {spec['terms_description']}"
    args_doc = "\n".join(f"    {arg}: {doc}" for arg, _, _, doc in arguments)
    tool.__name__ = tool.__qualname__ = name
    tool.__doc__ = f"{description}\n\nArgs:\n{args_doc}\n\nReturns:\n    {_RETURNS}\n"
    tool.__signature__ = signature  # type: ignore[attr-defined]
    tool.__annotations__ = {arg: hint for arg, hint, _, _ in arguments} | {"return": str}
    return tool


def tool_class(family: str) -> type[NegotiationTools]:
    """The tool environment of ``family``, its methods made from the core's tool schemas
    (``dealgym._core.tool_specs``) by one path for every family: a family the core gains has
    its tools here with no Python written for it."""
    name = "".join(part.title() for part in family.split("_")) + "Tools"
    namespace: dict[str, Any] = {
        "family": family,
        "__module__": __name__,
        "__qualname__": name,
        "__doc__": f"The {family} family's tools for TRL, from the core's tool schemas.",
    }
    for spec in _spec_list(family, None):
        if spec["name"] not in _MOVES:
            raise ValueError(f"the core's tool {spec['name']!r} has no move here")
        namespace[spec["name"]] = _tool(family, spec)
    return type(name, (NegotiationTools,), namespace)


#: The tool environment of each family, made from the core's tool schemas.
TOOLS: dict[str, type[NegotiationTools]] = {f: tool_class(f) for f in _core.families()}
AhpTools = TOOLS["ahp"]
CraigslistTools = TOOLS["craigslist"]
CasinoTools = TOOLS["casino"]
DndTools = TOOLS["dnd"]
JobInterviewTools = TOOLS["job_interview"]
BundleTools = TOOLS["bundle"]
HotelTools = TOOLS["hotel"]


def _options(family: str, key: str) -> tuple[str, ...]:
    terms = _specs(family)["make_offer"]["terms"]
    return tuple(next(t["schema"]["enum"] for t in terms if t["key"] == key))


#: The Job Interview issues' options, every scenario's own (from the core's schemas); TRL
#: renders a ``Literal`` as the argument's enum.
POSITIONS = _options("job_interview", "position")
COMPANIES = _options("job_interview", "company")
WORKPLACES = _options("job_interview", "workplace")
Position = Literal[POSITIONS]  # type: ignore[valid-type]
Company = Literal[COMPANIES]  # type: ignore[valid-type]
Workplace = Literal[WORKPLACES]  # type: ignore[valid-type]


# ---------------------------------------------------------------------------------------------
# rollout_func: whole episodes in the text grammar, token-exact
# ---------------------------------------------------------------------------------------------


class _Row:
    """One incoming prompt's episode while it is played."""

    def __init__(self, game: _core.Game) -> None:
        self.game = game
        self.role = game.learner_role
        self.prompt_ids: list[int] | None = None  # its first call's prompt, once set
        self.status = "live"  # live | done | unfinished | error
        self.detail: str | None = None


class DealRollout:
    """TRL's ``rollout_func`` over dealgym episodes: ``DealRollout(...)(prompts, trainer)``;
    ``make_rollout_func`` builds one. See ``make_rollout_func`` for the arguments.

    After each call, ``games`` holds the call's games (one per prompt, in order), ``outcomes``
    how each ended and ``details`` why an unfinished or failed one stopped; ``counts`` counts
    every rollout's outcome since the function was made."""

    def __init__(
        self,
        *,
        opponent: str = "rule:linear",
        rules: Mapping[str, Any] | None = None,
        rewards: Mapping[str, Any] | None = None,
        turn_tokens: int = 256,
        unfinished_reward: float = -1.0,
        error_reward: float = 0.0,
        chat_template_kwargs: Mapping[str, Any] | None = None,
        records: str | os.PathLike[str] | None = None,
        training_run: str | None = None,
        cache_across_turns: bool = True,
    ) -> None:
        if not opponent.startswith("rule:"):
            raise ValueError(
                f"opponent={opponent!r}: the rollout plays a built-in negotiator "
                "(rule:linear, rule:boulware, rule:tough, rule:conceder, rule:ina, rule:ina-code)"
            )
        if turn_tokens < 1:
            raise ValueError(f"turn_tokens={turn_tokens}: a turn needs at least one token")
        self.opponent = opponent
        self.rules = dict(rules) if rules else None
        self.rewards = dict(rewards) if rewards else None
        self.turn_tokens = int(turn_tokens)
        self.unfinished_reward = float(unfinished_reward)
        self.error_reward = float(error_reward)
        self.chat_template_kwargs = (
            None if chat_template_kwargs is None else dict(chat_template_kwargs)
        )
        self.records = None if records is None else os.fspath(records)
        if training_run is not None and not isinstance(training_run, str):
            raise TypeError(f"training_run={training_run!r}: a run's name is a str")
        self.training_run = training_run
        self.cache_across_turns = bool(cache_across_turns)
        #: ids read into the model and ids sampled by the last call's cache (None without one)
        self.cache_work: dict[str, int] | None = None
        self._step = 0  # the trainer's optimizer step at this call
        self.counts: collections.Counter[str] = collections.Counter()
        self.games: list[_core.Game] = []
        self.outcomes: list[str] = []
        self.details: list[str | None] = []
        self._made = 0  # rollouts this process has started: each its own member

    def skip(self, made: int) -> None:
        """Count ``made`` rollouts as made already (a resumed run's): the next rollout is
        member ``made`` on this process, as it would have been had the run not stopped."""
        if made < 0:
            raise ValueError(f"skip({made}): a count of rollouts is not negative")
        self._made = int(made)

    def __call__(self, prompts: Sequence[Any], trainer: Any) -> dict[str, Any]:
        accelerator = trainer.accelerator
        rank, world = accelerator.process_index, accelerator.num_processes
        if world > 1 and getattr(trainer, "use_vllm", False):
            # TRL's vLLM generation hands each process the slice of the gathered completions
            # its own prompt count gives, and sends the main process's max_tokens for all: with
            # each process sampling only its live rows, counts and limits differ by process,
            # and completions would reach another process's episodes.
            raise RuntimeError(
                "dealgym.trl's rollout_func samples through vLLM in one process only: run the "
                f"trainer on one process (this run has {world}), or generate without vLLM"
            )
        kwargs = self.chat_template_kwargs
        if kwargs is None:
            kwargs = getattr(trainer, "chat_template_kwargs", None) or {}
        tokens = ExactTokens(trainer.processing_class, **kwargs)
        budget = trainer.max_completion_length
        if not budget or budget < 1:
            raise ValueError(
                "make_rollout_func needs GRPOConfig.max_completion_length (the token budget of "
                f"a whole episode's completion), not {budget!r}"
            )
        context = _context_length(trainer)
        eos = list(trainer.eos_token_ids)

        self._step = int(getattr(getattr(trainer, "state", None), "global_step", 0) or 0)
        start, self._made = self._made, self._made + len(prompts)
        rows = [_Row(self._game(p, (start + i) * world + rank)) for i, p in enumerate(prompts)]
        cache = _turn_cache(trainer) if self.cache_across_turns else None
        while True:
            turn: list[tuple[_Row, list[int], int, str | None]] = []
            for row in rows:
                if row.status != "live":
                    continue
                try:
                    prepared = self._prepare(row, tokens, budget, context)
                except Exception as e:  # the game's own failure: this rollout ends, counted
                    self._fail(row, e)
                    continue
                if prepared is not None:
                    turn.append((row, *prepared))
            if not _any_left(trainer, len(turn)):
                break
            samples = _sample(trainer, turn, cache)
            for (row, _, limit, bound), (ids, lps) in zip(turn, samples, strict=True):
                try:
                    self._play(
                        row,
                        ids[:limit],
                        None if lps is None else lps[:limit],
                        len(ids) > limit,
                        tokens,
                        eos,
                        bound=bound,
                    )
                except Exception as e:
                    self._fail(row, e)
        self.cache_work = None if cache is None else {"read": cache.read, "sampled": cache.sampled}
        records = None if self.records is None else _record_path(self.records, rank, world)
        return self._result(rows, eos, records)

    def _game(self, prompt: Any, member: int) -> _core.Game:
        """The episode a prompt names (``dataset(..., kind="rollout")``'s JSON spec), as
        ``member``: every rollout of this function is its own member, so the rows of a GRPO
        group (and the same prompt in a later step) are distinct episodes of one setup."""
        try:
            spec = json.loads(prompt)
        except (TypeError, ValueError) as e:
            raise ValueError(
                f"prompt {str(prompt)[:80]!r} is not an episode spec: make the rows with "
                "dealgym.trl.dataset(family, count, kind='rollout')"
            ) from e
        if (
            not isinstance(spec, dict)
            or "family" not in spec
            or ("index" not in spec and "scenario_id" not in spec)
        ):
            raise ValueError(
                f"prompt {prompt!r}: an episode spec names `family` and `index` (or `scenario_id`)"
            )
        return _core.Game(
            spec["family"],
            index=spec.get("index"),
            scenario_id=spec.get("scenario_id"),
            seed=int(spec.get("seed", 0)),
            member=member,
            learner_role=spec.get("learner_role"),
            first_mover=spec.get("first_mover"),
            rules=self.rules,
            rewards=self.rewards,
            opponent=self.opponent,
            training=None
            if self.training_run is None
            else {"run": self.training_run, "step": self._step},
        )

    def _prepare(
        self, row: _Row, tokens: ExactTokens, budget: int, context: int | None
    ) -> tuple[list[int], int, str | None] | None:
        """Set the prompt ids of the learner's turn now; answer the ids to sample from, how
        many may be sampled and the limit that holds the turn below ``turn_tokens`` (if one
        does), or ``None`` when the budget is spent (the row is then unfinished)."""
        added = tokens.next_prompt(row.game, row.role)["prompt_ids"]
        first = row.prompt_ids is None
        played = row.game.token_sequence(row.role) or []
        sequence = played + added
        # The completion so far: every id of the seat's sequence after its first prompt.
        completion = 0 if first else len(played) - len(row.prompt_ids or [])
        left = budget - completion - (0 if first else len(added))
        if left < 1:
            return self._unfinished(
                row, f"its completion would pass max_completion_length={budget}"
            )
        if context is not None and len(sequence) >= context:
            return self._unfinished(
                row, f"its sequence would pass the model's context of {context} ids"
            )
        fits = context - len(sequence) if context is not None else left
        room = min(self.turn_tokens, left, fits)
        # What holds the turn to less than turn_tokens, if anything: a cut there is the limit's.
        bound = None
        if room < self.turn_tokens:
            bound = (
                f"max_completion_length={budget}"
                if left <= fits
                else f"the model's context of {context} ids"
            )
        if first:
            row.prompt_ids = list(added)
        return sequence, room, bound

    def _unfinished(self, row: _Row, why: str) -> None:
        row.status = "unfinished"
        row.detail = f"stopped before its end: {why}"
        return None

    def _play(
        self,
        row: _Row,
        ids: list[int],
        lps: list[float | None] | None,
        cut: bool,
        tokens: ExactTokens,
        eos: list[int],
        *,
        bound: str | None = None,
    ) -> None:
        """Step the learner's turn with the ids it sampled. ``bound``: the limit that held the
        turn below ``turn_tokens`` (what was left of the budget or the context); a turn cut
        there is the harness's limit, not a broken turn of the model's, and the row is
        unfinished instead of stepped (stepped, it would be read as malformed and forfeit), and
        its ids are left out of the row (the row is the seat's trajectory: what the game saw)."""
        if not ids:
            raise RuntimeError("the sampler returned no tokens for this turn")
        finished = ids[-1] in eos and not cut
        if bound is not None and not finished:
            # Not played, so not in the row either: the row is what the game saw.
            self._unfinished(row, f"its turn was cut at the {len(ids)} ids left under {bound}")
            return
        action: dict[str, Any] = {
            "text": tokens.tokenizer.decode(ids, skip_special_tokens=True),
            "completion_ids": ids,
            "finish_reason": "stop" if finished else "length",
        }
        if lps is not None and all(lp is not None for lp in lps):
            action["logprobs"] = [float(lp) for lp in lps]
        row.game.step(action, role=row.role)
        if row.game.done:
            row.status = "done"

    def _fail(self, row: _Row, error: Exception) -> None:
        row.status = "error"
        row.detail = f"{type(error).__name__}: {error}"
        log.warning("dealgym rollout %s ends as an error: %s", row.game.scenario_id, row.detail)

    def _result(self, rows: list[_Row], eos: list[int], records: str | None) -> dict[str, Any]:
        self.games = [row.game for row in rows]
        self.details = [row.detail for row in rows]
        self.outcomes = []
        rewards = []
        sequences = []
        for row in rows:
            # The row is the learner's trajectory, by the core's one rule (Game.trajectory):
            # its first prompt, then every id since, sampled ids under mask 1.
            prompt_ids, completion_ids, env_mask, logprobs = row.prompt_ids or [], [], [], []
            if row.game.token_sequence(row.role):
                t = row.game.trajectory(row.role)
                prompt_ids, completion_ids, env_mask = (
                    t["prompt_ids"],
                    t["response_ids"],
                    t["mask"],
                )
                logprobs = t["logprobs"] or [None if m else 0.0 for m in env_mask]
            if row.status == "done":
                outcome = row.game.outcome["kind"]
                rewards.append(float(row.game.rewards[row.role]))
                if records is not None:
                    _write_record(records, row.game)
            elif row.status == "unfinished":
                outcome = "unfinished"
                rewards.append(self.unfinished_reward)
            else:
                outcome = "error"
                rewards.append(self.error_reward)
                # The engine, not the policy, ended it: none of its ids is trained on (its
                # reward still stands in the group's statistics).
                env_mask = [0] * len(env_mask)
            if not completion_ids:
                # Nothing was sampled (the first turn failed or did not fit): TRL needs one id;
                # an end-of-turn id, masked out of the loss.
                completion_ids, env_mask, logprobs = [eos[0]], [0], [0.0]
            sequences.append((prompt_ids, completion_ids, env_mask, logprobs))
            self.outcomes.append(outcome)
            self.counts[outcome] += 1
        # The model's generate gives no logprobs (TRL's own transformers path passes none);
        # vLLM does: then each row's, with 0.0 on the environment's ids.
        sampled = any(
            lp is not None
            for _, _, mask, lps in sequences
            for lp, m in zip(lps, mask, strict=True)
            if m
        )
        return {
            "prompt_ids": [s[0] for s in sequences],
            "completion_ids": [s[1] for s in sequences],
            "logprobs": [s[3] for s in sequences] if sampled else None,
            "env_mask": [s[2] for s in sequences],
            "dealgym_reward": rewards,
            "dealgym_outcome": list(self.outcomes),
        }


def make_rollout_func(
    *,
    opponent: str = "rule:linear",
    rules: Mapping[str, Any] | None = None,
    rewards: Mapping[str, Any] | None = None,
    turn_tokens: int = 256,
    unfinished_reward: float = -1.0,
    error_reward: float = 0.0,
    chat_template_kwargs: Mapping[str, Any] | None = None,
    records: str | os.PathLike[str] | None = None,
    training_run: str | None = None,
    cache_across_turns: bool = True,
) -> DealRollout:
    """TRL's ``rollout_func(prompts, trainer)`` over dealgym episodes, for
    ``GRPOTrainer(rollout_func=..., reward_funcs=[rollout_reward])`` and rows from
    ``dataset(family, count, kind="rollout")``.

    One rollout per incoming prompt, in the prompts' order (TRL has already repeated each
    prompt ``num_generations`` times: a GRPO group is those rows, one scenario and seed, each
    its own episode through its own ``member``). Each episode is played in dealgym's text
    grammar against ``opponent`` (a built-in negotiator) under ``rules`` and ``rewards``, the
    learner sampled by the trainer's own backend: ``trainer.vllm_generation`` when the
    trainer uses vLLM (server or colocate), else the model's ``generate`` with the trainer's
    ``generation_config``. Token-exact: the sampled ids are the completion's, never
    re-tokenized; the ids of the messages between turns are in the completion with
    ``env_mask`` 0 (and logprob 0.0), so the loss is on sampled ids only.

    Budget: a turn samples at most ``turn_tokens``; the completion of a whole episode stays
    within ``max_completion_length`` (and the model's context). An episode the budget stops
    before it ends is ``unfinished`` and gets ``unfinished_reward``; one whose game raised
    (an exception from the engine or the tokenizer) is ``error`` and gets ``error_reward``.
    Neither is dropped or moved: its row keeps its place, with what was sampled, and its
    outcome is in the ``dealgym_outcome`` field and in ``counts``. ``records`` appends each
    finished episode's record there (``dealgym replay --verify`` reads it; one file per
    process). ``chat_template_kwargs`` default to the trainer's. ``training_run`` names the
    run in each record with the trainer's optimizer step the episode was sampled at
    (``training.run``, ``training.step``): ``dealgym report`` then charts the reward, the
    format-ok rate and the deal rate per step, one line per run (a trained run beside its
    zero-learning-rate control, say).

    ``cache_across_turns`` (on the model's ``generate`` path, one process, no DeepSpeed or
    FSDP): each episode keeps its KV cache from turn to turn, so a turn reads only the ids added
    since the last (``dealgym._turn_cache.TurnCache``), sampled with the trainer's
    ``generation_config`` through transformers' own logits processors; ``False`` calls
    ``generate`` on each turn's whole sequence (the way to compare the two). With vLLM, or on
    several processes, turns go through ``generate`` or vLLM as before whatever this says:
    vLLM keeps its own prefix cache (its ``enable_prefix_caching``)."""
    return DealRollout(
        opponent=opponent,
        rules=rules,
        rewards=rewards,
        turn_tokens=turn_tokens,
        unfinished_reward=unfinished_reward,
        error_reward=error_reward,
        chat_template_kwargs=chat_template_kwargs,
        records=records,
        training_run=training_run,
        cache_across_turns=cache_across_turns,
    )


def rollout_reward(
    prompts: Sequence[Any],
    completions: Sequence[Any],
    dealgym_reward: Sequence[float] | None = None,
    dealgym_outcome: Sequence[str] | None = None,
    log_metric: Any = None,
    **kwargs: Any,
) -> list[float]:
    """The reward function of ``make_rollout_func``'s rollouts: each rollout's
    ``dealgym_reward``. With TRL's ``log_metric`` it logs the share of each outcome
    (``dealgym/deal``, ``dealgym/unfinished``, ``dealgym/error``, ...)."""
    if dealgym_reward is None:
        raise ValueError(
            "rollout_reward reads the `dealgym_reward` field of dealgym.trl.make_rollout_func's "
            "rollouts; this trainer's rollouts have none"
        )
    if len(dealgym_reward) != len(prompts):
        raise ValueError(f"{len(dealgym_reward)} rewards for {len(prompts)} prompts")
    if log_metric is not None and dealgym_outcome is not None:
        counts = collections.Counter(dealgym_outcome)
        for kind in OUTCOMES:
            log_metric(f"dealgym/{kind}", counts[kind] / max(1, len(dealgym_outcome)))
    return [float(r) for r in dealgym_reward]


# ---------------------------------------------------------------------------------------------
# The trainer's sampler
# ---------------------------------------------------------------------------------------------


def _context_length(trainer: Any) -> int | None:
    """The most ids a sequence may have: vLLM colocate's model length, else the model's
    positions (what TRL's own tool loop holds a sequence to)."""
    if (
        getattr(trainer, "use_vllm", False)
        and getattr(trainer.vllm_generation, "mode", None) == "colocate"
    ):
        return int(trainer.vllm_generation.llm.llm_engine.model_config.max_model_len)
    config = getattr(trainer.model, "config", None)
    config = getattr(config, "text_config", None) or config
    value = getattr(config, "max_position_embeddings", None)
    return int(value) if value else None


def _any_left(trainer: Any, local: int) -> bool:
    """Whether any process still has a turn to sample: every process samples in lockstep, since
    vLLM's server and tensor-parallel modes (and ZeRO-3) sample collectively."""
    accelerator = trainer.accelerator
    if accelerator.num_processes == 1:
        return local > 0
    import torch

    counts = accelerator.gather(torch.tensor([local], device=accelerator.device))
    return int(counts.sum().item()) > 0


def _sample(
    trainer: Any, turn: list[tuple[Any, list[int], int, str | None]], cache: Any = None
) -> list[tuple[list[int], list[float | None] | None]]:
    """One completion per row of ``turn`` (``(row, sequence, limit, bound)``), by the
    trainer's backend: the rows' ``cache`` where the call has one (``_turn_cache``), else
    vLLM or the model's ``generate`` over each whole sequence, at most the largest limit; each
    with its sampled ids' logprobs where the backend gives them."""
    if cache is not None:
        return _sample_cached(trainer, cache, turn)
    prompts = [seq for _, seq, _, _ in turn]
    max_new = max((n for _, _, n, _ in turn), default=1)
    if getattr(trainer, "use_vllm", False):
        return _sample_vllm(trainer, prompts, max_new)
    return _sample_generate(trainer, prompts, max_new)


def _turn_cache(trainer: Any) -> Any:
    """A ``TurnCache`` for this call's rows where the trainer samples with the model's own
    ``generate`` in one process without sharded parameters; else None (``_sample``)."""
    if getattr(trainer, "use_vllm", False) or trainer.accelerator.num_processes != 1:
        return None
    if getattr(trainer, "is_deepspeed_enabled", False) or getattr(trainer, "is_fsdp_enabled", False):
        return None
    from ._turn_cache import TurnCache

    config = copy.deepcopy(trainer.generation_config)
    return TurnCache(trainer.model, config, trainer.eos_token_ids, _pad_id(trainer))


def _pad_id(trainer: Any) -> int:
    """The id a batch is padded with: the tokenizer's pad, else the first end-of-turn id."""
    processing = trainer.processing_class
    pad = getattr(processing, "tokenizer", processing).pad_token_id
    return trainer.eos_token_ids[0] if pad is None else pad


def _for_generation(trainer: Any) -> Any:
    """TRL's own context for sampling: the model unwrapped (ZeRO-3's parameters gathered) with
    the trainer's training-time generation settings."""
    from trl.models import unwrap_model_for_generation

    args = trainer.args
    return unwrap_model_for_generation(
        trainer.model_wrapped,
        trainer.accelerator,
        gather_deepspeed3_params=args.ds3_gather_for_generation,
        generation_kwargs=trainer.generation_kwargs,
        gradient_checkpointing_kwargs=args.gradient_checkpointing_kwargs,
    )


def _sample_cached(trainer: Any, cache: Any, turn: list[Any]) -> list[Any]:
    """One turn of every row in ``turn`` (``(row, sequence, limit, bound)``) through the
    rows' cache, under the trainer's generation context (the training-time generation
    settings on the unwrapped model) and its mixed precision (``bf16``/``fp16``: the autocast
    its loss is computed under, so the policy sampled is the policy trained)."""
    with _for_generation(trainer) as model, trainer.accelerator.autocast():
        cache.model = model
        drawn = cache.sample(
            [row for row, _, _, _ in turn],
            [seq for _, seq, _, _ in turn],
            [limit for _, _, limit, _ in turn],
        )
    return [(ids, None) for ids in drawn]


def _sample_vllm(trainer: Any, prompts: list[list[int]], max_new: int) -> list[Any]:
    generation = trainer.vllm_generation
    if not prompts and generation.mode == "colocate" and generation.tensor_parallel_size == 1:
        return []  # nothing collective to join
    saved = generation.max_completion_length
    generation.max_completion_length = max_new  # read by generate() as its max_tokens
    try:
        # num_generations=1: each prompt is its own episode's sequence (TRL's server mode
        # would otherwise sample n per prompt from every n-th one).
        _, ids, logprobs, _ = generation.generate(prompts=prompts, images=None, num_generations=1)
    finally:
        generation.max_completion_length = saved
    if logprobs is None:
        return [(list(x), None) for x in ids]
    return [(list(x), [lp[0] for lp in seq]) for x, seq in zip(ids, logprobs, strict=True)]


def _sample_generate(trainer: Any, prompts: list[list[int]], max_new: int) -> list[Any]:
    """The model's ``generate`` with the trainer's ``generation_config``, as GRPOTrainer's own
    transformers path samples (left padding, the model unwrapped for generation)."""
    import torch
    from trl.trainer.utils import pad

    dummy = not prompts
    if dummy:
        # Another process still samples: join its collective generate (ZeRO-3) with a stand-in.
        prompts = [[trainer.eos_token_ids[0]]]
    pad_id = _pad_id(trainer)
    device = trainer.accelerator.device
    tensors = [torch.tensor(p) for p in prompts]
    ids = pad(
        tensors,
        padding_value=pad_id,
        padding_side="left",
        pad_to_multiple_of=trainer.pad_to_multiple_of,
    )
    mask = pad(
        [torch.ones_like(t) for t in tensors],
        padding_value=0,
        padding_side="left",
        pad_to_multiple_of=trainer.pad_to_multiple_of,
    )
    config = copy.deepcopy(trainer.generation_config)
    config.max_new_tokens = max_new
    dist = getattr(trainer, "_dist", None)  # FSDP: the full parameters for generation
    with (
        _for_generation(trainer) as model,
        torch.no_grad(),
        dist.summon_full_params(trainer.model_wrapped, recurse=False)
        if dist
        else contextlib.nullcontext(),
    ):
        out = model.generate(
            input_ids=ids.to(device), attention_mask=mask.to(device), generation_config=config
        )
    if dummy:
        return []
    eos = set(trainer.eos_token_ids)
    samples = []
    for row in out[:, ids.size(1) :].tolist():
        end = next((i for i, x in enumerate(row) if x in eos), None)
        samples.append((row if end is None else row[: end + 1], None))
    return samples
