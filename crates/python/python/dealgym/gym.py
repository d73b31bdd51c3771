"""dealgym as a single-seat Gymnasium environment: the learner's seat acts with raw completions,
the opponent plays inside (``dealgym.opponents``). Importing this module registers one id per
two-party family of the engine (``dealgym.families()``): ``dealgym/AmazonHistoryPrice-v0``,
``dealgym/CraigslistBargains-v0``, ``dealgym/CaSiNo-v0``, ``dealgym/DealOrNoDeal-v0``,
``dealgym/JobInterview-v0``, ``dealgym/BundleBargaining-v0`` and
``dealgym/HotelPriceChasing-v0`` (``IDS``). A table of more than two parties
(``deliberation``) has no one opponent to play inside: it plays through the one AEC env,
``dealgym.pettingzoo.DealAECEnv("deliberation")``, one agent per party.

A deal, a walk-away, a reject loop and a format forfeit terminate; the turn cap truncates. The
reward is the learner's total once the episode has ended, 0 before.
"""

from __future__ import annotations

from typing import Any, Mapping

import gymnasium

from . import _core
from ._options import RESET_OPTIONS, game_arguments
from .narrated import Narrated
from .opponents import Script, opponent_of
from .spaces import action_space, observation_space
from .tokens import ExactTokens, exact_tokens

#: The names in the ids, by family: Gymnasium's CamelCase for the dataset's or the paper's name.
#: A family the engine gains without a name here is registered under its own name in CamelCase.
_ID_NAMES = {
    "ahp": "AmazonHistoryPrice",
    "craigslist": "CraigslistBargains",
    "casino": "CaSiNo",
    "dnd": "DealOrNoDeal",
    "job_interview": "JobInterview",
    "bundle": "BundleBargaining",
    "hotel": "HotelPriceChasing",
}


def _id_of(family: str) -> str:
    name = _ID_NAMES.get(family) or "".join(w.capitalize() for w in family.split("_"))
    return f"dealgym/{name}-v0"


#: The registered ids, by family: every two-party family the engine plays, in its order.
IDS = {family: _id_of(family) for family in _core.families()}


class DealEnv(gymnasium.Env):
    """The learner's seat of ``family``; ``opponent`` plays the other: a built-in negotiator
    (``"rule:boulware"``, the default, also ``"rule:tough"``, ``"rule:linear"``,
    ``"rule:conceder"``; played in Rust),
    a callable ``(messages, state) -> completion``, a list of completions, ``OpenAIChat``, or a
    narrated seat (``dealgym.narrated.Narrated``: a decider picks the move, a narrator writes the
    words; the narrated turns it played in a ``step()`` or ``reset()`` have their
    ``StepInfo.narration`` in that call's ``info["narration"]``). With a ``tokenizer`` the learner's play is token-exact (see ``dealgym.tokens``)."""

    metadata = {"render_modes": ["ansi"], "render_fps": 1}

    def __init__(
        self,
        family: str = "casino",
        *,
        opponent: Any = "rule:boulware",
        role: str | None = None,
        rules: Mapping[str, Any] | None = None,
        rewards: Mapping[str, Any] | None = None,
        tokenizer: Any = None,
        render_mode: str | None = None,
    ) -> None:
        if render_mode is not None and render_mode not in self.metadata["render_modes"]:
            raise ValueError(f"render_mode {render_mode!r}: dealgym renders only 'ansi'")
        self.family = family
        self.roles = _core.roles(family)
        # A built-in negotiator is played by the engine itself; anything else from Python.
        self.rule = opponent if isinstance(opponent, str) else None
        self.opponent: Any = None
        if self.rule is None:
            self.opponent = opponent if isinstance(opponent, Narrated) else opponent_of(opponent)
        #: The narrated opponent's turns since the learner's last step (``info["narration"]``).
        self._narrations: list[dict[str, Any]] = []
        self.role = role
        self.rules = dict(rules) if rules else None
        self.rewards = dict(rewards) if rewards else None
        self.render_mode = render_mode
        #: Token-exact play: the learner observes the prompt ids its model samples after.
        self.tokens: ExactTokens | None = exact_tokens(tokenizer)
        self.observation_space = observation_space(token_exact=self.tokens is not None)
        self.action_space = action_space()
        self.game: _core.Game | None = None

    def reset(
        self, *, seed: int | None = None, options: Mapping[str, Any] | None = None
    ) -> tuple[dict[str, Any], dict[str, Any]]:
        """``options``: ``scenario`` (or ``scenario_id``), ``index``, ``role`` (or
        ``learner_role``), ``first_mover`` and ``member`` (a GRPO group's member: same seed
        and scenario, its own episode). Another key is a ValueError."""
        super().reset(seed=seed)
        defaults = {
            "learner_role": self.role,
            "rules": self.rules,
            "rewards": self.rewards,
            "opponent": self.rule,
        }
        chosen, unknown = game_arguments(options, defaults)
        if unknown:
            raise ValueError(f"reset options {sorted(unknown)}: dealgym reads {list(RESET_OPTIONS)}")
        episode_seed = seed if seed is not None else int(self.np_random.integers(2**63))
        self.game = _core.Game(self.family, seed=episode_seed, **chosen)
        if isinstance(self.opponent, (Script, Narrated)):
            self.opponent.restart()
        self._narrations = []
        self._opponent_plays()
        return self._observe(), self._info()

    def step(
        self, action: str | Mapping[str, Any]
    ) -> tuple[dict[str, Any], float, bool, bool, dict[str, Any]]:
        game = self._game()
        game.step(action, role=game.learner_role)
        self._narrations = []
        self._opponent_plays()
        reward = float(game.rewards[game.learner_role]) if game.done else 0.0
        return self._observe(), reward, game.terminated, game.truncated, self._info()

    def render(self) -> str | None:
        if self.render_mode != "ansi" or self.game is None:
            return None
        return "\n".join(f"{role}: {text}" for role, text in self.game.transcript())

    def _opponent_plays(self) -> None:
        game = self._game()
        if self.opponent is None:
            return
        while not game.done and game.to_move != game.learner_role:
            role = game.to_move
            try:
                if isinstance(self.opponent, Narrated):
                    completion: Any = self.opponent.turn(game, role)
                else:
                    seen = game.observe(role)
                    completion = self.opponent(seen["messages"], seen["state"])
            except Exception as e:
                raise RuntimeError(
                    f"the opponent failed ({e}); this episode cannot go on: call reset()"
                ) from e
            step = game.step(completion, role=role)
            if step.narration is not None:
                self._narrations.append(step.narration)

    def _observe(self) -> dict[str, Any]:
        game = self._game()
        seen = game.observe(game.learner_role)
        if self.tokens is not None:
            seen["token_ids"] = self.tokens.token_ids(game, game.learner_role)
        return seen

    def _info(self) -> dict[str, Any]:
        game = self._game()
        info: dict[str, Any] = {"outcome": game.outcome_for(game.learner_role)} if game.done else {}
        if self._narrations:
            info["narration"] = list(self._narrations)
        return info

    def _game(self) -> _core.Game:
        if self.game is None:
            raise _core.ResetNeededError(
                f"this {self.family} environment has not been reset: call reset() before step()"
            )
        return self.game


for _family, _id in IDS.items():
    if _id not in gymnasium.registry:
        gymnasium.register(id=_id, entry_point="dealgym.gym:DealEnv", kwargs={"family": _family})
