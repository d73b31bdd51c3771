"""The n-party tables' PettingZoo names, kept for one release: ``TableAECEnv`` is
``dealgym.pettingzoo.DealAECEnv`` of the ``deliberation`` family, and ``table_env`` its
constructor. Use ``DealAECEnv("deliberation", ...)`` (or ``dealgym.pettingzoo.env``) instead:
the one environment plays every family, any number of seats.
"""

from __future__ import annotations

import os
from typing import Any, Mapping, Sequence

from .pettingzoo import TABLE_RESET_OPTIONS, DealAECEnv

__all__ = ["TABLE_RESET_OPTIONS", "TableAECEnv", "table_env"]


class TableAECEnv(DealAECEnv):
    """Deprecated alias: ``DealAECEnv("deliberation", scenario_id=..., ...)``, for one
    release. Its arguments are the table's own (``scenario_id`` first)."""

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
        super().__init__(
            "deliberation",
            scenario_id=scenario_id,
            scenario_file=scenario_file,
            index=index,
            retries=retries,
            regulated=regulated,
            format=format,
            players=players,
            render_mode=render_mode,
        )


def table_env(scenario_id: str | None = None, **kwargs: Any) -> TableAECEnv:
    """Deprecated alias of ``dealgym.pettingzoo.env("deliberation", scenario_id=...)``."""
    return TableAECEnv(scenario_id, **kwargs)
