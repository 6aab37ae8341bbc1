"""The journal kit's requirements (area JKIT, profile ``journal``), from
``conformance/catalog/journal.toml``: a catalog of their own, since the suite's profiles judge
kernels and these judge a Journal alone."""

from __future__ import annotations

import tomllib
from functools import cache
from typing import Annotated, Literal

from pydantic import BaseModel, ConfigDict, Field, StringConstraints

from conformance.report.verdicts import ReqInfo

PATH = __import__("pathlib").Path(__file__).resolve().parents[1] / "catalog" / "journal.toml"


class _Source(BaseModel):
    model_config = ConfigDict(extra="forbid")
    file: str
    section: str


class JournalRequirement(BaseModel):
    model_config = ConfigDict(extra="forbid")
    id: Annotated[str, StringConstraints(pattern=r"^JKIT-\d{3}$")]
    level: Literal["MUST", "MUST NOT", "SHOULD", "MAY", "DESCRIBED"]
    source: _Source
    seed: Annotated[str, Field(min_length=1)]
    statement: Annotated[str, Field(min_length=1)]
    capability: str | None = None


class _Catalog(BaseModel):
    model_config = ConfigDict(extra="forbid")
    version: str
    requirements: list[JournalRequirement]


@cache
def _load() -> _Catalog:
    catalog = _Catalog.model_validate(tomllib.loads(PATH.read_text(encoding="utf-8")))
    ids = [r.id for r in catalog.requirements]
    if len(set(ids)) != len(ids):
        raise ValueError(f"{PATH}: a requirement id is listed twice")
    return catalog


JOURNAL_CATALOG_VERSION = _load().version


def journal_rows() -> list[JournalRequirement]:
    return list(_load().requirements)


def journal_requirements() -> list[ReqInfo]:
    """Every row as the verdicts need it: each one gating for a journal (it is the whole contract)."""
    return [ReqInfo(id=r.id, level=r.level, gating=True, profiles=["journal"], statement=r.statement,
                    capability=r.capability) for r in journal_rows()]
