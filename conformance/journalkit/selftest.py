"""The journal kit's self-test (run by ``akc selftest``): every mutant journal killed by the
requirement it breaks, every legal variant passing every requirement."""

from __future__ import annotations

import time
from dataclasses import dataclass

from conformance.journalkit.mutants import ENTRIES, JournalEntry
from conformance.journalkit.runner import run_kit


@dataclass
class JournalRow:
    entry: JournalEntry
    verdicts: dict[str, str]
    duration_s: float
    error: str | None = None

    @property
    def ok(self) -> bool:
        if self.error is not None:
            return False
        if self.entry.kind == "mutant":
            return self.verdicts.get(self.entry.breaks or "") == "fail"
        return all(v in ("pass", "not-offered") for v in self.verdicts.values())

    def line(self) -> str:
        if self.entry.kind == "mutant":
            mark = "killed  " if self.ok else "SURVIVED"
            return f"  {mark} {self.entry.breaks:<11} {'journal':<11} {self.entry.name} ({self.verdicts.get(self.entry.breaks or '', 'not run')})" + (f"  [{self.error}]" if self.error else "")
        failed = sorted(r for r, v in self.verdicts.items() if v not in ("pass", "not-offered"))
        return f"  {'pass' if self.ok else 'FAIL'} {self.entry.name}" + (f"  failed: {', '.join(failed)}" if failed else "") + (f"  [{self.error}]" if self.error else "")


def run_entry(entry: JournalEntry, *, kills: int = 3) -> JournalRow:
    """A mutant runs its own requirement only; a variant runs them all."""
    started = time.perf_counter()
    try:
        report = run_kit(entry.spec, factory=entry.make, reqs=[entry.breaks] if entry.breaks else None, kills=kills,
                         timeout_s=10.0, name=entry.name)
    except Exception as exc:  # noqa: BLE001 - a harness error: neither killed nor passing, say why
        return JournalRow(entry, {}, time.perf_counter() - started, f"{type(exc).__name__}: {exc}"[:300])
    return JournalRow(entry, report.verdicts(), time.perf_counter() - started)


def run_journal_selftest(names: list[str] | None = None) -> list[JournalRow]:
    return [run_entry(e) for e in ENTRIES.values() if names is None or e.name in names]


def render(rows: list[JournalRow]) -> str:
    mutants = [r for r in rows if r.entry.kind == "mutant"]
    variants = [r for r in rows if r.entry.kind == "variant"]
    lines = ["JOURNAL MUTANTS (akc journal: breaks -> killed?)", *(r.line() for r in mutants),
             "JOURNAL VARIANTS (every requirement -> passes?)", *(r.line() for r in variants),
             (f"journal kit: mutants killed {sum(r.ok for r in mutants)}/{len(mutants)}, "
              f"variants passing {sum(r.ok for r in variants)}/{len(variants)}")]
    return "\n".join(lines)
