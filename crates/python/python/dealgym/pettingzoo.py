"""dealgym as a PettingZoo AEC environment, for any number of seats: a two-party family is the
two-seat case, a table family (``deliberation``, six or seven stakeholders) and a market
(``market``, two to six buyers and two to six sellers) the n-seat ones, as PettingZoo has one
``AECEnv`` for any number of agents. Each seat acts with its model's raw
completion. The engine — parsing, perspective flipping, the schedule, regulation, the endings,
scoring and the record — is the Rust core (``dealgym._core.Game``); this module only speaks
PettingZoo.

Agents are named by their role in the scenario (``buyer``/``seller``, ``agent_1``/``agent_2``,
``worker``/``recruiter``; a table's parties; a market's traders, ``buyer_1``…, ``seller_1``…).
``agent_selection`` follows the game (a seat may
be asked again after a turn it could not play). A deal, a walk-away, a reject loop and a forfeit
terminate every agent; the turn cap (a table: its schedule running out) truncates. Rewards come
once, when the episode ends: each seat's total (a two-party family under the ``rewards``
settings, the terminal reward alone by default; a table: each role's ρ on a deal, 0 without one,
−1 for the seat that forfeited; a market: each trader's surplus, the gain from its trades), and
each agent's final info is ``{"outcome":
game.outcome_for(agent)}``, the same dict for every family. An agent observes its own chat alone.
"""

from __future__ import annotations

import os
import warnings
from typing import Any, Mapping, Sequence

from pettingzoo import AECEnv
from pettingzoo.utils.env import AECIterable

from . import _core
from ._options import RESET_OPTIONS, SeedSequence, game_arguments
from .spaces import action_space, observation_space
from .tokens import ExactTokens, exact_tokens

#: What a table's or a market's ``reset(options=...)`` reads: its scenario, and so its agents,
#: are fixed for the environment's life.
TABLE_RESET_OPTIONS = ("member",)

#: The player spec that seats a table party's scripted player in process: it moves on its own
#: and is not an agent (a market's are ``rule:zic``, ``rule:sniper`` and ``rule:truthful``;
#: ``Game.in_process`` names the roles any of them plays).
SCRIPTED = "rule:deliberation"


class DealAECEnv(AECEnv):
    """One negotiation of ``family`` at a time.

    A two-party family: ``rules`` overrides the ``[episode]`` settings (``max_rounds``,
    ``reject_loop``, ``format_retries``, ``regulate_opponent``, ...) and ``rewards`` the
    ``[rewards]`` table, as in a config file; with a ``tokenizer`` (Hugging Face, with a chat
    template) play is token-exact: the seat to move observes ``token_ids`` and steps with the
    dict ``{"text", "completion_ids", "logprobs"}`` (see ``dealgym.tokens``).

    A table family (``deliberation``): the scenario comes from ``scenario_file`` (a table
    scenario JSONL file) or the built-in catalog, ``scenario_id`` or else ``index`` (the first by
    default), fixed for the environment's life, and so are the agents, its parties' roles.
    ``retries``, ``regulated`` and ``format`` are the table's options; ``players`` names a role's
    player (``{"party_3": "rule:deliberation"}`` seats the scripted party of its incentive in
    process: it moves on its own and is not an agent).

    A market (``market``): as a table, from ``scenario_file`` (a market scenario JSONL file) or
    the built-in ``scenarios/market.jsonl``, one agent per trader; ``players`` seats a scripted
    trader in process (``{"seller_1": "rule:zic"}``; also ``rule:sniper``, ``rule:truthful``).

    ``reset(seed=...)`` draws the scenario (a two-party family without ``scenario_id``) and the
    setup or schedule from the seed alone; an unseeded reset's seed comes from the last seed
    given and the resets since, never from Python's global generator.
    """

    metadata = {"name": "dealgym_v0", "render_modes": ["ansi"], "is_parallelizable": False}

    #: PettingZoo's ``_was_dead_step`` reads it with ``getattr(..., None)``: set here, the read
    #: is a plain lookup rather than a miss that raises through ``__getattr__`` at every dead
    #: step of every episode.
    _skip_agent_selection: str | None = None

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
        scenario_file: str | os.PathLike[str] | None = None,
        index: int | None = None,
        retries: int | None = None,
        regulated: Sequence[str] | None = None,
        format: str | None = None,
        players: Mapping[str, str] | None = None,
    ) -> None:
        super().__init__()
        if render_mode is not None and render_mode not in self.metadata["render_modes"]:
            raise ValueError(f"render_mode {render_mode!r}: dealgym renders only 'ansi'")
        self.family = family
        self.render_mode = render_mode
        #: The Game's arguments that hold for every reset (those left None are not passed).
        self._fixed: dict[str, Any] = {
            "rules": dict(rules) if rules else None,
            "rewards": dict(rewards) if rewards else None,
            "scenario_file": None if scenario_file is None else os.fspath(scenario_file),
            "retries": retries,
            "regulated": list(regulated) if regulated is not None else None,
            "format": format,
            "players": dict(players) if players else None,
        }
        self._fixed = {k: v for k, v in self._fixed.items() if v is not None}
        self._defaults = {
            "scenario_id": scenario_id,
            "index": index,
            "learner_role": learner_role,
            "first_mover": first_mover,
        }
        #: A table or a market: its seats are the scenario's parties or traders, so the
        #: scenario is fixed here.
        self.table = family not in _core.families()
        if self.table:
            # `learner_role` and `first_mover` go to the Game too: it refuses them at a table
            # or a market, naming them, where the reset options would drop them unread.
            first = _core.Game(
                family,
                scenario_id=scenario_id,
                index=None if scenario_id is not None else (index or 0),
                seed=0,
                learner_role=learner_role,
                first_mover=first_mover,
                **self._fixed,
            )
            self.scenario_id = first.scenario_id
            self._defaults = {"scenario_id": first.scenario_id}
            in_process = set(first.in_process)
            self.possible_agents = [r for r in first.roles if r not in in_process]
            if not self.possible_agents:
                raise ValueError(
                    f"players: every seat of {first.scenario_id} is played in process "
                    f"({', '.join(first.roles)}), so this environment would have no agent: "
                    f'leave one seat to Python, or play it as Game("{family}", ...)'
                )
        else:
            self.possible_agents = list(_core.roles(family))
        #: Token-exact play: the seat to move observes the prompt ids its model samples after.
        self.tokens: ExactTokens | None = exact_tokens(tokenizer)
        self._observation_spaces = {
            a: observation_space(token_exact=self.tokens is not None) for a in self.possible_agents
        }
        self._action_spaces = {a: action_space() for a in self.possible_agents}
        #: Where an unseeded reset's seed comes from (never Python's global generator).
        self._seeds = SeedSequence()
        self.game: _core.Game | None = None
        #: Reset and not yet ended: every agent is live and no reward has come (the fast path
        #: of `step`; the ended game's dead steps and errors take the general one).
        self._live = False

    def observation_space(self, agent: str):
        return self._observation_spaces[agent]

    def action_space(self, agent: str):
        return self._action_spaces[agent]

    def reset(self, seed: int | None = None, options: Mapping[str, Any] | None = None) -> None:
        """``options``: ``member`` (a GRPO group's member: same seed and scenario, its own
        episode); a two-party family also ``scenario`` (or ``scenario_id``), ``index``,
        ``role`` (or ``learner_role``: the record's learner seat) and ``first_mover``. An
        unknown key is warned about and ignored, as PettingZoo's ``api_test`` expects."""
        if self.table:
            reads = TABLE_RESET_OPTIONS
            read = {k: v for k, v in (options or {}).items() if k in reads}
            unknown = [k for k in (options or {}) if k not in reads]
            chosen, _ = game_arguments(read, self._defaults)
        else:
            reads = RESET_OPTIONS
            chosen, unknown = game_arguments(options, self._defaults)
        for key in unknown:
            warnings.warn(
                f"reset option {key!r} is not one a {self.family} game reads ({', '.join(reads)})",
                stacklevel=2,
            )
        episode_seed = self._seeds.next() if seed is None else self._seeds.seeded(seed)
        self.game = game = _core.Game(self.family, seed=episode_seed, **self._fixed, **chosen)
        self.agents = agents = list(self.possible_agents)
        self.rewards = dict.fromkeys(agents, 0.0)
        self._cumulative_rewards = dict.fromkeys(agents, 0.0)
        self.terminations = dict.fromkeys(agents, False)
        self.truncations = dict.fromkeys(agents, False)
        self.infos = {a: {} for a in agents}
        self._live = True
        if game.done:
            # Seats played in process ended it before any agent moved.
            self._end(agents[0])
        else:
            self.agent_selection = game.to_move

    def observe(self, agent: str) -> dict[str, Any]:
        game = self.game
        if game is None:
            game = self._game()
        seen = game.observe(agent)
        if self.tokens is not None:
            seen["token_ids"] = self.tokens.token_ids(game, agent)
        return seen

    def last(self, observe: bool = True) -> tuple[Any, float, bool, bool, dict[str, Any]]:
        """PettingZoo's ``last()``: the agent to act's observation, cumulative reward,
        terminated, truncated and info (its own, with no extra call per value)."""
        agent = self.agent_selection
        if not observe:
            seen = None
        elif self.tokens is None and self.game is not None:
            # `observe(agent)` without its extra call, as every step of the loop asks.
            seen = self.game.observe(agent)
        else:
            seen = self.observe(agent)
        return (
            seen,
            self._cumulative_rewards[agent],
            self.terminations[agent],
            self.truncations[agent],
            self.infos[agent],
        )

    def agent_iter(self, max_iter: int = 2**63) -> AECIterable:
        """PettingZoo's ``agent_iter()``: the agent to act, while any agent is left, at most
        ``max_iter`` times (a generator, where PettingZoo's iterator is a Python class)."""
        return _AgentIterable(self, max_iter)

    def step(self, action: str | Mapping[str, Any] | None) -> None:
        if not self._live:
            # Not reset, or ended: an error, or the ended game's dead steps (once it has ended,
            # every agent is terminated or truncated).
            game = self._game()
            if not self.agents:
                raise _core.EpisodeEndedError(
                    f"every agent is done: the episode ended ({_ending(game)}); call reset() to "
                    "play another"
                )
            dead = self.agent_selection
            if self.terminations[dead] or self.truncations[dead]:
                self._was_dead_step(action)
                return
        # The episode runs. Rewards come only at the end: every step before it is worth 0 to
        # every seat, as `self.rewards` and `self._cumulative_rewards` already say.
        agent = self.agent_selection
        info = self.game.step(action, role=agent)
        if info.done:
            self._end(agent)
        else:
            self.infos[agent] = {"retry": info.retry, "error": info.error}
            self.agent_selection = info.to_move
        if info.narration is not None:
            # A narrated turn (``dealgym.narrated.Narrated.turn``): its decided move and where
            # its Talk contradicts it.
            self.infos[agent]["narration"] = info.narration

    def _end(self, last: str) -> None:
        """Hand every agent its reward and its ending; then each makes its dead step, the one
        that just moved last."""
        game = self._game()
        self._live = False
        totals = game.rewards or {}
        terminated, truncated = game.terminated, game.truncated
        for a in self.agents:
            self.rewards[a] = float(totals.get(a, 0.0))
            self.terminations[a] = terminated
            self.truncations[a] = truncated
            self.infos[a] = {"outcome": game.outcome_for(a)}
        others = [a for a in self.agents if a != last]
        self.agent_selection = others[0] if others else last
        self._accumulate_rewards()

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
            raise _core.ResetNeededError(
                f"this {self.family} environment has not been reset: call reset() before "
                "stepping or observing"
            )
        return self.game

    def __getattr__(self, name: str) -> Any:
        """What only ``reset()`` sets (``agent_selection``, ``agents``, ``rewards``, ...), asked
        for before it, names the call to make (``last()`` reads ``agent_selection``). Called
        only where an attribute is missing, so it costs a set attribute nothing."""
        if name in RESET_STATE:
            raise _UnsetBeforeReset(
                f"{name} is set by reset(): call reset() on this {self.family} environment first"
            )
        raise AttributeError(f"{type(self).__name__!r} object has no attribute {name!r}")


class _AgentIterable(AECIterable):
    """What ``agent_iter()`` answers: PettingZoo's iterable, iterated by a generator."""

    def __iter__(self):
        env, left = self.env, self.max_iter
        while env.agents and left > 0:
            left -= 1
            yield env.agent_selection


class _UnsetBeforeReset(_core.ResetNeededError, AttributeError):
    """An attribute ``reset()`` sets, read before it: ``ResetNeededError`` for the reader, and
    an ``AttributeError`` too, so ``hasattr``, ``getattr(env, name, default)`` and ``copy``
    keep Python's meaning (no such attribute yet)."""


#: What an AEC environment's ``reset()`` sets; asked for before it, ``ResetNeededError``.
RESET_STATE = frozenset(
    {
        "agent_selection",
        "agents",
        "rewards",
        "_cumulative_rewards",
        "terminations",
        "truncations",
        "infos",
    }
)


def _ending(game: _core.Game) -> str:
    """How an ended game ended, for a message: ``terminated``/``truncated`` and its kind."""
    kind = (game.outcome or {}).get("kind", "ended")
    return f"{kind}, {'truncated' if game.truncated else 'terminated'}"


def env(family: str = "casino", **kwargs: Any) -> DealAECEnv:
    """PettingZoo's usual constructor name."""
    return DealAECEnv(family, **kwargs)


def __getattr__(name: str) -> Any:
    """The n-party tables' old names (``TableAECEnv``, ``table_env``): aliases of the one
    environment for one release, in ``dealgym.table_pettingzoo``."""
    if name in ("TableAECEnv", "table_env"):
        from . import table_pettingzoo

        return getattr(table_pettingzoo, name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


__all__ = ["DealAECEnv", "TableAECEnv", "env", "table_env"]
