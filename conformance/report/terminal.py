"""The report in the terminal: what does not pass first, identical errors collapsed, a legend,
the summary line and where to look next.

In a terminal the rows are a rich table with colours; anywhere else (a CI log, a pipe) they are
plain lines that never wrap, so a log reads the same at any width.
"""

from __future__ import annotations

import re
import sys
from dataclasses import dataclass
from typing import TextIO

from conformance.report.escape import terminal as _safe
from conformance.report.model import Report, RequirementResult, explanation, failing_check, summary_line

_STYLE = {
    "pass": "green",
    "fail": "bold red",
    "error": "bold magenta",
    "blocked": "cyan",
    "incomplete": "yellow",
    "not-offered": "dim",
    "not-applicable": "dim",
}
#: A group of rows with the same message at least this large is shown once.
COLLAPSE_AT = 3

LEGEND = (
    "legend: MUST/MUST NOT and gating DESCRIBED fail the run, SHOULD/MAY only with --strict; "
    "error = adapter or harness broke; blocked = another requirement's failure kept its check from judging it "
    "(fix that one first); incomplete = could not run; not-offered = capability not declared; "
    "not-applicable = a MUST NOT about something the kernel does not have; untestable = no verdict"
)
NEXT = "next: `akc show ID` explains a requirement and lists its checks; `--json FILE` keeps every message and trace"


@dataclass
class Row:
    verdict: str  # as shown ("fail", "fail (expected)"...)
    style: str
    level: str
    ids: str
    why: str


def _order(r: RequirementResult) -> int:
    if r.expected:
        return 5
    if r.verdict == "fail":
        return 0 if r.gating else 3
    return {"error": 1, "incomplete": 2, "blocked": 4, "not-offered": 6, "not-applicable": 6, "pass": 7}.get(r.verdict, 4)


def _key(r: RequirementResult) -> str:
    """What makes two bad rows "the same error": the message, without the scenario or step."""
    if r.verdict == "blocked" and r.message:
        return r.message
    check = failing_check(r) if r.verdict not in ("not-offered", "not-applicable") else None
    message = (check.message if check is not None and check.outcome != "pass" else None) or r.message or r.verdict
    return _safe(re.sub(r" \(at step: .*\)$", "", message))


def _label(r: RequirementResult) -> str:
    return f"{r.verdict} (expected)" if r.expected else r.verdict


def _ids(ids: list[str], limit: int = 12) -> str:
    return ", ".join(ids) if len(ids) <= limit else ", ".join(ids[:limit]) + f", … ({len(ids)} in all)"


def rows(report: Report, *, all_rows: bool = False) -> tuple[list[Row], int]:
    """The rows to show and the number of passing requirements left out."""
    shown = sorted(
        (r for r in report.requirements if all_rows or r.verdict != "pass"),
        key=_order,
    )
    hidden = 0 if all_rows else sum(1 for r in report.requirements if r.verdict == "pass")
    groups: dict[tuple[str, str, bool], list[RequirementResult]] = {}
    for r in shown:
        if r.verdict in ("pass",):
            continue
        groups.setdefault((r.verdict, _key(r), r.expected), []).append(r)
    out: list[Row] = []
    done: set[tuple[str, str, bool]] = set()
    for r in shown:
        key = (r.verdict, _key(r), r.expected)
        group = groups.get(key, [r])
        style = "dim" if r.expected else _STYLE.get(r.verdict, "")
        if len(group) >= COLLAPSE_AT:
            if key in done:
                continue
            done.add(key)
            kind = "failure" if r.verdict == "fail" else "reason"
            if r.verdict == "error":
                kind = "adapter error"
            levels = sorted({g.level for g in group})
            out.append(Row(_label(r), style, "/".join(levels),
                           _ids([g.id for g in group]), f"the same {kind} in {len(group)} requirements: {key[1]}"))
            continue
        out.append(Row(_label(r), style, r.level, r.id, "" if r.verdict == "pass" else _safe(explanation(r))))
    return out, hidden


def _tail(report: Report, hidden: int) -> list[str]:
    lines = []
    if hidden:
        lines.append(f"{hidden} passing requirement{'s' if hidden != 1 else ''} not shown (--all shows every row)")
    if report.untestable:
        lines.append(f"untestable (no verdict): {_ids([u.id for u in report.untestable])}")
    for error in report.errors:
        lines.append(f"harness error: {error}")
    exp = report.expectations
    if exp is not None:
        lines.append(f"expectations {exp.file}: {len(exp.expected)} expected, {len(exp.unexpected)} new, "
                     f"{len(exp.changed)} changed, {len(exp.stale)} stale")
        for item in exp.unexpected:
            lines.append(f"  new: {item}")
        for item in exp.changed:
            lines.append(f"  changed: {item}")
        for item in exp.stale:
            lines.append(f"  stale (now {item.split(': ', 1)[1]}; delete the entry or run --write-expectations): {item.split(':')[0]}")
        if exp.not_run:
            lines.append(f"  not checked in this run (other profile, --req or --smoke): {_ids(exp.not_run)}")
        if exp.catalog_version and report.suite.catalog_version and exp.catalog_version != report.suite.catalog_version:
            lines.append(f"  written for catalog {exp.catalog_version}; this suite's catalog is {report.suite.catalog_version}")
    return [_safe(line) for line in lines]


def render_text(report: Report, *, all_rows: bool = False) -> str:
    """The plain view: one line per row, columns aligned, never wrapped."""
    shown, hidden = rows(report, all_rows=all_rows)
    lines = []
    if shown:
        w_verdict = max(len(r.verdict) for r in shown)
        w_level = max(len(r.level) for r in shown)
        for r in shown:
            if len(r.ids) > 10:  # a collapsed group: the ids on their own line
                lines.append(f"{r.verdict:<{w_verdict}}  {r.level:<{w_level}}  {r.why}")
                lines.append(f"{'':<{w_verdict}}  {'':<{w_level}}  in: {r.ids}")
            else:
                lines.append(f"{r.verdict:<{w_verdict}}  {r.level:<{w_level}}  {r.ids:<10} {r.why}".rstrip())
    lines += _tail(report, hidden)
    lines += [LEGEND, _safe(summary_line(report)), NEXT]
    return "\n".join(lines) + "\n"


def render_table(report: Report, *, all_rows: bool = False, **_: object) -> str:
    """The plain view (kept under this name for the pytest plugin's terminal summary)."""
    return render_text(report, all_rows=all_rows)


def print_report(report: Report, *, all_rows: bool = False, file: TextIO | None = None, verbose: bool = False) -> None:
    """Print the report: a coloured table in a terminal, plain lines anywhere else."""
    out = file or sys.stdout
    if not out.isatty():
        out.write(render_text(report, all_rows=all_rows))
        out.flush()
        return
    from rich.console import Console
    from rich.markup import escape
    from rich.table import Table

    console = Console(file=out)
    shown, hidden = rows(report, all_rows=all_rows)
    if shown:
        table = Table(show_lines=False, box=None, pad_edge=False)
        table.add_column("verdict", no_wrap=True)
        table.add_column("level", no_wrap=True)
        table.add_column("requirement", overflow="fold", max_width=40)
        table.add_column("why (failing scenario: expected / observed)", overflow="fold")
        for r in shown:
            table.add_row(f"[{r.style}]{escape(r.verdict)}[/]" if r.style else escape(r.verdict), escape(r.level), escape(r.ids), escape(r.why))
        console.print(table)
    for line in _tail(report, hidden):
        console.print(escape(line), highlight=False)
    console.print(f"[dim]{escape(LEGEND)}[/]", highlight=False)
    style = "green" if report.exit_code == 0 else "red" if report.exit_code == 1 else "yellow"
    console.print(f"[{style}]{escape(_safe(summary_line(report)))}[/]", highlight=False)
    console.print(escape(NEXT), highlight=False)
