"""Why each third-party FAIL holds: its root cause and where the pinned framework's source decides
it (issue 22 §4), read from ``conformance/catalog/fail_causes.toml``.

A FAIL of a framework's column is defended by, in this order: an entry for that requirement; else,
when the requirement failed on mechanisms the adapter declares missing (the mechanism rule), the
entries of those mechanisms; else nothing, and it reads ``unconfirmed``. An entry may itself be
``unconfirmed`` (the cause is believed, the citation not found). The matrix, the committed
per-kernel reports and the book show the cause beside the message; a test checks that every FAIL
cell of the committed matrix has a cause with a citation or says ``unconfirmed``.
"""

from __future__ import annotations

import re
import tomllib
from collections.abc import Mapping
from dataclasses import dataclass
from functools import cache
from pathlib import Path
from typing import Any

from conformance.catalog.mechanisms import depends_on

CAUSES_PATH = Path(__file__).resolve().parent.parent / "catalog" / "fail_causes.toml"

#: A citation: ``package/path.py:line`` (a line, a range, or a list of them), or, in a compiled
#: kernel with no source lines (claude-agent-sdk's bundled CLI), ``name@offset``: the byte offset of
#: the quoted code in the pinned binary (one, a range or a list); several joined by "; ".
_CITED = r"[\w./-]+(\.py:\d+(-\d+)?(, ?\d+(-\d+)?)*|@\d+(-\d+)?(, ?\d+(-\d+)?)*)( \([^)]*\))?"
CITATION = re.compile(rf"^{_CITED}(; {_CITED})*$")


@dataclass(frozen=True)
class Cause:
    """Why one FAIL holds: ``source`` cites the framework; ``None`` when it is unconfirmed."""

    cause: str
    source: str | None

    @property
    def confirmed(self) -> bool:
        return self.source is not None

    def as_json(self) -> dict[str, Any]:
        return {"cause": self.cause, "source": self.source} if self.source else {"cause": self.cause, "unconfirmed": True}


def _entry(where: str, data: Any) -> Cause:
    if not isinstance(data, dict) or not isinstance(data.get("cause"), str):
        raise ValueError(f"{CAUSES_PATH.name}: {where}: needs a 'cause' string")
    source, unconfirmed = data.get("source"), data.get("unconfirmed", False)
    if (source is None) == (unconfirmed is False):
        raise ValueError(f"{CAUSES_PATH.name}: {where}: give either 'source' (a citation) or 'unconfirmed = true'")
    if source is not None and not CITATION.match(source):
        raise ValueError(f"{CAUSES_PATH.name}: {where}: source {source!r} is not 'package/path.py:line'")
    return Cause(data["cause"], source)


@cache
def causes() -> dict[str, dict[str, dict[str, Cause]]]:
    """kernel → {"requirements": {id: Cause}, "mechanisms": {name: Cause}}."""
    data = tomllib.loads(CAUSES_PATH.read_text(encoding="utf-8"))
    out: dict[str, dict[str, dict[str, Cause]]] = {}
    for kernel, table in data.items():
        if not isinstance(table, dict):
            raise ValueError(f"{CAUSES_PATH.name}: [{kernel}] must be a table")
        unknown = set(table) - {"pinned", "requirements", "mechanisms"}
        if unknown:
            raise ValueError(f"{CAUSES_PATH.name}: [{kernel}]: unknown keys {sorted(unknown)}")
        out[kernel] = {
            part: {key: _entry(f"[{kernel}.{part}.{key}]", v) for key, v in table.get(part, {}).items()}
            for part in ("requirements", "mechanisms")
        }
    return out


def _kind(mechanisms: Mapping[str, Any], name: str) -> str:
    m = mechanisms.get(name)
    if m is None:
        return "absent"
    return m.get("kind") if isinstance(m, dict) else m.kind


def lacking(requirement_id: str, mechanisms: Mapping[str, Any] | None) -> list[str]:
    """The mechanisms ``requirement_id`` depends on that this kernel's table does not make native
    (or observe-only where watching is enough): the mechanism rule's reasons."""
    if not mechanisms:
        return []
    return [
        d.name
        for d in depends_on(requirement_id)
        if _kind(mechanisms, d.name) != "native" and not (d.observe and _kind(mechanisms, d.name) == "observe-only")
    ]


def cause_of(kernel: str, requirement_id: str, mechanisms: Mapping[str, Any] | None, observed: str = "") -> Cause:
    """Why ``kernel`` fails ``requirement_id``; unconfirmed (with what was observed) when the table
    has neither the requirement nor every mechanism it lacks."""
    table = causes().get(kernel, {})
    if requirement_id in table.get("requirements", {}):
        return table["requirements"][requirement_id]
    missing = lacking(requirement_id, mechanisms)
    by_mechanism = table.get("mechanisms", {})
    if missing and all(m in by_mechanism for m in missing):
        parts = [by_mechanism[m] for m in missing]
        cause = "; ".join(f"{m}: {c.cause}" for m, c in zip(missing, parts, strict=True))
        sources = [c.source for c in parts]
        if all(sources):
            return Cause(cause, "; ".join(dict.fromkeys(s for s in sources if s)))
        return Cause(cause, None)
    return Cause(observed or "not yet read against the framework's source", None)
