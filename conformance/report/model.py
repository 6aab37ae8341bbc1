"""The conformance report: one pydantic model, and its JSON, JUnit XML, Markdown and terminal forms.

Keyed by requirement id and scenario name, never by pytest node ids (they change with how
pytest was invoked). Files are written atomically (temp file + rename), once the run is complete.
"""

from __future__ import annotations

import os
import tempfile
from pathlib import Path
from typing import Literal
from xml.etree import ElementTree as ET

from pydantic import BaseModel, ConfigDict, Field

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


class CheckResult(_Model):
    """One scenario or property that checked the requirement."""

    feature: str
    scenario: str
    outcome: CheckOutcome
    message: str | None = None
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


# --------------------------------------------------------------------------- writing


def write_atomic(path: str | os.PathLike[str], text: str) -> Path:
    """Write ``text`` to ``path`` via a temp file in the same folder and a rename."""
    target = Path(path)
    target.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=f".{target.name}.", suffix=".tmp", dir=target.parent)
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as fh:
            fh.write(text)
        os.replace(tmp, target)
    except BaseException:
        try:
            os.unlink(tmp)
        except OSError:
            pass
        raise
    return target


def to_json(report: Report) -> str:
    return report.model_dump_json(indent=2) + "\n"


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


def to_junit(report: Report) -> str:
    """One testcase per requirement; failure/error/skipped elements by verdict."""
    counts = report.summary
    suite = ET.Element(
        "testsuite",
        name=f"akc {report.kernel.name} {report.kernel.version}",
        tests=str(len(report.requirements)),
        failures=str(counts.get("fail", 0)),
        errors=str(counts.get("error", 0)),
        skipped=str(counts.get("not-offered", 0) + counts.get("incomplete", 0)),
        time=f"{report.duration_s:.3f}",
    )
    props = ET.SubElement(suite, "properties")
    ET.SubElement(props, "property", name="suite_version", value=report.suite.version)
    ET.SubElement(props, "property", name="catalog_version", value=str(report.suite.catalog_version))
    ET.SubElement(props, "property", name="exit_code", value=str(report.exit_code))
    for req in report.requirements:
        case = ET.SubElement(suite, "testcase", classname=f"{req.level}", name=req.id)
        message = explanation(req)
        if req.verdict == "fail":
            el = ET.SubElement(case, "failure", message=message)
            el.text = _details(req)
        elif req.verdict == "error":
            el = ET.SubElement(case, "error", message=message)
            el.text = _details(req)
        elif req.verdict == "not-offered":
            ET.SubElement(case, "skipped", message="not offered")
        elif req.verdict == "incomplete":
            ET.SubElement(case, "skipped", message=f"incomplete: {message}")
        if req.statement:
            ET.SubElement(case, "system-out").text = req.statement
    for k, error in enumerate(report.errors):
        case = ET.SubElement(suite, "testcase", classname="harness", name=f"harness-error-{k + 1}")
        ET.SubElement(case, "error", message=error)
    for entry in report.untestable:
        case = ET.SubElement(suite, "testcase", classname="untestable", name=entry.id)
        ET.SubElement(case, "skipped", message=f"untestable: {entry.reason}")
    suites = ET.Element("testsuites")
    suites.append(suite)
    ET.indent(suites)
    return '<?xml version="1.0" encoding="utf-8"?>\n' + ET.tostring(suites, encoding="unicode") + "\n"


def _details(req: RequirementResult) -> str:
    return "\n".join(
        f"[{c.outcome}] {c.feature} / {c.scenario}: {c.message or ''}" for c in req.checks if c.outcome != "pass"
    )


def summary_line(report: Report) -> str:
    counts = ", ".join(f"{report.summary.get(v, 0)} {v}" for v in VERDICTS)
    status = {0: "conformant", 1: "NOT conformant", 3: "incomplete"}.get(report.exit_code, "usage error")
    return (
        f"{report.kernel.name} {report.kernel.version} [{', '.join(report.profiles) or 'no profile'}]: "
        f"{status} — {counts}; {len(report.untestable)} untestable; {report.duration_s:.1f} s"
    )


def _md_cell(text: str) -> str:
    return text.replace("|", "\\|").replace("\n", " ")


def to_markdown(report: Report) -> str:
    """A CI step summary: the counts, then the requirements that are not a pass."""
    lines = [
        f"## Agent kernel conformance: {report.kernel.name} {report.kernel.version}",
        "",
        summary_line(report),
        "",
        "| verdict | count |",
        "| --- | --- |",
    ]
    lines += [f"| {v} | {report.summary.get(v, 0)} |" for v in VERDICTS]
    bad = [r for r in report.requirements if r.verdict in ("fail", "error", "incomplete")]
    if bad:
        lines += ["", "### Requirements not passing", "", "| id | level | verdict | why |", "| --- | --- | --- | --- |"]
        lines += [f"| {r.id} | {r.level} | {r.verdict} | {_md_cell(explanation(r))} |" for r in bad]
    if report.errors:
        lines += ["", "### Harness errors", ""] + [f"- {_md_cell(e)}" for e in report.errors]
    offered = [r.id for r in report.requirements if r.verdict == "not-offered"]
    if offered:
        lines += ["", f"Not offered: {', '.join(offered)}"]
    return "\n".join(lines) + "\n"


def write_reports(
    report: Report, *, json_path: str | None = None, junit_path: str | None = None, markdown_path: str | None = None
) -> list[Path]:
    """Write each requested report atomically; returns the paths written."""
    written = []
    if json_path:
        written.append(write_atomic(json_path, to_json(report)))
    if junit_path:
        written.append(write_atomic(junit_path, to_junit(report)))
    if markdown_path:
        written.append(write_atomic(markdown_path, to_markdown(report)))
    return written


# --------------------------------------------------------------------------- terminal

_STYLE = {"pass": "green", "fail": "bold red", "error": "bold magenta", "incomplete": "yellow", "not-offered": "dim"}


def render_table(report: Report, *, verbose: bool = False, width: int | None = None) -> str:
    """A rich table (one row per requirement) plus the summary line, as text."""
    from rich.console import Console
    from rich.markup import escape
    from rich.table import Table

    table = Table(title=f"{report.kernel.name} {report.kernel.version}", show_lines=False)
    table.add_column("requirement", no_wrap=True)
    table.add_column("level", no_wrap=True)
    table.add_column("verdict", no_wrap=True)
    table.add_column("why (failing scenario: expected / observed)")
    for r in report.requirements:
        why = "" if r.verdict == "pass" else explanation(r)
        table.add_row(escape(r.id), escape(r.level), f"[{_STYLE.get(r.verdict, '')}]{r.verdict}[/]", escape(why))
    console = Console(record=True, width=width or 120, file=open(os.devnull, "w"), force_terminal=False)  # noqa: SIM115
    if table.row_count:
        console.print(table)
    for error in report.errors:
        console.print(escape(f"harness error: {error}"))
    console.print(escape(summary_line(report)))
    return console.export_text()


def print_report(report: Report, *, verbose: bool = False) -> None:
    """Print the table and summary line to the terminal (colours when it is one)."""
    from rich.console import Console
    from rich.markup import escape
    from rich.table import Table

    console = Console(stderr=False)
    table = Table(show_lines=False)
    table.add_column("requirement", no_wrap=True)
    table.add_column("level", no_wrap=True)
    table.add_column("verdict", no_wrap=True)
    table.add_column("why (failing scenario: expected / observed)", overflow="fold")
    for r in report.requirements:
        why = "" if r.verdict == "pass" else explanation(r)
        table.add_row(escape(r.id), escape(r.level), f"[{_STYLE.get(r.verdict, '')}]{r.verdict}[/]", escape(why))
    if table.row_count:
        console.print(table)
    for error in report.errors:
        console.print(f"[bold magenta]harness error:[/] {escape(error)}", highlight=False)
    style = "green" if report.exit_code == 0 else "red" if report.exit_code == 1 else "yellow"
    console.print(f"[{style}]{escape(summary_line(report))}[/]", highlight=False)
