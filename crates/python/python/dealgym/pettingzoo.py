"""dealgym as a PettingZoo AEC environment: two seats taking turns, each acting with its model's
raw completion. The engine — parsing, perspective flipping, regulation, the endings, scoring and
the record — is the Rust core (``dealgym._core.Game``); this module only speaks PettingZoo.

Agents are named by their role in the scenario (``buyer``/``seller``,
``agent_1``/``agent_2``, ``worker``/``recruiter``). A deal, a walk-away, a reject loop and a
format forfeit terminate; the turn cap truncates. Rewards come once, when the episode ends: each
seat's total under the ``rewards`` settings (the terminal reward alone by default).
"""

from __future__ import annotations

import warnings
from typing import Any, Mapping

from pettingzoo import AECEnv

from . import _core
from ._options import RESET_OPTIONS, SeedSequence, game_arguments
from .spaces import action_space, observation_space
from .tokens import ExactTokens, exact_tokens

class DealAECEnv(AECEnv):
    """One negotiation of ``family`` at a time.

    ``rules`` overrides the ``[episode]`` settings (``max_rounds``, ``reject_loop``,
    ``format_retries``, ``regulate_opponent``, ...) and ``rewards`` the ``[rewards]`` table, as
    in a config file. With a ``tokenizer`` (Hugging Face, with a chat template) play is
    token-exact: the seat to move observes ``token_ids`` and steps with the dict
    ``{"text", "completion_ids", "logprobs"}`` (see ``dealgym.tokens``). ``reset(seed=...)`` draws the scenario and the setup from the seed alone;
    an unseeded reset's seed comes from the last seed given and the resets since, never from
    Python's global generator.
    """

    metadata = {"name": "dealgym_v0", "render_modes": ["ansi"], "is_parallelizable": False}

    def __init__(
        self,
        family: str = "casino",
        *,
        scenario_id: str | None = None,
        rules: Mapping[str, Any] | None = None,
        rewards: Mapping[str, Any] | None = None,
        learner_role: str | None = None,
        first_mover: str | None = None,
        tokenizer: Any = None,
        render_mode: str | None = None,
    ) -> None:
        super().__init__()
        if render_mode is not None and render_mode not in self.metadata["render_modes"]:
            raise ValueError(f"render_mode {render_mode!r}: dealgym renders only 'ansi'")
        self.family = family
        self.possible_agents = list(_core.roles(family))
        self.render_mode = render_mode
        self._defaults = {
            "scenario_id": scenario_id,
            "learner_role": learner_role,
            "first_mover": first_mover,
        }
        self._rules = dict(rules) if rules else None
        self._rewards = dict(rewards) if rewards else None
        #: Token-exact play: the seat to move observes the prompt ids its model samples after.
        self.tokens: ExactTokens | None = exact_tokens(tokenizer)
        self._observation_spaces = {
            a: observation_space(token_exact=self.tokens is not None) for a in self.possible_agents
        }
        self._action_spaces = {a: action_space() for a in self.possible_agents}
        #: Where an unseeded reset's seed comes from (never Python's global generator).
        self._seeds = SeedSequence()
        self.game: _core.Game | None = None

    def observation_space(self, agent: str):
        return self._observation_spaces[agent]

    def action_space(self, agent: str):
        return self._action_spaces[agent]

    def reset(self, seed: int | None = None, options: Mapping[str, Any] | None = None) -> None:
        """``options``: ``scenario`` (or ``scenario_id``), ``index``, ``role`` (or
        ``learner_role``: the record's learner seat), ``first_mover`` and ``member`` (a GRPO
        group's member: same seed and scenario, its own episode). An unknown key is warned
        about and ignored, as PettingZoo's ``api_test`` expects."""
        chosen, unknown = game_arguments(options, self._defaults)
        for key in unknown:
            warnings.warn(
                f"reset option {key!r} is not one dealgym reads ({', '.join(RESET_OPTIONS)})",
                stacklevel=2,
            )
        episode_seed = self._seeds.next() if seed is None else self._seeds.seeded(seed)
        self.game = _core.Game(
            self.family,
            seed=episode_seed,
            rules=self._rules,
            rewards=self._rewards,
            **chosen,
        )
        self.agents = list(self.possible_agents)
        self.rewards = {a: 0.0 for a in self.agents}
        self._cumulative_rewards = {a: 0.0 for a in self.agents}
        self.terminations = {a: False for a in self.agents}
        self.truncations = {a: False for a in self.agents}
        self.infos = {a: {} for a in self.agents}
        self.agent_selection = self.game.to_move

    def observe(self, agent: str) -> dict[str, Any]:
        game = self._game()
        seen = game.observe(agent)
        if self.tokens is not None:
            seen["token_ids"] = self.tokens.token_ids(game, agent)
        return seen

    def step(self, action: str | Mapping[str, Any] | None) -> None:
        agent = self.agent_selection
        if self.terminations[agent] or self.truncations[agent]:
            self._was_dead_step(action)
            return
        game = self._game()
        self._cumulative_rewards[agent] = 0.0
        info = game.step(action, role=agent)
        if info.done:
            totals = game.rewards or {}
            for a in self.agents:
                self.rewards[a] = float(totals.get(a, 0.0))
                self.terminations[a] = info.terminated
                self.truncations[a] = info.truncated
                self.infos[a] = {"outcome": game.outcome_for(a)}
            # Each seat then makes its dead step, the one that just moved last.
            self.agent_selection = next(a for a in self.agents if a != agent)
            self._accumulate_rewards()
        else:
            # Rewards come only at the end: every step before it is worth 0 to both seats, as
            # `self.rewards` already says, and there is nothing to accumulate.
            self.infos[agent] = {"retry": info.retry}
            self.agent_selection = info.to_move

    def render(self) -> str | None:
        if self.render_mode != "ansi" or self.game is None:
            return None
        return "\n".join(f"{role}: {text}" for role, text in self.game.transcript())

    def close(self) -> None:
        pass

    def record(self) -> dict[str, Any]:
        """The ended episode's record, as ``dealgym run`` writes it."""
        return self._game().record()

    def _game(self) -> _core.Game:
        if self.game is None:
            raise RuntimeError("call reset() before stepping or observing")
        return self.game


def env(family: str = "casino", **kwargs: Any) -> DealAECEnv:
    """PettingZoo's usual constructor name."""
    return DealAECEnv(family, **kwargs)


# The n-party tables' AEC environment, under the same module.
from .table_pettingzoo import TableAECEnv, table_env  # noqa: E402

__all__ = ["DealAECEnv", "TableAECEnv", "env", "table_env"]
