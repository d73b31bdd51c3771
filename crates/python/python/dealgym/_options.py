"""What the PettingZoo and Gymnasium faces' ``reset(options=...)`` read, in one place: each
option names a ``Game`` argument, in Gymnasium's spelling (``scenario``, ``role``) or the
``Game``'s own (``scenario_id``, ``learner_role``). And where an unseeded reset's seed comes
from, for the faces that do not have Gymnasium's ``np_random``."""

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


class SeedSequence:
    """An unseeded reset's seed: the last seed given (a random one at first) and the number of
    unseeded resets since, mixed by splitmix64. The same seeded reset, then the same unseeded
    resets, give the same seeds on every platform; Python's global generator is never used."""

    MASK = (1 << 64) - 1

    def __init__(self) -> None:
        import secrets

        self.base = secrets.randbits(63)
        self.count = 0

    def seeded(self, seed: int) -> int:
        self.base, self.count = seed, 0
        return seed

    def next(self) -> int:
        self.count += 1
        z = (self.base + self.count * 0x9E3779B97F4A7C15) & self.MASK
        z = ((z ^ (z >> 30)) * 0xBF58476D1CE4E5B9) & self.MASK
        z = ((z ^ (z >> 27)) * 0x94D049BB133111EB) & self.MASK
        return (z ^ (z >> 31)) >> 1  # 63 bits
