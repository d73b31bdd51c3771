"""What the faces' ``reset(options=...)`` read, in one place: each option names a ``Game``
argument. Gymnasium's spelling (``scenario``, ``role``) and the ``Game``'s own
(``scenario_id``, ``learner_role``) are both read, by every face."""

from __future__ import annotations

from typing import Any, Mapping

#: A reset option -> the ``Game`` argument it sets.
RESET_OPTIONS = {
    "scenario": "scenario_id",
    "scenario_id": "scenario_id",
    "index": "index",
    "role": "learner_role",
    "learner_role": "learner_role",
    "first_mover": "first_mover",
    "member": "member",
}


def game_arguments(
    options: Mapping[str, Any] | None, defaults: Mapping[str, Any]
) -> tuple[dict[str, Any], list[str]]:
    """The ``Game`` arguments ``options`` set over ``defaults`` (those left ``None`` dropped),
    and the option keys no face reads. Two spellings of one argument are refused."""
    chosen = dict(defaults)
    given: dict[str, str] = {}
    unknown = []
    for key, value in (options or {}).items():
        target = RESET_OPTIONS.get(key)
        if target is None:
            unknown.append(key)
            continue
        if target in given:
            raise ValueError(f"reset options {given[target]!r} and {key!r} both set {target}")
        given[target] = key
        chosen[target] = value
    return {k: v for k, v in chosen.items() if v is not None}, unknown
