"""Which mechanisms each requirement depends on (``mechanisms.toml`` beside this module).

Data apart from code: the verdict rule that uses it is
:func:`conformance.report.verdicts.mechanism_verdict`.
"""

from __future__ import annotations

import tomllib
from dataclasses import dataclass
from functools import cache
from pathlib import Path

MECHANISMS_PATH = Path(__file__).with_name("mechanisms.toml")


@dataclass(frozen=True)
class Dependency:
    """One mechanism a requirement's checks use; ``observe``: watching it is enough."""

    name: str
    observe: bool = False

    @classmethod
    def parse(cls, text: str) -> Dependency:
        name, _, mode = text.partition(":")
        if mode not in ("", "observe"):
            raise ValueError(f"{MECHANISMS_PATH.name}: unknown mode {mode!r} in {text!r} (only ':observe')")
        return cls(name, mode == "observe")


@cache
def dependencies() -> dict[str, tuple[Dependency, ...]]:
    """requirement id → the mechanisms its checks depend on."""
    data = tomllib.loads(MECHANISMS_PATH.read_text(encoding="utf-8"))
    return {rid: tuple(Dependency.parse(d) for d in deps) for rid, deps in data.get("depends", {}).items()}


def depends_on(requirement_id: str) -> tuple[Dependency, ...]:
    return dependencies().get(requirement_id, ())
