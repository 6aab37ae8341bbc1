"""The report in the terminal: a rich table of requirements and the summary line."""

from __future__ import annotations

import os

from conformance.report.model import Report, explanation, summary_line

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
