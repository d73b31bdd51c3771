"""dealgym for the Tinker cookbook's RL loop (``tinker-cookbook`` 0.5.8, ``tinker`` 0.38.0).

The cookbook trains on token ids: an ``Env`` answers each sampled action (a list of ids) with the
next observation (a ``tinker.ModelInput``), and an ``EnvGroupBuilder`` makes the group whose
rewards GRPO centres. Here each seat of a negotiation is one ``Env`` over a shared
``dealgym.Game``, played token-exact through ``dealgym.tokens.ExactTokens``: a seat's next
observation is its previous observation, plus the ids it sampled, plus the ids of the new
messages alone, so sampled ids are never re-tokenized and each seat's trajectory becomes one
training sequence in ``trajectory_to_data``::

    from tinker_cookbook.rl.train import Config
    from dealgym.tinker import DealDatasetBuilder, drop_failed_groups

    dataset = DealDatasetBuilder(family="casino", model_name="Qwen/Qwen3-8B",
                                 renderer_name="qwen3_disable_thinking", group_size=8)
    config = Config(..., dataset_builder=dataset,
                    rollout_error_tolerance=drop_failed_groups(dataset.envs_per_group))

In self-play (the default) both seats of every game are envs of one group, so both learn: each
yields its own trajectory, and ``compute_group_rewards`` centres each reward on its role's mean
in the group (a buyer is compared with buyers, a seller with sellers). With
``opponent="rule:NAME"`` one seat learns against a built-in negotiator played in Rust.

A failed episode is never scored: an exception in a seat (the sampler, a step the game refuses)
fails both seats of its game, and ``drop_failed_groups`` (the cookbook's ``MinViableGroup`` with
no retries) drops the whole group.
"""

from __future__ import annotations

import asyncio
import math
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import chz
import tinker
from tinker_cookbook.completers import StopCondition
from tinker_cookbook.rl.rollout_strategy import MinViableGroup
from tinker_cookbook.rl.types import (
    Action,
    ActionExtra,
    Env,
    EnvGroupBuilder,
    InitialObservationOverflow,
    Metrics,
    Observation,
    RLDataset,
    RLDatasetBuilder,
    StepResult,
    Trajectory,
)

from . import _core
from .tokens import ExactTokens

#: How a dealgym outcome reads as the cookbook's ``StopReason`` (``stop/<reason>`` metric, and
#: ``Trajectory.stop_reason``): the negotiation's own endings complete it, the turn cap is the
#: cookbook's ``max_turns``, a format forfeit its ``parse_error`` for the seat that forfeited
#: (its partner's episode just completed).
STOP_REASONS = {
    "deal": "completed",
    "walk_away": "completed",
    "reject_loop": "completed",
    "max_turns": "max_turns",
    "format_forfeit": "parse_error",
}


def drop_failed_groups(envs_per_group: int) -> MinViableGroup:
    """The ``rollout_error_tolerance`` for dealgym groups: any failed trajectory drops the
    group, and nothing is retried.

    A retry would build a fresh group and run one env of it alone; in self-play that seat's
    partner never plays (dealgym answers such a seat with an error rather than let it wait).
    And a group missing one seat of a game would centre the other seat on a smaller baseline
    for no reason the data gives, so the group goes."""
    return MinViableGroup(min_successful=envs_per_group, max_retries=0)


class _Table:
    """One game and what its seats share: the token-exact renderer, the condition a seat waits
    on until it is to move, and the first failure of either seat, which ends both."""

    def __init__(
        self, game: _core.Game, tokens: ExactTokens, decode: Callable[[list[int]], str]
    ) -> None:
        self.game = game
        self.tokens = tokens
        self.decode = decode
        self.changed = asyncio.Condition()
        self.error: str | None = None
        self.written = False
        self.waking: asyncio.Task[None] | None = None

    def join(self, role: str) -> None:
        """Watch the rollout that plays ``role``: if it ends while the game runs (the sampler
        raised, a timeout cancelled it), the other seat must not wait for a move that never
        comes."""
        task = asyncio.current_task()
        if task is not None:
            task.add_done_callback(lambda t: self._seat_left(role, t))

    def _seat_left(self, role: str, task: asyncio.Task[Any]) -> None:
        if self.game.done or self.error is not None:
            return
        if task.cancelled():
            why = "it was cancelled (a per-rollout timeout?)"
        elif task.exception() is not None:
            exc = task.exception()
            why = f"{type(exc).__name__}: {exc}"
        else:
            why = "it returned"
        self.error = f"the {role} seat's rollout ended before the game did ({why})"
        # Kept, so the task is not collected before it wakes the other seat.
        self.waking = asyncio.get_running_loop().create_task(self.notify())

    async def fail(self, error: str) -> None:
        if self.error is None:
            self.error = error
        await self.notify()

    async def notify(self) -> None:
        async with self.changed:
            self.changed.notify_all()

    async def wait_for_turn(self, role: str) -> None:
        """Until ``role`` is to move or the game is over; raises once a seat of it failed."""
        async with self.changed:
            await self.changed.wait_for(
                lambda: self.error is not None or self.game.done or self.game.to_move == role
            )
        if self.error is not None:
            raise RuntimeError(
                f"dealgym game {self.game.scenario_id} (seed {self.game.seed}) failed, so its "
                f"{role} seat cannot be scored: {self.error}"
            )


class DealSeatEnv(Env):
    """One seat (``role``) of a game, as the cookbook's single-use ``Env``.

    Observations are the seat's token sequence so far plus the new messages' ids; the reward
    is the seat's dealgym reward on the step that ends the game (0 before); the final step's
    metrics carry ``stop/<reason>`` (``STOP_REASONS``) and ``dealgym/*`` (the outcome kind, a
    deal, the seat's format-ok rate, ρ and utility); every step's logs name the seat's role.
    The sampler's stop reason (``"stop"`` or ``"length"``) goes into the game's step as
    ``finish_reason`` and into the record."""

    def __init__(
        self,
        table: _Table,
        role: str,
        stop: StopCondition,
        *,
        mask_retried_turns: bool = False,
    ) -> None:
        self.table = table
        self.role = role
        self.stop = stop
        self.mask_retried_turns = mask_retried_turns

    @property
    def game(self) -> _core.Game:
        return self.table.game

    async def initial_observation(
        self,
    ) -> tuple[Observation, StopCondition] | InitialObservationOverflow:
        self.table.join(self.role)
        await self.table.wait_for_turn(self.role)
        if self.game.done:
            # The other seat ended the game before this one moved (a walk-away or a forfeit on
            # the first turn). The cookbook's only way to end a trajectory before its first
            # sample is this "overflow": no tokens, and the reward, this seat's outcome,
            # still counts in the group.
            return InitialObservationOverflow(
                reward=self._reward(), metrics=self._final_metrics(), logs=self._logs()
            )
        return await self._observe(), self.stop

    async def step(self, action: Action, *, extra: ActionExtra | None = None) -> StepResult:
        finish_reason = (extra or {}).get("stop_reason")
        try:
            info = self.game.step(
                {
                    "text": self.table.decode(list(action)),
                    "completion_ids": [int(i) for i in action],
                    "finish_reason": finish_reason,
                },
                role=self.role,
            )
        except Exception as e:
            await self.table.fail(f"the {self.role} seat's step failed: {type(e).__name__}: {e}")
            raise
        await self.table.notify()
        await self.table.wait_for_turn(self.role)
        metrics: Metrics = {}
        if info.retry and self.mask_retried_turns:
            metrics["parse_error_masked"] = 1.0
        if self.game.done:
            metrics.update(self._final_metrics())
            return StepResult(
                reward=self._reward(),
                episode_done=True,
                next_observation=tinker.ModelInput.empty(),
                next_stop_condition=self.stop,
                metrics=metrics,
                logs=self._logs(),
            )
        return StepResult(
            reward=0.0,
            episode_done=False,
            next_observation=await self._observe(),
            next_stop_condition=self.stop,
            metrics=metrics,
            logs=self._logs(),
        )

    async def _observe(self) -> Observation:
        try:
            return tinker.ModelInput.from_ints(self.table.tokens.prompt(self.game, self.role))
        except Exception as e:
            await self.table.fail(
                f"the {self.role} seat's prompt ids failed: {type(e).__name__}: {e}"
            )
            raise

    def _logs(self) -> dict[str, str | int | float]:
        logs: dict[str, str | int | float] = {
            "dealgym/role": self.role,
            "dealgym/scenario": self.game.scenario_id,
        }
        if self.game.done:
            outcome = self.game.outcome_for(self.role) or {}
            logs["dealgym/outcome"] = outcome.get("kind") or ""
            logs["dealgym/outcome_by"] = outcome.get("by") or ""
        return logs

    def _reward(self) -> float:
        rewards = self.game.rewards
        kind = (self.game.outcome or {}).get("kind")
        if rewards is None or kind not in STOP_REASONS:
            raise RuntimeError(
                f"dealgym game {self.game.scenario_id} ended as {kind!r}, which has no reward "
                "to train on"
            )
        return float(rewards[self.role])

    def _stop_reason(self, outcome: Mapping[str, Any]) -> str:
        kind = outcome.get("kind")
        if kind == "format_forfeit" and outcome.get("by") != self.role:
            return "completed"
        return STOP_REASONS[kind]

    def _final_metrics(self) -> Metrics:
        outcome = self.game.outcome_for(self.role) or {}
        kind = outcome.get("kind")
        record = self.game.record()
        seats = record["setup"]["seats"]
        turns = [t for t in record["turns"] if seats[t["seat"]]["role"] == self.role]
        metrics: Metrics = {
            f"stop/{self._stop_reason(outcome)}": 1.0,
            f"dealgym/outcome/{kind}": 1.0,
            "dealgym/deal": float(kind == "deal"),
            "dealgym/turns": float(len(turns)),
            "dealgym/rho": float(outcome.get("rho") or 0.0),
            "dealgym/utility": float(outcome.get("utility") or 0.0),
        }
        if turns:
            metrics["dealgym/format_ok"] = sum(bool(t.get("format_ok")) for t in turns) / len(turns)
        return metrics


def _load_tokenizer(tokenizer: Any) -> Any:
    if isinstance(tokenizer, str):
        from tinker_cookbook.tokenizer_utils import get_tokenizer

        return get_tokenizer(tokenizer)
    return tokenizer


@dataclass
class DealGroupBuilder(EnvGroupBuilder):
    """A GRPO group: ``games`` games of one scenario and seed (``Game(..., member=k)``: one
    setup, each its own episode and sampling seeds). In self-play (``opponent=None``) both
    seats of each game are envs, so the group has ``2 * games`` trajectories; with
    ``opponent="rule:NAME"`` only ``role`` (default: the game's learner role) is an env.

    ``tokenizer`` is the policy's Hugging Face tokenizer or its model name (loaded with the
    cookbook's ``get_tokenizer``); its chat template renders the seats' messages. The stop
    condition is ``stop``, or the stop sequences of the cookbook renderer ``renderer_name``.
    Everything here is configuration, so the builder pickles; games are made in ``make_envs``.
    ``record_path`` appends the record of every game of a group that was scored."""

    family: str
    tokenizer: Any
    scenario_id: str | None = None
    index: int | None = None
    seed: int = 0
    games: int = 4
    opponent: str | None = None
    role: str | None = None
    first_mover: str | None = None
    rules: Mapping[str, Any] | None = None
    rewards: Mapping[str, Any] | None = None
    renderer_name: str | None = None
    stop: Sequence[int] | Sequence[str] | None = None
    chat_template_kwargs: Mapping[str, Any] = field(default_factory=dict)
    mask_retried_turns: bool = False
    record_path: str | None = None
    _made: int = field(default=0, init=False, repr=False, compare=False)
    #: The games of the rollout under way, for inspection (emptied by ``cleanup``).
    in_play: list[_core.Game] = field(default_factory=list, init=False, repr=False, compare=False)
    _tables: list[_Table] = field(default_factory=list, init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        if self.games < 1:
            raise ValueError(f"games={self.games}: a group needs at least one game")
        if self.opponent is not None and not self.opponent.startswith("rule:"):
            raise ValueError(
                f"opponent={self.opponent!r}: a Tinker group plays against a built-in "
                "negotiator (rule:boulware, rule:tough, rule:linear, rule:conceder) or, with "
                "None, itself"
            )
        if self.stop is None and self.renderer_name is None:
            raise ValueError(
                "DealGroupBuilder needs stop= (stop token ids or strings) or renderer_name= "
                "(a cookbook renderer whose stop sequences are used)"
            )

    @property
    def envs_per_group(self) -> int:
        return self.games * (1 if self.opponent else 2)

    def __getstate__(self) -> dict[str, Any]:
        # Live games stay behind: a builder is sent to rollout workers before make_envs.
        state = dict(self.__dict__)
        state["_tables"] = []
        state["in_play"] = []
        state["_made"] = 0
        return state

    async def make_envs(self) -> Sequence[Env]:
        retry = self._made > 0
        first_member = self._made * self.games
        self._made += 1
        tokenizer = _load_tokenizer(self.tokenizer)
        tokens = ExactTokens(tokenizer, **dict(self.chat_template_kwargs))
        stop = self._stop_condition(tokenizer)

        def decode(ids: list[int]) -> str:
            return tokenizer.decode(ids, skip_special_tokens=True)

        envs: list[Env] = []
        for k in range(self.games):
            game = _core.Game(
                self.family,
                scenario_id=self.scenario_id,
                index=self.index,
                seed=self.seed,
                member=first_member + k,
                learner_role=self.role,
                first_mover=self.first_mover,
                rules=self.rules,
                rewards=self.rewards,
                opponent=self.opponent,
            )
            table = _Table(game, tokens, decode)
            if retry and self.opponent is None:
                # A retry strategy runs the first env of a new group alone: a self-play seat
                # whose partner never plays would wait for ever. Say so instead.
                table.error = (
                    "a rollout strategy retried one seat of a self-play game alone; its partner "
                    "never plays. Use dealgym.tinker.drop_failed_groups(envs_per_group)"
                )
            self._tables.append(table)
            self.in_play.append(game)
            seats = [game.learner_role] if self.opponent else list(game.roles)
            envs += [
                DealSeatEnv(table, role, stop, mask_retried_turns=self.mask_retried_turns)
                for role in seats
            ]
        return envs

    def _stop_condition(self, tokenizer: Any) -> StopCondition:
        if self.stop is not None:
            return list(self.stop)
        from tinker_cookbook import renderers

        return renderers.get_renderer(self.renderer_name, tokenizer).get_stop_sequences()

    async def compute_group_rewards(
        self, trajectory_group: list[Trajectory], env_group: Sequence[Env]
    ) -> list[tuple[float, Metrics]]:
        """Per-role baselines: each trajectory gets minus the mean reward of its role's
        trajectories in the group. The cookbook adds this to the step rewards and centres the
        totals on the group mean, which is then 0, so a seat's advantage is its reward minus
        its role's mean. ``env_group`` is matched by position: under ``MinViableGroup`` it
        holds the surviving envs in completion order, not ``make_envs`` order."""
        returns = [sum(t.reward for t in traj.transitions) for traj in trajectory_group]
        roles = [env.role for env in env_group]  # type: ignore[attr-defined]
        by_role: dict[str, list[float]] = {}
        for role, r in zip(roles, returns, strict=True):
            by_role.setdefault(role, []).append(r)
        baseline = {role: math.fsum(rs) / len(rs) for role, rs in by_role.items()}
        self._write_records(env_group)
        return [
            (-baseline[role], {"dealgym/reward": r, "dealgym/role_baseline": baseline[role]})
            for role, r in zip(roles, returns, strict=True)
        ]

    def _write_records(self, env_group: Sequence[Env]) -> None:
        if self.record_path is None:
            return
        tables = []
        for env in env_group:
            table = env.table  # type: ignore[attr-defined]
            if table.game.done and not table.written and table not in tables:
                tables.append(table)
        with _core.RecordWriter(self.record_path) as out:
            for table in tables:
                out.write(table.game)
                table.written = True

    async def cleanup(self) -> None:
        self._tables = []
        self.in_play = []
        self._made = 0

    def logging_tags(self) -> list[str]:
        return ["dealgym", self.family]


class DealDataset(RLDataset):
    """Batches of groups: batch ``i`` holds ``batch_size`` groups, one per scenario in turn
    (cycling through ``scenario_ids``), each seeded ``seed + i`` so no two batches repeat a
    setup. ``builder`` holds the rest of each group's configuration."""

    def __init__(
        self,
        builder: Mapping[str, Any],
        scenario_ids: Sequence[str],
        *,
        batch_size: int,
        n_batches: int,
        seed: int = 0,
    ) -> None:
        if not scenario_ids:
            raise ValueError("DealDataset needs at least one scenario id")
        if batch_size < 1 or n_batches < 1:
            raise ValueError(f"batch_size={batch_size}, n_batches={n_batches}: both must be >= 1")
        self.builder = dict(builder)
        self.scenario_ids = list(scenario_ids)
        self.batch_size = batch_size
        self.n_batches = n_batches
        self.seed = seed

    def get_batch(self, index: int) -> Sequence[EnvGroupBuilder]:
        if not 0 <= index < self.n_batches:
            raise IndexError(f"batch {index} of a dataset of {self.n_batches}")
        first = index * self.batch_size
        return [
            DealGroupBuilder(
                **self.builder,
                scenario_id=self.scenario_ids[(first + j) % len(self.scenario_ids)],
                seed=self.seed + index,
            )
            for j in range(self.batch_size)
        ]

    def __len__(self) -> int:
        return self.n_batches


@chz.chz
class DealDatasetBuilder(RLDatasetBuilder):
    """The cookbook's dataset configuration for dealgym: a family, the policy's model and
    renderer, groups of ``group_size`` games (self-play unless ``opponent`` names a rule),
    ``batch_size`` groups per batch over ``n_batches`` batches; the test set, when
    ``test_batches`` > 0, uses the seeds after the training ones."""

    family: str
    model_name: str
    renderer_name: str
    group_size: int = 4
    batch_size: int = 8
    n_batches: int = 100
    test_batches: int = 0
    seed: int = 0
    opponent: str | None = None
    role: str | None = None
    scenario_ids: tuple[str, ...] | None = None

    @property
    def envs_per_group(self) -> int:
        return self.group_size * (1 if self.opponent else 2)

    async def __call__(self) -> tuple[RLDataset, RLDataset | None]:
        ids = list(self.scenario_ids or _core.scenario_ids(self.family))
        builder = {
            "family": self.family,
            "tokenizer": self.model_name,
            "renderer_name": self.renderer_name,
            "games": self.group_size,
            "opponent": self.opponent,
            "role": self.role,
        }
        train = DealDataset(
            builder, ids, batch_size=self.batch_size, n_batches=self.n_batches, seed=self.seed
        )
        test = None
        if self.test_batches > 0:
            test = DealDataset(
                builder,
                ids,
                batch_size=self.batch_size,
                n_batches=self.test_batches,
                seed=self.seed + self.n_batches,
            )
        return train, test
