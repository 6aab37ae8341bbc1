"""Evidence before pass: a check states what it saw that shows its situation happened.

A kernel that does nothing must pass nothing. Checks of the form "every X is Y", "no X happened
after Y" or "at most one X" hold trivially when there is no X at all, so every Then step records
its evidence — the observations its judgement rests on ("plan-ready dispatched (2)", "a TurnInfo
carried a tag") — through :meth:`EvidenceLog.require` or :meth:`EvidenceLog.saw`:

* the situation happened: it is recorded, and the check goes on to judge it;
* it did not, and the requirement makes the mechanism mandatory (a kernel with no spans and
  SPAN-001): ``fail``, saying what was missing;
* it did not, and the kernel may legitimately not get there: ``incomplete``, "not exercised".

The plugin enforces the rule: a Then step that finishes without recording evidence is a defect of
the suite (``error``), and so is a property that passes with none; neither ever reads as a pass.
"""

from __future__ import annotations

from collections.abc import Sized
from typing import Any, TypeVar

from conformance.errors import ConformanceFailure, Incomplete

T = TypeVar("T")

#: Longest evidence line kept in the report.
_LIMIT = 200


def _count(found: Any) -> int:
    if isinstance(found, bool):
        return int(found)
    if isinstance(found, int):
        return found
    if isinstance(found, Sized):
        return len(found)
    return int(found is not None)


class EvidenceLog:
    """The evidence one check (one scenario or one property) recorded, in order."""

    def __init__(self) -> None:
        self.lines: list[str] = []
        #: Observations recorded, repeats included (a step that saw what an earlier one saw has
        #: still recorded its evidence; the report lists each line once).
        self.count = 0

    def __len__(self) -> int:
        return self.count

    def saw(self, what: str) -> None:
        """Record one observation the check rests on."""
        self.count += 1
        line = what if len(what) <= _LIMIT else what[: _LIMIT - 1] + "…"
        if line not in self.lines:
            self.lines.append(line)

    def require(self, what: str, found: T, *, mandatory: bool = True) -> T:
        """The situation ``what`` must have happened: ``found`` (a collection, a count or a
        truth value) must be non-empty. Records it and returns ``found``; otherwise raises
        ``fail`` (``mandatory``: the rule makes the mechanism obligatory) or ``incomplete``."""
        n = _count(found)
        if n > 0:
            self.saw(what if isinstance(found, bool) else f"{what} ({n})")
            return found
        if mandatory:
            raise ConformanceFailure(what, "it to happen at least once", "never")
        raise Incomplete(f"not exercised: {what} never happened in this run")
