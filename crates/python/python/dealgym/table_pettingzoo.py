"""dealgym's n-party tables as a PettingZoo AEC environment: every party of a table game (the
``deliberation`` family, six or seven stakeholders) is an agent, named by its role, acting with
its model's raw completion. The engine — the schedule drawn from the seed, offers with ids, the
agreement rule, regulation, the malformed-turn policy, each seat's view, the record — is the
Rust core (``dealgym._core.TableGame``); this module only speaks PettingZoo.

``agent_selection`` follows the table's schedule (a seat may be asked again after a turn it
could not play). An agreement, a veto party walking out and a forfeit terminate every agent; the
schedule running out truncates. Rewards come once, at the end: each role's ρ on a deal, 0
without one, −1 for the seat that forfeited. An agent observes its own chat alone: its system
prompt with its own confidential block, the others' talk and moves, and the table's public
state — never another party's scores, minimum, instructions or thoughts.
"""

from __future__ import annotations

import os
import warnings
from typing import Any, Mapping, Sequence

from pettingzoo import AECEnv

from . import _core
from ._options import SeedSequence
from .spaces import action_space, observation_space

#: What ``reset(options=...)`` reads.
TABLE_RESET_OPTIONS = ("member",)


class TableAECEnv(AECEnv):
    """One table of ``scenario_id`` at a time.

    The scenario comes from ``scenario_file`` (a table scenario JSONL file) or the built-in
    ``deliberation`` catalog; without ``scenario_id`` it is the file's first (``index``). The
    agents are its parties' roles, fixed for the environment's life. ``retries``,
    ``regulated`` and ``format`` are the table's options; ``players`` names a role's player
    (``{"party_3": "rule:deliberation"}`` seats the scripted party of its incentive in process:
    it moves on its own and is not an agent). ``reset(seed=...)`` draws the schedule from the
    seed alone; an unseeded reset's seed comes from the last seed given and the resets since,
    never from Python's global generator.
    """

    metadata = {"name": "dealgym_table_v0", "render_modes": ["ansi"], "is_parallelizable": False}

    def __init__(
        self,
        scenario_id: str | None = None,
        *,
        scenario_file: str | os.PathLike[str] | None = None,
        index: int | None = None,
        retries: int | None = None,
        regulated: Sequence[str] | None = None,
        format: str | None = None,
        players: Mapping[str, str] | None = None,
        render_mode: str | None = None,
    ) -> None:
        super().__init__()
        if render_mode is not None and render_mode not in self.metadata["render_modes"]:
            raise ValueError(f"render_mode {render_mode!r}: dealgym renders only 'ansi'")
        self.render_mode = render_mode
        self._file = None if scenario_file is None else os.fspath(scenario_file)
        self._arguments: dict[str, Any] = {
            "scenario_file": self._file,
            "retries": retries,
            "regulated": list(regulated) if regulated is not None else None,
            "format": format,
            "players": dict(players) if players else None,
        }
        # The scenario is fixed here, so the agents are too (PettingZoo's possible_agents).
        first = _core.TableGame(
            scenario_id,
            index=None if scenario_id is not None else (index or 0),
            seed=0,
            **{k: v for k, v in self._arguments.items() if v is not None},
        )
        self.scenario_id = first.scenario_id
        in_process = {
            role for role, spec in (players or {}).items() if spec.strip() == "rule:deliberation"
        }
        self.possible_agents = [r for r in first.roles if r not in in_process]
        self._observation_spaces = {a: observation_space() for a in self.possible_agents}
        self._action_spaces = {a: action_space() for a in self.possible_agents}
        self._seeds = SeedSequence()
        self.game: _core.TableGame | None = None

    def observation_space(self, agent: str):
        return self._observation_spaces[agent]

    def action_space(self, agent: str):
        return self._action_spaces[agent]

    def reset(self, seed: int | None = None, options: Mapping[str, Any] | None = None) -> None:
        """``options``: ``member`` (a GRPO group's member: same seed and scenario, its own
        episode). An unknown key is warned about and ignored, as PettingZoo's ``api_test``
        expects."""
        member = None
        for key, value in (options or {}).items():
            if key == "member":
                member = value
            else:
                warnings.warn(
                    f"reset option {key!r} is not one a table reads ({', '.join(TABLE_RESET_OPTIONS)})",
                    stacklevel=2,
                )
        episode_seed = self._seeds.next() if seed is None else self._seeds.seeded(seed)
        self.game = _core.TableGame(
            self.scenario_id,
            seed=episode_seed,
            member=member,
            **{k: v for k, v in self._arguments.items() if v is not None},
        )
        self.agents = list(self.possible_agents)
        self.rewards = {a: 0.0 for a in self.agents}
        self._cumulative_rewards = {a: 0.0 for a in self.agents}
        self.terminations = {a: False for a in self.agents}
        self.truncations = {a: False for a in self.agents}
        self.infos = {a: {} for a in self.agents}
        if self.game.done:
            # Scripted seats ended it before any agent moved.
            self._end(self.agents[0])
        else:
            self.agent_selection = self.game.to_move

    def observe(self, agent: str) -> dict[str, Any]:
        return self._game().observe(agent)

    def step(self, action: str | Mapping[str, Any] | None) -> None:
        agent = self.agent_selection
        if self.terminations[agent] or self.truncations[agent]:
            self._was_dead_step(action)
            return
        game = self._game()
        self._cumulative_rewards[agent] = 0.0
        info = game.step(agent, action)
        if info.done:
            self._end(agent)
        else:
            # Rewards come only at the end: every step before it is worth 0 to every seat.
            self.infos[agent] = {"retry": info.retry, "error": info.error}
            self.agent_selection = info.to_move

    def _end(self, last: str) -> None:
        """Hand every agent its reward and its ending; then each makes its dead step, the one
        that just moved last."""
        game = self._game()
        totals = game.rewards or {}
        outcome = game.outcome
        for a in self.agents:
            self.rewards[a] = float(totals.get(a, 0.0))
            self.terminations[a] = game.terminated
            self.truncations[a] = game.truncated
            self.infos[a] = {"outcome": outcome["kind"], "rho": outcome["rho"].get(a, 0.0)}
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
        """The ended table's record, as ``dealgym run`` writes it."""
        return self._game().record()

    def _game(self) -> _core.TableGame:
        if self.game is None:
            raise RuntimeError("call reset() before stepping or observing")
        return self.game


def table_env(scenario_id: str | None = None, **kwargs: Any) -> TableAECEnv:
    """PettingZoo's usual constructor, for a table."""
    return TableAECEnv(scenario_id, **kwargs)
