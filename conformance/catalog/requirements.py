"""The requirement catalog: every normative statement of the seeds, one row per testable obligation.

The data lives in ``catalog.toml`` next to this module (readable and reviewable as text); this
module loads it, validates it with pydantic and answers the questions the runner and the CLI ask
(one id, the rows of a profile, the MUSTs a profile cannot opt out of). A catalog that breaks a
rule (duplicate id, one-sided conflict, SHOULD without capability...) fails to load with a
:class:`CatalogError` naming the row, so a bad edit never reaches a verdict.
"""

from __future__ import annotations

import tomllib
from functools import cache
from pathlib import Path
from typing import Annotated, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError, model_validator

from conformance.boundary.adapter import CAPABILITIES
from conformance.boundary.scenario import Profile

CATALOG_PATH = Path(__file__).resolve().parent / "catalog.toml"

Level = Literal["MUST", "MUST NOT", "SHOULD", "MAY", "DESCRIBED"]
LEVELS: tuple[str, ...] = ("MUST", "MUST NOT", "SHOULD", "MAY", "DESCRIBED")
PROFILES: tuple[str, ...] = ("kernel", "commonagent")
Testability = Literal["black-box", "untestable"]

#: Levels that can never be opted out of, and the optional ones that need a capability.
MANDATORY_LEVELS = frozenset({"MUST", "MUST NOT"})
OPTIONAL_LEVELS = frozenset({"SHOULD", "MAY"})

ID_PATTERN = r"^[A-Z]+-[0-9]{3}$"


class CatalogError(Exception):
    """The catalog file is missing, not TOML, or breaks a catalog rule."""


class UnknownRequirement(KeyError):
    """No requirement has this id."""

    def __str__(self) -> str:  # KeyError would print the repr of its argument
        return str(self.args[0]) if self.args else "unknown requirement"


class Source(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)

    #: Seed file name, e.g. ``003_e9db79d6abeb7c7a.txt``.
    file: str
    #: Section heading in that file, without the trailing ``#`` of the web page.
    section: str


class Requirement(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)

    id: Annotated[str, Field(pattern=ID_PATTERN)]
    level: Level
    #: Whether failing it fails the run for its profiles: MUST/MUST NOT always, SHOULD/MAY never,
    #: a DESCRIBED rule when the design chose to make it a check of the profile.
    gating: bool
    profiles: Annotated[list[Profile], Field(min_length=1)]
    source: Source
    #: One sentence in our own words, precise enough to write the check from.
    statement: Annotated[str, Field(min_length=10)]
    testability: Testability
    untestable_reason: str | None = None
    #: The optional capability the row depends on: required for SHOULD/MAY; set on a MUST that
    #: only applies when a kernel offers the capability (reported not-offered otherwise).
    capability: str | None = None
    #: Further capabilities the row needs besides ``capability`` (e.g. the cost roll-up through
    #: sub-agents needs both ``subagents`` and ``max_cost_usd``).
    also_requires: list[str] = Field(default_factory=list)
    #: Ids of rows of the other profile that state the opposite rule (kept symmetric).
    conflicts_with: list[str] = Field(default_factory=list)
    #: How the harness observes it, or the interpretation chosen.
    notes: str | None = None

    @model_validator(mode="after")
    def _consistent(self) -> Requirement:
        where = f"requirement {self.id}"
        if len(set(self.profiles)) != len(self.profiles):
            raise ValueError(f"{where}: profiles listed twice")
        if self.level in MANDATORY_LEVELS and not self.gating:
            raise ValueError(f"{where}: a {self.level} is always gating")
        if self.level in OPTIONAL_LEVELS and self.gating:
            raise ValueError(f"{where}: a {self.level} is never gating")
        if self.level in OPTIONAL_LEVELS and not self.capability:
            raise ValueError(f"{where}: a {self.level} must name the capability it depends on")
        for cap in [self.capability, *self.also_requires]:
            if cap is not None and cap not in CAPABILITIES:
                raise ValueError(f"{where}: capability {cap!r} is not in adapter.CAPABILITIES")
        if (self.testability == "untestable") != bool(self.untestable_reason):
            raise ValueError(f"{where}: untestable_reason is required exactly when untestable")
        if self.conflicts_with and len(self.profiles) != 1:
            raise ValueError(f"{where}: a conflicting row belongs to exactly one profile")
        return self

    @property
    def area(self) -> str:
        return self.id.split("-", 1)[0]

    @property
    def required_capabilities(self) -> list[str]:
        """Every capability a kernel must declare for this row to apply to it."""
        return [c for c in [self.capability, *self.also_requires] if c]


class Catalog(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)

    version: str
    requirements: list[Requirement]

    @model_validator(mode="after")
    def _links(self) -> Catalog:
        by_id: dict[str, Requirement] = {}
        for req in self.requirements:
            if req.id in by_id:
                raise ValueError(f"requirement id {req.id} is used twice")
            by_id[req.id] = req
        for req in self.requirements:
            for other_id in req.conflicts_with:
                other = by_id.get(other_id)
                if other is None:
                    raise ValueError(f"{req.id}: conflicts_with names unknown id {other_id}")
                if set(other.profiles) & set(req.profiles):
                    raise ValueError(f"{req.id}: conflicts_with {other_id} of the same profile")
                if req.id not in other.conflicts_with:
                    raise ValueError(f"{req.id}: conflicts_with {other_id}, but not back")
        return self

    def get(self, req_id: str) -> Requirement:
        """The requirement with this id (case-insensitive); raises :class:`UnknownRequirement`."""
        wanted = req_id.strip().upper()
        for req in self.requirements:
            if req.id == wanted:
                return req
        raise UnknownRequirement(f"unknown requirement id {req_id!r}")

    def ids(self) -> list[str]:
        return [req.id for req in self.requirements]

    def for_profile(self, profile: str) -> list[Requirement]:
        """Rows of one profile, in catalog order; raises ``ValueError`` for an unknown profile."""
        _check_profile(profile)
        return [req for req in self.requirements if profile in req.profiles]

    def musts(self, profile: str) -> list[Requirement]:
        """The MUST and MUST NOT rows of a profile (those a kernel cannot opt out of)."""
        return [r for r in self.for_profile(profile) if r.level in MANDATORY_LEVELS]

    def gating(self, profile: str) -> list[Requirement]:
        """Every row whose failure fails a run of this profile (MUSTs and gating DESCRIBED)."""
        return [r for r in self.for_profile(profile) if r.gating]


def _check_profile(profile: str) -> None:
    if profile not in PROFILES:
        raise ValueError(f"unknown profile {profile!r} (expected one of: {', '.join(PROFILES)})")


def parse_catalog(text: str, origin: str = "catalog.toml") -> Catalog:
    """Parse and validate catalog TOML text; errors name ``origin`` and the offending row."""
    try:
        data = tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        raise CatalogError(f"{origin}: not valid TOML: {exc}") from None
    try:
        return Catalog.model_validate(data)
    except ValidationError as exc:
        first = exc.errors()[0]
        loc = list(first["loc"])
        row = ""
        if len(loc) >= 2 and loc[0] == "requirements" and isinstance(loc[1], int):
            rows = data.get("requirements", [])
            rid = rows[loc[1]].get("id", "?") if loc[1] < len(rows) else "?"
            row = f" (row {loc[1] + 1}, id {rid})"
            loc = loc[2:]
        field = ".".join(str(p) for p in loc)
        field = f" {field}:" if field else ""
        raise CatalogError(f"{origin}{row}:{field} {first['msg']}") from None


@cache
def load_catalog() -> Catalog:
    """The package's catalog, loaded and validated once per process."""
    try:
        text = CATALOG_PATH.read_text(encoding="utf-8")
    except OSError as exc:
        raise CatalogError(f"cannot read {CATALOG_PATH}: {exc.strerror}") from None
    return parse_catalog(text, origin=str(CATALOG_PATH))


def get(req_id: str) -> Requirement:
    """Shortcut for ``load_catalog().get(req_id)``."""
    return load_catalog().get(req_id)


def for_profile(profile: str) -> list[Requirement]:
    """Shortcut for ``load_catalog().for_profile(profile)``."""
    return load_catalog().for_profile(profile)


def musts(profile: str) -> list[Requirement]:
    """Shortcut for ``load_catalog().musts(profile)``."""
    return load_catalog().musts(profile)
