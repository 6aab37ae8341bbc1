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

Verdict = Literal["pass", "fail", "not-offered", "incomplete", "error"]
CheckOutcome = Literal["pass", "fail", "not-offered", "incomplete", "error"]
VERDICTS: tuple[str, ...] = ("pass", "fail", "not-offered", "incomplete", "error")


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


class CheckResult(_Model):
    """One scenario or property that checked the requirement."""

    feature: str
    scenario: str
    outcome: CheckOutcome
    message: str | None = None
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
    #: Why the verdict is what it is when no check says so (not offered, no check ran).
    message: str | None = None
    checks: list[CheckResult] = Field(default_factory=list)


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

    def get(self, req_id: str) -> RequirementResult | None:
        return next((r for r in self.requirements if r.id == req_id), None)

    def verdicts(self) -> dict[str, str]:
        """requirement id → verdict (handy in tests)."""
        return {r.id: r.verdict for r in self.requirements}

    def failing(self) -> list[RequirementResult]:
        return [r for r in self.requirements if r.verdict in ("fail", "error", "incomplete")]


# --------------------------------------------------------------------------- reading


def failing_check(req: RequirementResult) -> CheckResult | None:
    """The check that explains a bad verdict (the first one with that outcome)."""
    for outcome in (req.verdict, "error", "fail", "incomplete"):
        for c in req.checks:
            if c.outcome == outcome:
                return c
    return None


def explanation(req: RequirementResult) -> str:
    """One line saying why a requirement is not a pass."""
    check = failing_check(req) if req.verdict != "not-offered" else None
    if check is not None and check.outcome != "pass":
        return f"{check.feature} / {check.scenario}: {check.message or check.outcome}"
    return req.message or req.verdict


def summary_line(report: Report) -> str:
    counts = ", ".join(f"{report.summary.get(v, 0)} {v}" for v in VERDICTS)
    status = {0: "conformant", 1: "NOT conformant", 3: "incomplete"}.get(report.exit_code, "usage error")
    return (
        f"{report.kernel.name} {report.kernel.version} [{', '.join(report.profiles) or 'no profile'}]: "
        f"{status} — {counts}; {len(report.untestable)} untestable; {report.duration_s:.1f} s"
    )
