"""The readings table: the points the seeds leave open, their legal alternatives, and how the suite
handles each (``readings.toml`` next to this module; ``docs/readings.md`` explains the rules).

A row is *accepts-all* (every alternative passes the same check), *declared* (the adapter declares
its reading and is held to it) or a *decision* (a conflict between the seeds, or a rule one profile
imports from the other, settled and explained). A table that names an unknown requirement, an
alternative twice, or a declared row without alternatives fails to load with a
:class:`~conformance.catalog.requirements.CatalogError` naming the row.
"""

from __future__ import annotations

import tomllib
from functools import cache
from pathlib import Path
from typing import Annotated, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError, model_validator

from conformance.catalog.requirements import CatalogError, load_catalog

READINGS_PATH = Path(__file__).resolve().parent / "readings.toml"

Handling = Literal["accepts-all", "declared", "decision"]


class Alternative(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)

    id: Annotated[str, Field(pattern=r"^[a-z0-9_-]+$")]
    text: str
    #: The reading the reference kernel takes (exactly one per row with alternatives).
    reference: bool = False


class Reading(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)

    id: Annotated[str, Field(pattern=r"^[a-z0-9-]+$")]
    title: str
    requirements: Annotated[list[str], Field(min_length=1)]
    #: Seed and section, e.g. "003 · Limit-reached behavior".
    seeds: Annotated[list[str], Field(min_length=1)]
    #: What the seeds say and leave open, in our words, quoting them.
    summary: str
    handling: Handling
    #: How the check treats the alternatives (accepts-all, declared) or what was decided.
    check: str
    alternatives: list[Alternative] = Field(default_factory=list)
    #: Self-test variants (registry names) taking the alternatives the reference kernel does not.
    variants: list[str] = Field(default_factory=list)
    #: For a declared row read from another AdapterInfo field than ``readings``.
    declared_by: str | None = None

    @model_validator(mode="after")
    def _consistent(self) -> Reading:
        ids = [a.id for a in self.alternatives]
        if len(ids) != len(set(ids)):
            raise ValueError("an alternative is listed twice")
        if self.handling == "decision":
            if self.alternatives:
                raise ValueError("a decision row lists no alternatives")
        else:
            if len(self.alternatives) < 2:
                raise ValueError("an open point has at least two alternatives")
            if sum(a.reference for a in self.alternatives) != 1:
                raise ValueError("exactly one alternative is the reference kernel's")
        return self

    @property
    def reference(self) -> Alternative | None:
        return next((a for a in self.alternatives if a.reference), None)

    def alternative(self, alt_id: str) -> Alternative | None:
        return next((a for a in self.alternatives if a.id == alt_id), None)


class Readings(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)

    version: int
    reading: list[Reading]

    def get(self, reading_id: str) -> Reading | None:
        return next((r for r in self.reading if r.id == reading_id), None)

    def touching(self, requirement_id: str) -> list[Reading]:
        """The readings that touch a requirement."""
        return [r for r in self.reading if requirement_id in r.requirements]

    @property
    def declarable(self) -> list[Reading]:
        """Rows an adapter may declare in ``AdapterInfo.readings`` (any open point with
        alternatives; on an accepts-all row a declaration holds the kernel to that alternative)."""
        return [r for r in self.reading if r.alternatives and not r.declared_by]


def _check_against_catalog(readings: Readings) -> None:
    known = {r.id for r in load_catalog().requirements}
    seen: set[str] = set()
    for row in readings.reading:
        if row.id in seen:
            raise CatalogError(f"readings.toml: reading {row.id} is listed twice")
        seen.add(row.id)
        unknown = [i for i in row.requirements if i not in known]
        if unknown:
            raise CatalogError(f"readings.toml: reading {row.id} names unknown requirement(s) {', '.join(unknown)}")


@cache
def load_readings() -> Readings:
    """The readings table, validated against its model and the catalog (cached)."""
    try:
        data = tomllib.loads(READINGS_PATH.read_text(encoding="utf-8"))
    except (OSError, tomllib.TOMLDecodeError) as exc:
        raise CatalogError(f"{READINGS_PATH.name}: {exc}") from None
    try:
        readings = Readings.model_validate(data)
    except ValidationError as exc:
        first = exc.errors()[0]
        where = first["loc"]
        row = ""
        if len(where) >= 2 and where[0] == "reading" and isinstance(where[1], int):
            rows = data.get("reading", [])
            row = f" (reading {rows[where[1]].get('id', where[1])})" if where[1] < len(rows) else ""
        raise CatalogError(f"{READINGS_PATH.name}{row}: {'.'.join(map(str, where[2:] or where))}: {first['msg']}") from None
    _check_against_catalog(readings)
    return readings


def validate_declared(declared: dict[str, str]) -> list[str]:
    """Problems with an adapter's declared readings (unknown reading, a row that cannot be declared,
    unknown alternative): one line each, empty when all is well."""
    readings = load_readings()
    problems = []
    for reading_id, alt in sorted(declared.items()):
        row = readings.get(reading_id)
        if row is None:
            known = ", ".join(r.id for r in readings.declarable)
            problems.append(f"unknown reading {reading_id!r} (readings an adapter may declare: {known})")
        elif row.handling == "decision" or row.declared_by:
            where = f" (declared through {row.declared_by})" if row.declared_by else ""
            problems.append(f"reading {reading_id!r} cannot be declared in readings{where}")
        elif row.alternative(alt) is None:
            problems.append(
                f"reading {reading_id!r} has no alternative {alt!r} (one of: {', '.join(a.id for a in row.alternatives)})"
            )
    return problems
