"""dealgym as a verifiers 0.4 (``verifiers.v1``) environment: each role of a negotiation is a
named agent, the ``dealgym`` engine referees, and every seat's trace carries its own reward.

Why a top-level package: verifiers finds a taskset by importing its id with ``-`` read as ``_``
(``verifiers/v1/utils/loaders.py``), so ``dealgym.verifiers`` cannot be named; the taskset id is
``dealgym-verifiers`` (or ``dealgym_verifiers``) and this package ships in the ``dealgym`` wheel.

What it does and what it may not do: the :class:`dealgym.Game` does everything a negotiation
is (parsing, flipping, regulation, endings, scores, rewards); this module only relays each seat's
new messages to its agent, hands the agent's reply back to the game, and writes the game's own
rewards onto each seat's trace. It never makes up a move or a reward: a seat whose model call
failed, or whose agent stopped before the game ended, fails the episode (see ``DealEnv.run``).

Rows: one task per (family, scenario, seed); the rollouts of one task (``-r``, a GRPO group) are
told apart by the game's ``member`` (one setup, each its own episode id and sampling seeds).
"""

from __future__ import annotations

import contextlib
from collections import Counter
from collections.abc import Iterator
from typing import Any

try:
    import verifiers.v1 as vf
    from verifiers.v1.types import AssistantMessage
except ImportError as e:  # verifiers missing, or a 0.3.x without the v1 API
    raise ImportError(
        "dealgym_verifiers needs verifiers 0.4 (the verifiers.v1 API): "
        "pip install 'verifiers==0.4.0' (or the dealgym[verifiers] extra)"
    ) from e
from pydantic import Field

import dealgym

#: Every role name of every family: an env config declares its agents as fields, and the field
#: name is the agent's name, so each role is an agent of its own (``--env.seller.model ...``)
#: and prime-rl's role-aware advantages (``rae``) keep one baseline per role. A family's run
#: opens only its two roles.
ROLES = ("buyer", "seller", "agent_1", "agent_2", "worker", "recruiter")


def _seat() -> vf.AgentConfig:
    """A seat's default agent: the plain chat harness (no tools, ``null``) in a local
    subprocess; the verifiers default runtime is a Prime sandbox, which needs a Prime login."""
    return vf.AgentConfig(harness={"id": "null"}, runtime=vf.SubprocessConfig())


class DealData(vf.TaskData):
    """A row: ``info`` holds ``family``, ``scenario_id``, ``index``, ``seed`` and the game's
    ``rules`` and ``rewards``."""

    info: dict[str, Any]


class DealTask(vf.Task[DealData]):
    """One (family, scenario, seed). Its prompt is empty: each seat's prompts come from the
    game, seat by seat, in ``DealEnv.run``."""


class DealTasksetConfig(vf.TasksetConfig):
    family: str = "craigslist"
    """The family: ahp, casino, craigslist, dnd or job_interview."""
    scenario_ids: list[str] = Field(default_factory=list)
    """Scenario ids to play (empty: the family's scenarios in order, see ``scenarios``)."""
    scenarios: int | None = Field(None, ge=1)
    """With no ``scenario_ids``: the first this many of the family's scenarios (None: all)."""
    seeds: list[int] = Field(default_factory=lambda: [0])
    """Seeds per scenario: one row per (scenario, seed)."""
    rules: dict[str, Any] = Field(default_factory=dict)
    """The game's rules (``max_rounds``, ``format_retries``, ``regulate_opponent``, ...)."""
    rewards: dict[str, Any] = Field(default_factory=dict)
    """The game's reward config (``kind = "surplus" | "threshold"``, ...)."""


class DealTaskset(vf.Taskset[DealTask, DealTasksetConfig]):
    def load(self) -> Iterator[DealTask]:
        config = self.config
        known = dealgym.scenario_ids(config.family)  # raises ScenarioError naming the families
        if config.scenario_ids:
            position = {sid: i for i, sid in enumerate(known)}
            missing = [sid for sid in config.scenario_ids if sid not in position]
            if missing:
                raise dealgym.ScenarioError(
                    f"taskset.scenario_ids: {missing} are not {config.family} scenarios "
                    f"(its ids look like {known[0]!r}; `dealgym scenarios list` names them)"
                )
            picked = [(position[sid], sid) for sid in config.scenario_ids]
        else:
            picked = list(enumerate(known))[: config.scenarios]
        for index, scenario_id in picked:
            for seed in config.seeds:
                yield DealTask(
                    DealData(
                        id=f"{scenario_id}#{seed}",
                        name=f"{scenario_id} seed {seed}",
                        prompt=None,
                        info={
                            "family": config.family,
                            "scenario_id": scenario_id,
                            "index": index,
                            "seed": seed,
                            "rules": config.rules,
                            "rewards": config.rewards,
                        },
                    ),
                    config.task,
                )


class DealEnvConfig(vf.EnvConfig):
    buyer: vf.AgentConfig = _seat()
    seller: vf.AgentConfig = _seat()
    agent_1: vf.AgentConfig = _seat()
    agent_2: vf.AgentConfig = _seat()
    worker: vf.AgentConfig = _seat()
    recruiter: vf.AgentConfig = _seat()
    """Each role's agent. One left to the run's model is the policy (both: shared-policy
    self-play); one given its own ``model`` (``--env.seller.model M``, and
    ``--env.seller.client.*`` for its endpoint) is a fixed opponent whose traces never train."""
    opponent: str | None = None
    """``rule:NAME`` (linear, boulware, conceder): the engine plays the seat that is not
    ``learner_role``, and only the learner's agent runs. None: both seats are agents."""
    learner_role: str | None = None
    """The role the model plays against a rule opponent (None: the family's default learner:
    the buyer on price tasks, the worker on job_interview, a side drawn by seed on items)."""
    records: str | None = None
    """A record file every finished game is appended to, as ``dealgym run`` writes one
    (``dealgym replay FILE --verify`` checks it). Failed episodes have no record."""


class DealEnv(vf.Env[DealEnvConfig]):
    def __init__(self, config: DealEnvConfig) -> None:
        super().__init__(config)
        family = self.taskset.config.family
        if self.config.learner_role is not None and self.config.opponent is None:
            raise ValueError(
                "env.learner_role names the model's seat against a rule opponent; "
                "set env.opponent (rule:linear, ...) too, or leave both unset for self-play"
            )
        # A game with the run's settings, built now, so a wrong family, rule name, role, rules
        # or reward field fails the run before any rollout, in the engine's own words.
        dealgym.Game(
            family,
            index=0,
            rules=self.taskset.config.rules or None,
            rewards=self.taskset.config.rewards or None,
            opponent=self.config.opponent,
            learner_role=self.config.learner_role,
        )
        self._members: Counter[tuple[str, int]] = Counter()
        self._writer: dealgym.RecordWriter | None = None

    async def start(self) -> None:
        if self.config.records:
            self._writer = dealgym.RecordWriter(self.config.records)

    async def stop(self) -> None:
        if self._writer is not None:
            self._writer.close()
            self._writer = None

    async def setup(self, agents: vf.Agents) -> None:
        # A seat pinned to its own model is the fixed opponent: its traces never train (prime-rl
        # skips traces whose agent is not trainable).
        for role in ROLES:
            if getattr(self.config, role).model is not None:
                getattr(agents, role).trainable = False

    def _game(self, info: dict[str, Any]) -> dealgym.Game:
        """The task's game; each rollout of one task gets the next ``member`` of its group."""
        key = (info["scenario_id"], info["seed"])
        member = self._members[key]
        self._members[key] += 1
        return dealgym.Game(
            info["family"],
            scenario_id=info["scenario_id"],
            seed=info["seed"],
            member=member,
            rules=info["rules"] or None,
            rewards=info["rewards"] or None,
            opponent=self.config.opponent,
            learner_role=self.config.learner_role,
        )

    async def run(self, task: DealTask, agents: vf.Agents) -> None:
        info = task.data.info
        game = self._game(info)
        played = (game.learner_role,) if self.config.opponent else game.roles
        interactions: dict[str, vf.Interaction] = {}
        sent = dict.fromkeys(played, 0)  # messages of each seat's chat already relayed
        async with contextlib.AsyncExitStack() as stack:
            while not game.done:
                role = game.to_move
                chat = game.observe(role)["messages"]
                if role not in interactions:
                    # A seat's agent starts when the seat first moves: one that never moves
                    # (the other walked away at once) has no trace, having sampled nothing.
                    seat = vf.Task(
                        vf.TaskData(
                            idx=task.data.idx,
                            id=task.data.id,
                            name=f"{task.data.name}: {role}",
                            prompt=None,
                            system_prompt=chat[0]["content"],
                        )
                    )
                    interactions[role] = await stack.enter_async_context(
                        getattr(agents, role).interaction(seat)
                    )
                    sent[role] = 1  # the system message went as the task's system prompt
                new = [
                    {"role": m["role"], "content": m["content"]}
                    for m in chat[sent[role] :]
                    if m["role"] != "assistant"
                ]
                segment = await interactions[role].turn(new)
                if segment.terminated:
                    raise _seat_failure(role, interactions[role].trace, game)
                reply: dict[str, Any] = {"text": segment.last_reply}
                reasoning = _reasoning(segment)
                if reasoning:
                    reply["reasoning"] = reasoning
                game.step(reply, role=role)
                sent[role] = len(chat)
        # The interactions closed (each trace scored and stopped as user_closed); the game's
        # rewards are each seat's own, written on its trace.
        rewards = game.rewards
        assert rewards is not None  # the loop ran until the game was done
        outcome = game.outcome
        record = game.record()
        for role, interaction in interactions.items():
            trace = interaction.trace
            trace.record_reward("dealgym", rewards[role])
            mine = game.outcome_for(role) or {}
            for kind in ("deal", "walk_away", "reject_loop", "max_turns", "format_forfeit"):
                trace.record_metric(kind, float(outcome["kind"] == kind))
            trace.record_metric("utility", float(mine.get("utility") or 0.0))
            trace.record_metric("rho", float(mine.get("rho") or 0.0))
            trace.info["dealgym"] = {
                "role": role,
                "family": game.family,
                "scenario_id": game.scenario_id,
                "seed": game.seed,
                "run_id": record["run_id"],
                "episode_id": record["episode_id"],
                "opponent": self.config.opponent,
                "outcome": mine,
                "rewards": rewards,
            }
        if self._writer is not None:
            self._writer.write(game)


def _reasoning(segment: vf.Segment) -> str | None:
    """The server's reasoning of the seat's reply (``reasoning_content``), kept by the engine
    as reasoning and never forwarded; a ``<think>`` block in the text the engine finds itself."""
    for message in reversed(segment.messages):
        if isinstance(message, AssistantMessage):
            return message.reasoning_content
    return None


#: Stop conditions of an agent's own limits (``Trace.is_truncated`` in verifiers 0.4).
LIMITS = ("max_turns", "max_input_tokens", "max_output_tokens", "max_total_tokens")


def _seat_failure(role: str, trace: vf.Trace, game: dealgym.Game) -> Exception:
    """Why a seat's agent ended before the game did, as the exception that fails the episode.

    A failed model call (the harness's client already retried it) is a ``ProviderError``, so
    ``--env.retries.rules`` can retry the episode by that type; verifiers marks the sibling
    trace failed too, so the healthy seat's half-played game never trains. An agent that
    stopped on its own limit (``--env.ROLE.max-turns``, a token cap) is the run's setting: the
    game cannot be cut short and scored, so the episode fails and says which limit to raise.
    Anything else (the harness failed) fails the episode with the trace's own error."""
    moves = len(game.transcript())
    where = f"with {moves} move{'' if moves == 1 else 's'} played in {game.scenario_id}"
    error = trace.last_error
    if trace.stop_condition in LIMITS:
        return RuntimeError(
            f"the {role} seat's agent stopped on its limit ({trace.stop_condition}) {where}, "
            "before the negotiation ended; a game cannot be cut short and scored, so raise "
            f"--env.{role}.{trace.stop_condition.replace('_', '-')} or lower "
            "--env.taskset.rules.max_rounds; the episode has no rewards"
        )
    if error is not None and error.type == "ProviderError":
        return vf.ProviderError(
            f"the {role} seat's model call failed {where}: {error.message}; "
            "the episode has no rewards",
            status_code=error.status_code or 502,
        )
    detail = f"{error.type}: {error.message}" if error is not None else "no error recorded"
    return RuntimeError(
        f"the {role} seat's agent ended ({trace.stop_condition}) {where}: {detail}; "
        "the episode has no rewards"
    )


__all__ = ["DealEnv", "DealTaskset"]
