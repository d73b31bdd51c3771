"""dealgym as an OpenEnv ``Environment``, in process: serve it with OpenEnv's own server
(``create_app``) or import it by dotted path (``dealgym.openenv:DealEnvironment``, as NeMo-Gym's
OpenEnv adapter does). The field names are ``dealgym serve``'s: an action carries the ``message``
(the raw completion) and, optionally, the ``seat`` that writes it; an observation carries the
chat ``messages``, the ``prompt`` and the seat's structured ``state``.

Both seats are played through ``step``: each observation is the seat now to move (at the end,
the seat that moved last), and its reward is that seat's total once the episode has ended.
"""

from __future__ import annotations

import functools
from typing import Any, Optional

from openenv.core import EnvClient
from openenv.core.client_types import StepResult
from openenv.core.env_server import Action, Environment, Observation, State, create_app
from pydantic import Field

from . import _core
from ._options import SeedSequence
from .tokens import ExactTokens, exact_tokens


class DealAction(Action):
    """One completion for the seat to move."""

    message: str = Field(description="The model's raw completion (Thought / Talk / Action).")
    seat: Optional[str] = Field(
        default=None,
        description="The role writing it (or `learner` / `opponent`); checked against the seat to move.",
    )
    reasoning: Optional[str] = Field(
        default=None, description="The endpoint's separate reasoning, if it returned one."
    )
    completion_ids: Optional[list[int]] = Field(
        default=None,
        description="Token-exact play: the ids the model sampled after the observation's `token_ids`.",
    )
    logprobs: Optional[list[float]] = Field(
        default=None, description="Token-exact play: the sampling logprob of each completion id."
    )
    finish_reason: Optional[str] = Field(
        default=None, description="Token-exact play: why sampling stopped (`stop`, `length`)."
    )
    tool_calls: Optional[list[dict[str, Any]]] = Field(
        default=None,
        description="A seat acting through tools (rules `learner_format = \"tools\"`): the calls "
        "the model made, as a chat completion's message holds them; `message` is its text beside them.",
    )


class DealObservation(Observation):
    """What one seat sees; `done` and `reward` are OpenEnv's own fields."""

    prompt: str = Field(default="", description="The last message the seat was sent.")
    messages: list[dict[str, Any]] = Field(
        default_factory=list, description="Every chat message the seat's model is sent."
    )
    role: str = Field(default="", description="The seat's role in the scenario.")
    seat: str = Field(default="", description="`learner` or `opponent`.")
    to_move: Optional[str] = Field(default=None, description="The role to move; none at the end.")
    state: dict[str, Any] = Field(default_factory=dict, description="The seat's structured state.")
    rewards: Optional[dict[str, float]] = Field(
        default=None, description="Every role's total reward, once the episode has ended."
    )
    token_ids: Optional[dict[str, Any]] = Field(
        default=None,
        description="Token-exact play: `{prompt_ids, drift}`, the ids to add to the seat's sequence before it samples.",
    )


class DealState(State):
    """The episode: OpenEnv's `episode_id` and `step_count`, and where the negotiation stands."""

    family: Optional[str] = None
    scenario_id: Optional[str] = None
    to_move: Optional[str] = None
    done: bool = False
    outcome: Optional[dict[str, Any]] = None
    rewards: Optional[dict[str, float]] = None


class DealEnvironment(Environment[DealAction, DealObservation, DealState]):
    """One negotiation per session. ``reset`` takes ``dealgym serve``'s reset arguments:
    ``family``, ``scenario_id``, ``index``, ``learner_role``, ``first_mover``, ``rules`` and
    ``opponent`` (``"rule:NAME"``: a built-in negotiator plays the opponent's seat in the
    engine, and every observation is the learner's), and ``member`` (a GRPO group's member).
    ``rewards`` sets the ``[rewards]`` table for every episode. An unseeded reset draws its
    seed from the last seed given and the resets since (``SeedSequence``), never from Python's
    global generator."""

    SUPPORTS_CONCURRENT_SESSIONS = True

    def __init__(
        self,
        family: str = "casino",
        *,
        rewards: Optional[dict[str, Any]] = None,
        tokenizer: Any = None,
    ) -> None:
        super().__init__()
        self.family = family
        self.rewards = dict(rewards) if rewards else None
        #: Token-exact play (see ``dealgym.tokens``): observations carry ``token_ids`` and
        #: actions the ``completion_ids`` sampled after them.
        self.tokens: ExactTokens | None = exact_tokens(tokenizer)
        self.game: _core.Game | None = None
        self._episode_id: str | None = None
        self._steps = 0
        self._seeds = SeedSequence()

    def reset(
        self,
        seed: Optional[int] = None,
        episode_id: Optional[str] = None,
        family: Optional[str] = None,
        scenario_id: Optional[str] = None,
        index: Optional[int] = None,
        learner_role: Optional[str] = None,
        first_mover: Optional[str] = None,
        rules: Optional[dict[str, Any]] = None,
        opponent: Optional[str] = None,
        member: Optional[int] = None,
        **kwargs: Any,
    ) -> DealObservation:
        if kwargs:
            raise ValueError(
                f"reset arguments {sorted(kwargs)}: dealgym reads seed, episode_id, family, "
                "scenario_id, index, learner_role, first_mover, rules, opponent and member"
            )
        seed = self._seeds.next() if seed is None else self._seeds.seeded(seed)
        chosen = {
            "scenario_id": scenario_id,
            "index": index,
            "learner_role": learner_role,
            "first_mover": first_mover,
            "rules": rules,
            "rewards": self.rewards,
            "opponent": opponent,
            "member": member,
        }
        self.game = _core.Game(
            family or self.family,
            seed=seed,
            **{k: v for k, v in chosen.items() if v is not None},
        )
        self._episode_id = episode_id or self.game.run_id
        self._steps = 0
        return self._observation(self.game.to_move)

    def step(
        self, action: DealAction, timeout_s: Optional[float] = None, **kwargs: Any
    ) -> DealObservation:
        game = self._game()
        role = self._role(action.seat) if action.seat else game.to_move
        extra = action.model_dump(
            include={"reasoning", "completion_ids", "logprobs", "finish_reason", "tool_calls"},
            exclude_none=True,
        )
        text: str | dict[str, Any] = {"text": action.message, **extra} if extra else action.message
        info = game.step(text, role=role)
        self._steps += 1
        return self._observation(info.role if info.done else info.to_move)

    @property
    def state(self) -> DealState:
        game = self.game
        return DealState(
            episode_id=self._episode_id,
            step_count=self._steps,
            family=game.family if game else None,
            scenario_id=game.scenario_id if game else None,
            to_move=game.to_move if game else None,
            done=bool(game and game.done),
            outcome=game.outcome if game else None,
            rewards=game.rewards if game else None,
        )

    def _observation(self, role: str) -> DealObservation:
        game = self._game()
        seen = game.observe(role)
        rewards = game.rewards
        return DealObservation(
            token_ids=self.tokens.token_ids(game, role) if self.tokens is not None else None,
            prompt=seen["prompt"],
            messages=seen["messages"],
            role=role,
            seat="learner" if role == game.learner_role else "opponent",
            to_move=game.to_move,
            state=seen["state"],
            done=game.done,
            # OpenEnv's reward before any step is none (as `dealgym serve` answers a reset).
            reward=float(rewards[role]) if rewards else (0.0 if self._steps else None),
            rewards=rewards,
        )

    def _role(self, seat: str) -> str:
        game = self._game()
        if seat == "learner":
            return game.learner_role
        if seat == "opponent":
            return next(r for r in game.roles if r != game.learner_role)
        return seat

    def _game(self) -> _core.Game:
        if self.game is None:
            raise _core.ResetNeededError(
                "this environment has not been reset: call reset() before step()"
            )
        return self.game


class DealEnvClient(EnvClient[DealAction, DealObservation, DealState]):
    """OpenEnv's client for a served ``DealEnvironment`` (or ``dealgym serve``'s OpenEnv routes)."""

    def _step_payload(self, action: DealAction) -> dict[str, Any]:
        return action.model_dump(exclude_none=True)

    def _parse_result(self, payload: dict[str, Any]) -> StepResult[DealObservation]:
        observation = DealObservation(
            **payload.get("observation", {}),
            done=payload.get("done", False),
            reward=payload.get("reward"),
        )
        return StepResult(
            observation=observation, reward=payload.get("reward"), done=payload.get("done", False)
        )

    def _parse_state(self, payload: dict[str, Any]) -> DealState:
        return DealState(**payload)


def app(max_concurrent_envs: int = 64, *, tokenizer: Any = None):
    """OpenEnv's FastAPI app serving ``DealEnvironment`` (run it with uvicorn); with a
    ``tokenizer``, every session plays token-exact."""
    # A partial keeps the class visible to OpenEnv's concurrency check.
    factory = functools.partial(DealEnvironment, tokenizer=tokenizer)
    return create_app(
        factory,
        DealAction,
        DealObservation,
        env_name="dealgym",
        max_concurrent_envs=max_concurrent_envs,
    )
