"""dealgym for verl's agent loop (``verl`` 0.9.1): ``DealAgentLoop``, registered as ``"dealgym"``.

verl's rollout runs one agent loop per sample: ``run(sampling_params, **row)`` gets a dataset row
and answers with one ``AgentLoopOutput`` (prompt ids, response ids with a mask of what the model
sampled, logprobs, the reward). Here a row names a negotiation (family, scenario, seed) and the
seat that learns; the loop plays the game token-exact through ``dealgym.tokens.ExactTokens``
with verl's own server manager (``server_manager.generate`` on ids), so sampled ids are never
re-tokenized, and answers with the learning seat's conversation as one sample::

    # verl_agent_loop.yaml (AGENT_LOOP_CONFIG), named by
    # actor_rollout_ref.rollout.agent.agent_loop_config_path
    - name: dealgym
      _target_: dealgym.verl.DealAgentLoop
      max_tokens_per_turn: 512
      unfinished_reward: 0.0

    import dealgym.verl
    dealgym.verl.dataset("train.parquet", "casino", seeds=range(64))   # one row per seat

The learning seat's sample is its trajectory, ``Game.trajectory`` (the core's one rule, the one
``dealgym export --format verl`` writes): ``prompt_ids`` is its first prompt; ``response_ids`` is everything
after it: its sampled ids (mask 1, the server's logprobs) and the ids of the messages the game
sends it between its turns (mask 0, logprob 0.0). ``reward_score`` is the seat's reward from
the game. In self-play the other seat is played by the same server manager on the same weights,
and its tokens are discarded: verl's trainer cannot give two seats of one ``run`` separate
advantages (its GRPO takes the last output of a session), so each seat learns from rows of its
own (``dataset`` writes one per seat), grouped with its own role by ``uid``.

``response_length`` is kept by the loop: a learner turn is sampled with ``max_tokens`` no larger
than what is left of it, and a self-play opponent's turn within the servers' context
(``prompt_length + response_length``). When nothing is left before the game ends, the game
cannot be scored (dealgym has no way to end a game early), so the sample is *unfinished*: its
response is what was played, its reward ``unfinished_reward``, and
``reward_extra_info["unfinished"]`` is 1. It is never dropped silently.

A failed episode raises (a server error, an aborted generation, a step the game refuses, a first
prompt longer than ``prompt_length``), naming the game and seat: verl's v1 trainer marks the
group failed; returning ``None`` would crash it.
"""

from __future__ import annotations

import hashlib
import json
import os
import time
import uuid
from collections import OrderedDict
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from verl.experimental.agent_loop.agent_loop import (
    AgentLoopBase,
    AgentLoopMetrics,
    AgentLoopOutput,
    register,
)

from . import _core
from .tokens import ExactTokens

#: The agent name rows carry in their ``agent_name`` column, and the registry key.
AGENT_NAME = "dealgym"

#: The agent loop config shipped with the package, for
#: ``actor_rollout_ref.rollout.agent.agent_loop_config_path``.
AGENT_LOOP_CONFIG = os.path.join(os.path.dirname(os.path.abspath(__file__)), "verl_agent_loop.yaml")

#: The outcome kinds a finished game scores (``error`` is a backend failure, never scored).
SCORED = ("deal", "walk_away", "reject_loop", "max_turns", "format_forfeit")

#: ``reward_extra_info`` keys (verl wants the same keys, as numbers, on every sample).
EXTRA_INFO_KEYS = ("deal", "unfinished", "format_ok", "rho", "utility", "learner_turns")


class EpisodeFailed(RuntimeError):
    """A dealgym episode that cannot be scored: the message names the game, member and seat."""


@register(AGENT_NAME)
class DealAgentLoop(AgentLoopBase):
    """Plays one dealgym game per sample with verl's server manager, token-exact.

    Constructor keywords beyond verl's (set them in the agent loop yaml, whose entries hydra
    passes to the constructor): ``max_tokens_per_turn`` (the most ids one turn samples; default
    ``response_length``), ``unfinished_reward`` (the reward of a sample whose
    ``response_length`` ran out before the game ended; default 0.0), ``record_path`` (append
    each finished game's record there; ``{pid}`` is replaced by the worker's process id, so
    each of verl's agent loop workers writes a file of its own).
    """

    def __init__(
        self,
        trainer_config: Any,
        server_manager: Any,
        tokenizer: Any,
        processor: Any,
        dataset_cls: Any,
        data_config: Any,
        *,
        max_tokens_per_turn: int | None = None,
        unfinished_reward: float = 0.0,
        record_path: str | None = None,
        **kwargs: Any,
    ) -> None:
        super().__init__(
            trainer_config,
            server_manager,
            tokenizer,
            processor,
            dataset_cls,
            data_config,
            **{k: v for k, v in kwargs.items() if k == "hf_model_type"},
        )
        self.prompt_length = int(self.rollout_config.prompt_length)
        self.response_length = int(self.rollout_config.response_length)
        self.max_tokens_per_turn = int(
            self.response_length if max_tokens_per_turn is None else max_tokens_per_turn
        )
        if self.max_tokens_per_turn < 1:
            raise ValueError(f"max_tokens_per_turn={max_tokens_per_turn}: must be >= 1")
        self.unfinished_reward = float(unfinished_reward)
        self.record_path = record_path
        self.tokens = ExactTokens(self.tokenizer, **dict(self.apply_chat_template_kwargs or {}))

    async def run(self, sampling_params: dict[str, Any], **kwargs: Any) -> AgentLoopOutput:
        spec = episode_spec(kwargs.get("extra_info"))
        member = _member(kwargs)
        game = _core.Game(
            spec["family"],
            scenario_id=spec["scenario_id"],
            seed=spec["seed"],
            member=member,
            learner_role=spec["seat"],
            first_mover=spec["first_mover"],
            rules=spec["rules"],
            rewards=spec["rewards"],
            opponent=spec["opponent"],
        )
        return await _Episode(self, game, member, sampling_params, kwargs).play()


class _Episode:
    """One ``run``: the game, the learning seat's ids as verl will train on them, and the
    bookkeeping the output reports."""

    def __init__(
        self,
        loop: DealAgentLoop,
        game: _core.Game,
        member: int,
        sampling_params: Mapping[str, Any],
        row: Mapping[str, Any],
    ) -> None:
        self.loop = loop
        self.game = game
        self.learner = game.learner_role
        self.sampling_params = dict(sampling_params)
        self.name = (
            f"dealgym game {game.family}/{game.scenario_id} (seed {game.seed}, member {member}, "
            f"uid {row.get('uid', '-')})"
        )
        self.request = f"dealgym-{row.get('uid', 'row')}-{member}-{uuid.uuid4().hex[:8]}"
        self.prompt_ids: list[int] | None = None  # the learner's first prompt, once set
        self.has_logprobs: bool | None = None
        self.learner_turns = 0
        self.format_ok: list[bool] = []  # per learner turn, readable or not
        self.num_turns = 0
        self.unfinished = False
        self.generate_s = 0.0
        self.preempted = -1

    async def play(self) -> AgentLoopOutput:
        while not self.game.done:
            role = self.game.to_move
            if role == self.learner:
                if not await self._learner_turn():
                    self.unfinished = True
                    break
            elif not await self._opponent_turn(role):
                self.unfinished = True
                break
        if self.game.done:
            self._write_record()
        return self._output()

    async def _learner_turn(self) -> bool:
        """Sample the learning seat's turn within what is left of ``response_length``;
        ``False`` when nothing is left (the sample is then unfinished)."""
        messages, _ = self.game.prompt_messages(self.learner)
        ids = self._prompt(self.learner)
        if self.prompt_ids is None:
            if len(ids) > self.loop.prompt_length:
                raise EpisodeFailed(
                    f"{self.name}: the {self.learner} seat's first prompt is {len(ids)} ids, "
                    f"longer than rollout.prompt_length={self.loop.prompt_length} (verl would "
                    "cut its left end and the ids would no longer be the ones sampled from); "
                    "raise prompt_length or filter such rows"
                )
            self.prompt_ids = ids
            new_ids: list[int] = []
        else:
            new_ids = ids[len(self.game.token_sequence(self.learner) or []) :]
        budget = self.loop.response_length - self._response_len() - len(new_ids)
        if budget <= 0:
            return False
        max_tokens = min(self.loop.max_tokens_per_turn, budget)
        out = await self._generate(self.learner, ids, max_tokens)
        sampled = [int(i) for i in out.token_ids]
        if len(sampled) > max_tokens:
            raise EpisodeFailed(
                f"{self.name}: the server manager answered the {self.learner} seat with "
                f"{len(sampled)} ids for max_tokens={max_tokens}"
            )
        logprobs = out.log_probs
        if logprobs is not None and len(logprobs) != len(sampled):
            raise EpisodeFailed(
                f"{self.name}: the server manager answered the {self.learner} seat with "
                f"{len(sampled)} ids and {len(logprobs)} logprobs"
            )
        if self.has_logprobs is None:
            self.has_logprobs = logprobs is not None
        elif self.has_logprobs != (logprobs is not None):
            raise EpisodeFailed(
                f"{self.name}: the server manager returned logprobs for some of the "
                f"{self.learner} seat's turns and not for others"
            )
        if max_tokens < self.loop.max_tokens_per_turn and self._cut(sampled, max_tokens):
            # Cut by what was left of response_length, not by the turn's own cap: the seat ran
            # out of room, which is no move of its own (stepped, it would be read as a broken
            # turn and forfeit). The turn is not played, and the sample, what was played, is
            # unfinished.
            return False
        self._step(self.learner, sampled, logprobs, max_tokens)
        last_turn = self.game.state(self.learner).get("last_turn") or {}
        self.format_ok.append(bool(last_turn.get("format_ok")))
        self.learner_turns += 1
        # verl's count: the chat's user and assistant turns (system aside), this reply included.
        self.num_turns = sum(m["role"] != "system" for m in messages) + 1
        return True

    async def _opponent_turn(self, role: str) -> bool:
        """Self-play: the same server manager plays the other seat; its ids are not trained.
        It samples within the servers' context (``prompt_length + response_length``, which
        verl's servers hold every request to); ``False`` when its conversation has filled it,
        and the game cannot go on (the sample is then unfinished)."""
        ids = self._prompt(role)
        room = self.loop.prompt_length + self.loop.response_length - len(ids)
        if room <= 0:
            return False
        max_tokens = min(self.loop.max_tokens_per_turn, room)
        out = await self._generate(role, ids, max_tokens)
        sampled = [int(i) for i in out.token_ids]
        logprobs = out.log_probs
        if logprobs is not None and len(logprobs) != len(sampled):
            logprobs = None  # not trained on; the record keeps the ids alone
        if max_tokens < self.loop.max_tokens_per_turn and self._cut(sampled, max_tokens):
            return False  # cut by the context left, not its own cap: as for the learner
        self._step(role, sampled, logprobs, max_tokens)
        return True

    def _prompt(self, role: str) -> list[int]:
        try:
            return self.loop.tokens.prompt(self.game, role)
        except Exception as e:
            raise EpisodeFailed(
                f"{self.name}: the {role} seat's prompt ids failed: {type(e).__name__}: {e}"
            ) from e

    async def _generate(self, role: str, ids: list[int], max_tokens: int) -> Any:
        params = {**self.sampling_params, "max_tokens": max_tokens}
        start = time.perf_counter()
        try:
            out = await self.loop.server_manager.generate(
                request_id=f"{self.request}-{role}", prompt_ids=ids, sampling_params=params
            )
        except Exception as e:
            raise EpisodeFailed(
                f"{self.name}: the server manager failed on the {role} seat's turn: "
                f"{type(e).__name__}: {e}"
            ) from e
        finally:
            self.generate_s += time.perf_counter() - start
        if getattr(out, "stop_reason", None) == "aborted":
            raise EpisodeFailed(f"{self.name}: the {role} seat's generation was aborted")
        if role == self.learner and getattr(out, "num_preempted", None) is not None:
            self.preempted = max(self.preempted, 0) + int(out.num_preempted)
        return out

    def _step(
        self, role: str, sampled: list[int], logprobs: Sequence[float] | None, max_tokens: int
    ) -> None:
        cut = self._cut(sampled, max_tokens)
        action: dict[str, Any] = {
            "text": self.loop.tokenizer.decode(sampled, skip_special_tokens=True),
            "completion_ids": sampled,
            "finish_reason": "length" if cut else "stop",
        }
        if logprobs is not None:
            action["logprobs"] = [float(x) for x in logprobs]
        try:
            self.game.step(action, role=role)
        except Exception as e:
            raise EpisodeFailed(
                f"{self.name}: the {role} seat's step failed: {type(e).__name__}: {e}"
            ) from e

    def _cut(self, sampled: list[int], max_tokens: int) -> bool:
        """Whether a turn was cut: verl's servers say "completed" for a stop and for a cut
        alike, so a turn that used its whole ``max_tokens`` without ending on the
        end-of-sequence id was cut."""
        eos = getattr(self.loop.tokenizer, "eos_token_id", None)
        return len(sampled) >= max_tokens and (not sampled or sampled[-1] != eos)

    def _write_record(self) -> None:
        if self.loop.record_path is None:
            return
        path = self.loop.record_path.replace("{pid}", str(os.getpid()))
        with _core.RecordWriter(path) as out:
            out.write(self.game)

    def _response_len(self) -> int:
        """How many ids the learner's response holds so far: its sequence after its first
        prompt."""
        if self.prompt_ids is None:
            return 0
        return len(self.game.token_sequence(self.learner) or []) - len(self.prompt_ids)

    def _output(self) -> AgentLoopOutput:
        if self.learner_turns:
            # The sample is the learner's trajectory, by the core's one rule.
            t = self.game.trajectory(self.learner)
            prompt_ids, response_ids, response_mask = (
                t["prompt_ids"],
                t["response_ids"],
                t["mask"],
            )
            logprobs = t["logprobs"] or [0.0] * len(response_ids)
        elif self.prompt_ids is not None:
            # Its first turn did not fit what was left: the sample is its first prompt alone.
            prompt_ids, response_ids, response_mask, logprobs = self.prompt_ids, [], [], []
        else:
            # The game ended before the learning seat moved (the other seat walked away or
            # forfeited on the first turn). Its reward still
            # counts in its group, so the sample is its first prompt and one masked
            # end-of-sequence id: no gradient of its own, the reward at the last position as
            # verl puts it.
            prompt_ids = self._first_prompt()
            eos = getattr(self.loop.tokenizer, "eos_token_id", None)
            response_ids, response_mask, logprobs = [int(eos if eos is not None else 0)], [0], [0.0]
            self.num_turns = 1
        R = self.loop.response_length
        outcome = self.game.outcome_for(self.learner) if self.game.done else None
        if outcome is not None and outcome.get("kind") not in SCORED:
            raise EpisodeFailed(f"{self.name}: ended as {outcome.get('kind')!r}, not a score")
        reward = (
            float((self.game.rewards or {})[self.learner])
            if self.game.done
            else self.loop.unfinished_reward
        )
        format_ok = self._format_ok()
        info = {
            "deal": float(bool(outcome) and outcome.get("kind") == "deal"),
            "unfinished": float(self.unfinished),
            "format_ok": format_ok,
            "rho": float((outcome or {}).get("rho") or 0.0),
            "utility": float((outcome or {}).get("utility") or 0.0),
            "learner_turns": float(self.learner_turns),
        }
        return AgentLoopOutput(
            prompt_ids=prompt_ids,
            response_ids=response_ids[:R],
            response_mask=response_mask[:R],
            response_logprobs=logprobs[:R] if self._with_logprobs() else None,
            reward_score=reward,
            num_turns=self.num_turns,
            metrics=AgentLoopMetrics(
                generate_sequences=self.generate_s, num_preempted=self.preempted
            ),
            extra_fields={
                "turn_scores": [],
                "tool_rewards": [],
                "reward_extra_info": info,
                "dealgym": {
                    "role": self.learner,
                    "scenario_id": self.game.scenario_id,
                    "seed": self.game.seed,
                    "outcome": (outcome or {}).get("kind") or "unfinished",
                    "by": (outcome or {}).get("by"),
                    "terms": (outcome or {}).get("terms"),
                    "format_ok": format_ok,
                    "unfinished": self.unfinished,
                },
            },
        )

    def _with_logprobs(self) -> bool:
        """Whether the sample carries logprobs: when the server gave them, or (for a seat
        that never sampled) when they were asked for, so every sample of a batch agrees."""
        if self.has_logprobs is None:
            return bool(self.sampling_params.get("logprobs"))
        return self.has_logprobs

    def _first_prompt(self) -> list[int]:
        messages = self.game.observe(self.learner)["messages"]
        first = [messages[0]] + [m for m in messages[1:2] if m["role"] == "user"]
        return self.loop.tokens.render(first, continuation=False)

    def _format_ok(self) -> float:
        """The learning seat's share of readable turns (1.0 when it never moved)."""
        if not self.format_ok:
            return 1.0
        return sum(self.format_ok) / len(self.format_ok)


#: Members handed out per ``uid`` in this process, for trainers that pass no ``session_id``
#: (the most recent uids only: a long run sees a new uid per row and step).
_MEMBERS: OrderedDict[str, int] = OrderedDict()
_MEMBERS_KEPT = 65536


#: How many runs of one ``uid`` a member number leaves room for (``rollout.n`` at most).
_SESSIONS = 1 << 10


def _member(row: Mapping[str, Any]) -> int:
    """The game's ``member``: which run of which group it is. The run is the ``session_id``
    (0..n-1, what verl's v1 trainer passes each of a row's ``rollout.n`` runs); verl's legacy
    (v0) manager passes none, only the row repeated ``n`` times with one ``uid``, and there the
    runs of a ``uid`` in this worker process are numbered in the order they start. The group is
    the ``uid``, which verl draws anew for each row of each step: folded into the member, a row
    that comes back (a second epoch, a resampled row) plays new episodes, not the first ones'
    ids again."""
    uid = row.get("uid")
    session = row.get("session_id")
    if session is None:
        key = str(uid or "")
        session = _MEMBERS.get(key, 0)
        _MEMBERS[key] = session + 1
        _MEMBERS.move_to_end(key)
        while len(_MEMBERS) > _MEMBERS_KEPT:
            _MEMBERS.popitem(last=False)
    session = int(session)
    if uid is None:
        return session
    if not 0 <= session < _SESSIONS:
        raise ValueError(
            f"session {session} of uid {uid}: a group holds at most {_SESSIONS} runs "
            "(rollout.n)"
        )
    group = int.from_bytes(hashlib.blake2b(str(uid).encode(), digest_size=6).digest(), "big")
    return group * _SESSIONS + session


def episode_spec(extra_info: Mapping[str, Any] | None) -> dict[str, Any]:
    """The game a row names, from its ``extra_info`` (as ``dataset`` writes it): ``family``,
    ``scenario_id``, ``seed``, ``seat`` and optionally ``opponent``, ``first_mover``, and
    ``rules``/``rewards`` (JSON objects as text, so every row's ``extra_info`` has one
    parquet type). Empty strings mean "not set"."""
    if not isinstance(extra_info, Mapping):
        raise ValueError(
            f"a dealgym row needs an extra_info mapping (family, scenario_id, seed, seat), "
            f"not {type(extra_info).__name__}; write rows with dealgym.verl.dataset"
        )
    missing = [k for k in ("family", "scenario_id", "seed", "seat") if k not in extra_info]
    if missing:
        raise ValueError(
            f"a dealgym row's extra_info lacks {', '.join(missing)}: {dict(extra_info)}"
        )

    def text(key: str) -> str | None:
        value = extra_info.get(key)
        return None if value is None or value == "" else str(value)

    def table(key: str) -> dict[str, Any] | None:
        value = extra_info.get(key)
        if value is None or value == "":
            return None
        if isinstance(value, Mapping):
            return dict(value)
        try:
            parsed = json.loads(value)
        except json.JSONDecodeError as e:
            raise ValueError(
                f"a dealgym row's extra_info.{key} is not JSON: {value!r} ({e})"
            ) from e
        if not isinstance(parsed, dict):
            raise ValueError(f"a dealgym row's extra_info.{key} is not a JSON object: {value!r}")
        return parsed

    opponent = text("opponent")
    if opponent is not None and not opponent.startswith("rule:"):
        raise ValueError(
            f"extra_info.opponent={opponent!r}: a verl row plays against a built-in negotiator "
            "(rule:boulware, rule:tough, rule:linear, rule:conceder) or, empty, itself"
        )
    return {
        "family": str(extra_info["family"]),
        "scenario_id": str(extra_info["scenario_id"]),
        "seed": int(extra_info["seed"]),
        "seat": str(extra_info["seat"]),
        "opponent": opponent,
        "first_mover": text("first_mover"),
        "rules": table("rules"),
        "rewards": table("rewards"),
    }


def rows(
    family: str,
    *,
    scenario_ids: Sequence[str] | None = None,
    seeds: Iterable[int] = (0,),
    seats: Sequence[str] | None = None,
    opponent: str | None = None,
    first_mover: str | None = None,
    rules: Mapping[str, Any] | None = None,
    rewards: Mapping[str, Any] | None = None,
) -> list[dict[str, Any]]:
    """verl dataset rows: one per (scenario, seed, seat), every seat of the family unless
    ``seats`` names some. verl samples ``rollout.n`` episodes of each row (one GRPO group: one
    ``uid``, ``session_id`` 0..n-1, which becomes the game's ``member``), so each group holds
    one seat of one setup and its baseline is that seat's. ``prompt`` is the seat's opening
    chat (verl's ``raw_prompt``: logs, and ``filter_overlong_prompts``); the loop renders the
    prompts it samples from itself."""
    ids = list(scenario_ids) if scenario_ids is not None else _core.scenario_ids(family)
    all_seats = list(seats) if seats is not None else list(_core.roles(family))
    out: list[dict[str, Any]] = []
    for seed in seeds:
        for scenario_id in ids:
            for seat in all_seats:
                game = _core.Game(
                    family,
                    scenario_id=scenario_id,
                    seed=int(seed),
                    learner_role=seat,
                    first_mover=first_mover,
                    rules=rules,
                    rewards=rewards,
                    opponent=opponent,
                )
                out.append(
                    {
                        "data_source": f"dealgym/{family}",
                        "agent_name": AGENT_NAME,
                        "prompt": game.observe(seat)["messages"],
                        "ability": "negotiation",
                        "reward_model": {"style": "rule", "ground_truth": ""},
                        "extra_info": {
                            "index": len(out),
                            "family": family,
                            "scenario_id": scenario_id,
                            "seed": int(seed),
                            "seat": seat,
                            "opponent": opponent or "",
                            "first_mover": first_mover or "",
                            "rules": json.dumps(dict(rules)) if rules else "",
                            "rewards": json.dumps(dict(rewards)) if rewards else "",
                        },
                    }
                )
    return out


def dataset(path: str | os.PathLike[str], family: str, **kwargs: Any) -> int:
    """Write ``rows(family, **kwargs)`` to a parquet file for verl's ``RLHFDataset``
    (``data.train_files``); returns the number of rows."""
    import pandas as pd

    table = rows(family, **kwargs)
    pd.DataFrame(table).to_parquet(os.fspath(path))
    return len(table)
