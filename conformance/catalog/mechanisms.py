"""Which mechanisms each requirement depends on (``mechanisms.toml`` beside this module).

Data apart from code: the verdict rule that uses it is
:func:`conformance.report.verdicts.mechanism_verdict`.
"""

from __future__ import annotations

import tomllib
from dataclasses import dataclass
from collections.abc import Iterable
from functools import cache
from pathlib import Path
from typing import Any

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
def _table() -> dict[str, Any]:
    return tomllib.loads(MECHANISMS_PATH.read_text(encoding="utf-8"))


@cache
def dependencies() -> dict[str, tuple[Dependency, ...]]:
    """requirement id → the mechanisms its checks depend on."""
    return {rid: tuple(Dependency.parse(d) for d in deps) for rid, deps in _table().get("depends", {}).items()}


def dispatch_subject(point: str) -> str | None:
    """The requirement whose subject is that hook point ``point`` is dispatched at all."""
    return _table().get("dispatch", {}).get(point)


def replace_subject(point: str) -> str | None:
    """The requirement whose subject is that the kernel acts on a replacement at ``point``."""
    return _table().get("replace", {}).get(point)


def blocker_for_missing_point(point: str, requirement_ids: Iterable[str]) -> str | None:
    """The requirement that blocks a check of ``requirement_ids`` needing ``point``, which the run
    never dispatched: its dispatch requirement, unless the check is about that point itself (one of
    its ids is that requirement or depends on the point). None: the check judges it itself."""
    owner = dispatch_subject(point)
    ids = list(requirement_ids)
    if owner is None or owner in ids or any(d.name == point for i in ids for d in depends_on(i)):
        return None
    return owner


def owner_of(mechanism: str, profiles: Iterable[str]) -> str | None:
    """The requirement whose subject ``mechanism`` is, for a requirement of ``profiles``: a hook
    point's dispatch requirement, else the first of its ``[owners]`` sharing a profile. None: no
    owner (a requirement depending on it answers for it itself)."""
    point = dispatch_subject(mechanism)
    if point is not None:
        return point
    from conformance.catalog.requirements import load_catalog

    wanted = set(profiles)
    catalog = load_catalog()
    for rid in _table().get("owners", {}).get(mechanism, []):
        if not wanted or wanted & set(catalog.get(rid).profiles):
            return rid
    return None


def depends_on(requirement_id: str) -> tuple[Dependency, ...]:
    return dependencies().get(requirement_id, ())
