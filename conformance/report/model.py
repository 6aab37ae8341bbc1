"""The conformance report: one pydantic model (the writers are in :mod:`conformance.report.writers`,
the terminal view in :mod:`conformance.report.terminal`).

Keyed by requirement id and scenario name, never by pytest node ids (they change with how
pytest was invoked).
"""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, ConfigDict, Field

from conformance.boundary.adapter import Mechanism
from conformance.trace.canonical import Trace

Verdict = Literal["pass", "fail", "not-offered", "not-applicable", "blocked", "incomplete", "error"]
CheckOutcome = Literal["pass", "fail", "not-offered", "blocked", "incomplete", "error"]
VERDICTS: tuple[str, ...] = ("pass", "fail", "not-offered", "not-applicable", "blocked", "incomplete", "error")
#: Verdicts that are neither a pass nor a failure but leave the run unproven (exit code 3).
UNPROVEN: tuple[str, ...] = ("blocked", "incomplete", "error")


class _Model(BaseModel):
    model_config = ConfigDict(extra="forbid")


class SuiteInfo(_Model):
    version: str
    catalog_version: str | None = None


class KernelInfo(_Model):
    name: str
    version: str
    language: str = "python"
    profiles: list[str] = Field(default_factory=list)
    capabilities: list[str] = Field(default_factory=list)
    #: The readings of open points the adapter declared ({reading id: alternative id}).
    readings: dict[str, str] = Field(default_factory=dict)
    #: The adapter's mechanism table (hook point / capability / observation → how it maps).
    mechanisms: dict[str, Mechanism] = Field(default_factory=dict)
    #: The model APIs the adapter declared, and those the kernel's model calls came in over HTTP
    #: (docs/http-kernels.md); empty: the model double was called directly.
    dialects: list[str] = Field(default_factory=list)
    dialects_used: list[str] = Field(default_factory=list)
    #: What the adapter declared its framework's in-process model API cannot carry (readings
    #: ``dialect-limits``; docs/adapter.md): the checks judged its model calls on what it can say.
    model_api_cannot_carry: list[str] = Field(default_factory=list)


class CheckResult(_Model):
    """One scenario or property that checked the requirement."""

    feature: str
    scenario: str
    outcome: CheckOutcome
    message: str | None = None
    #: For a ``blocked`` check: the requirement(s) whose subject was its unmet precondition.
    blocked_by: list[str] = Field(default_factory=list)
    #: What the check saw that shows its situation happened (evidence before pass): one line per
    #: observation, e.g. "plan-ready dispatched (2)". A check passes only with evidence.
    evidence: list[str] = Field(default_factory=list)
    #: For a failed or errored check: the scenario's canonical trace (``schemas/trace.schema.json``),
    #: so a kernel author sees what happened without re-running it.
    trace: Trace | None = None


class RequirementResult(_Model):
    id: str
    level: str
    profiles: list[str] = Field(default_factory=list)
    statement: str = ""
    gating: bool = False
    verdict: Verdict
    #: Why the verdict is what it is when no check says so (not offered, not applicable, no check
    #: ran, blocked by another requirement).
    message: str | None = None
    #: For a ``blocked`` verdict: the requirements whose subject its checks could not get past.
    blocked_by: list[str] = Field(default_factory=list)
    checks: list[CheckResult] = Field(default_factory=list)
    #: Listed with this verdict in the expectations file (``akc run --expect``): a known failure
    #: that does not fail the run.
    expected: bool = False


class ExpectationsResult(_Model):
    """How the run compares with an expectations file (``akc run --expect FILE``)."""

    file: str
    #: The suite and catalog versions the file was written with.
    suite_version: str | None = None
    catalog_version: str | None = None
    #: Non-passing requirements listed with that verdict (they do not fail the run).
    expected: list[str] = Field(default_factory=list)
    #: Non-passing requirements not listed, or listed with another verdict: "id: verdict".
    unexpected: list[str] = Field(default_factory=list)
    #: Listed requirements that now pass (or are not offered): delete their entries.
    stale: list[str] = Field(default_factory=list)
    #: Expected failures that now fail in other checks or for another reason: "id: what changed".
    changed: list[str] = Field(default_factory=list)
    #: Listed requirements this run did not check (another profile, ``--req``, ``--smoke``).
    not_run: list[str] = Field(default_factory=list)


class UntestableEntry(_Model):
    id: str
    reason: str


class Report(_Model):
    """The result of certifying one kernel (``schemas/report.schema.json``)."""

    suite: SuiteInfo
    kernel: KernelInfo
    #: The profiles that were run (selected and claimed by the adapter).
    profiles: list[str] = Field(default_factory=list)
    requirements: list[RequirementResult] = Field(default_factory=list)
    untestable: list[UntestableEntry] = Field(default_factory=list)
    summary: dict[str, int] = Field(default_factory=dict)
    #: Harness errors outside any requirement (a feature file or property module that failed to
    #: load); any makes the run incomplete (exit code 3 at best).
    errors: list[str] = Field(default_factory=list)
    exit_code: int
    duration_s: float = 0.0
    #: Scenarios in flight at once: the shards of requirements run side by side, each in its own
    #: process (``akc run --jobs N`` runs at most N; 1: one scenario after the other).
    jobs: int = 1
    #: The requirement ids asked for with ``--req`` (None: the whole profile).
    selected: list[str] | None = None
    #: Set when the run was compared with an expectations file.
    expectations: ExpectationsResult | None = None

    def get(self, req_id: str) -> RequirementResult | None:
        return next((r for r in self.requirements if r.id == req_id), None)

    def verdicts(self) -> dict[str, str]:
        """requirement id → verdict (handy in tests)."""
        return {r.id: r.verdict for r in self.requirements}

    def failing(self) -> list[RequirementResult]:
        return [r for r in self.requirements if r.verdict in ("fail", *UNPROVEN)]


# --------------------------------------------------------------------------- reading


def failing_check(req: RequirementResult) -> CheckResult | None:
    """The check that explains a bad verdict (the first one with that outcome)."""
    for outcome in (req.verdict, "error", "fail", "blocked", "incomplete"):
        for c in req.checks:
            if c.outcome == outcome:
                return c
    return None


def explanation(req: RequirementResult) -> str:
    """One line saying why a requirement is not a pass."""
    check = failing_check(req) if req.verdict not in ("not-offered", "not-applicable") else None
    if req.verdict == "blocked" and req.message:
        return req.message
    if check is not None and check.outcome != "pass":
        return f"{check.feature} / {check.scenario}: {check.message or check.outcome}"
    return req.message or req.verdict


def _n(count: int, noun: str) -> str:
    return f"{count} {noun}" + ("" if count == 1 else "s")


def status_label(report: Report) -> str:
    """The run's status in words that do not overstate it: "conformant (1 non-gating failure)",
    "adapter error in 74 requirements", "conformant on the 1 selected requirement"..."""
    reqs = [r for r in report.requirements if not r.expected]
    fails = [r for r in reqs if r.verdict == "fail"]
    gating_fails = [r for r in fails if r.gating]
    errors = [r for r in reqs if r.verdict == "error"]
    incomplete = [r for r in reqs if r.verdict == "incomplete"]
    blocked = [r for r in reqs if r.verdict == "blocked"]
    expected = sum(1 for r in report.requirements if r.expected)
    stale = len(report.expectations.stale) if report.expectations is not None else 0
    scope = "" if report.selected is None else f" on the {_n(len(report.requirements), 'selected requirement')}"
    changed = len(report.expectations.changed) if report.expectations is not None else 0
    expected_gating = [r for r in report.requirements if r.expected and r.gating and r.verdict == "fail"]
    notes: list[str] = []
    if report.exit_code == 0 and expected_gating:
        # gating failures remain, only expected ones: never "conformant"
        base = "not conformant — no new failures"
        if changed:
            notes.append(f"{_n(changed, 'changed failure')} (--warn-changed)")
        notes.append(f"{expected} expected")
        expected = 0
    elif report.exit_code == 0:
        base = "conformant"
        if fails:
            notes.append(_n(len(fails), "non-gating failure"))
    elif report.exit_code == 1:
        base = "NOT conformant"
        if gating_fails:
            notes.append(_n(len(gating_fails), "gating failure"))
        if len(fails) > len(gating_fails):
            notes.append(f"{_n(len(fails) - len(gating_fails), 'SHOULD/MAY failure')} (--strict)")
        if stale and not fails:
            notes.append(f"{_n(stale, 'stale expectation')} (--strict)")
            stale = 0
        if changed:
            notes.append(_n(changed, "changed expected failure"))
        if blocked:
            notes.append(f"{len(blocked)} blocked")
    elif report.exit_code == 3:
        if errors and not incomplete and not blocked and not report.errors:
            base = "adapter error"
            notes.append(f"in {_n(len(errors), 'requirement')}")
        elif report.errors and not errors and not incomplete and not blocked:
            base = "harness error"
        else:
            base = "incomplete"
            if errors:
                notes.append(_n(len(errors), "error"))
            if incomplete:
                notes.append(f"{len(incomplete)} could not run")
            if blocked:
                notes.append(f"{len(blocked)} blocked by another requirement")
            if report.errors:
                notes.append(_n(len(report.errors), "harness error"))
        if fails:
            notes.append(_n(len(fails), "non-gating failure"))
    else:
        base = "usage error"
    if expected:
        notes.append(_n(expected, "expected failure"))
    if stale:
        notes.append(_n(stale, "stale expectation"))
    if base in ("adapter error",):
        return f"{base}{scope} {' '.join(notes[:1])}" + (f" ({', '.join(notes[1:])})" if notes[1:] else "")
    return f"{base}{scope}" + (f" ({', '.join(notes)})" if notes else "")


def summary_line(report: Report) -> str:
    counts = ", ".join(f"{report.summary.get(v, 0)} {v}" for v in VERDICTS)
    return (
        f"{report.kernel.name} {report.kernel.version} [{', '.join(report.profiles) or 'no profile'}]"
        f"{f' (model over HTTP: {chr(44).join(report.kernel.dialects_used)})' if report.kernel.dialects_used else ''}: "
        f"{status_label(report)} — {counts}; {len(report.untestable)} untestable; {report.duration_s:.1f} s"
    )


def short_title(statement: str, limit: int = 60) -> str:
    """The start of a catalog statement, for test names ("LOOP-007 pre-tool-call is dispatched once
    per tool_use block…"): the first clause, cut at a word boundary within ``limit`` characters."""
    text = " ".join(statement.split()).rstrip(".")
    for stop in ("; ", ": ", " — ", " (", ", "):
        head = text.split(stop, 1)[0]
        if len(head) >= 25:
            text = head
    if len(text) <= limit:
        return text + ("" if text == " ".join(statement.split()).rstrip(".") else "…")
    cut = text[: limit + 1].rsplit(" ", 1)[0].rstrip(".,;:")
    return cut + "…"
