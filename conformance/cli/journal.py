"""``akc journal``: certify a Journal implementation on its own (001's six methods), without a
kernel: the kit's requirements (conformance/catalog/journal.toml, profile ``journal``) as
scenarios and Hypothesis properties (docs/journal-kit.md).

Exit codes as ``akc run``: 0 conformant, 1 a requirement failed, 2 usage error (bad adapter spec,
requirement id or expectations file; no Postgres DSN for ``postgres``), 3 blocked or incomplete
(or the journal could not be opened at all).
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Annotated

import typer


def register(app: typer.Typer) -> None:
    """Add the ``journal`` command to the ``akc`` app."""

    @app.command("journal")
    def journal(
        adapter: Annotated[str, typer.Option("--adapter", "-a", help="memory | sqlite | postgres | pkg.module:factory (an async factory(store) -> journal) | stdio:CMD (docs/protocol.md)")] = "memory",
        dsn: Annotated[str | None, typer.Option("--dsn", help="the Postgres server of the postgres journal (default: $AKC_JOURNAL_DSN)")] = None,
        req: Annotated[list[str] | None, typer.Option("--req", help="only this requirement (repeatable)")] = None,
        json_path: Annotated[Path | None, typer.Option("--json", help="write the report as JSON here")] = None,
        junit_path: Annotated[Path | None, typer.Option("--junit", help="write the report as JUnit XML here")] = None,
        markdown_path: Annotated[Path | None, typer.Option("--markdown", help="write the report as Markdown here")] = None,
        expect: Annotated[Path | None, typer.Option("--expect", help="expected failures (TOML, docs/ci.md)")] = None,
        write_expectations: Annotated[Path | None, typer.Option("--write-expectations", help="record this run's non-passing requirements here")] = None,
        kills: Annotated[int, typer.Option("--kills", help="writer processes killed by the durability check (JKIT-009)")] = 3,
        examples: Annotated[float, typer.Option("--examples", help="scale the Hypothesis examples of every property (1: the default counts)")] = 1.0,
        timeout: Annotated[float, typer.Option("--timeout", help="seconds a journal call may take before it counts as hung")] = 30.0,
        all_rows: Annotated[bool, typer.Option("--all", help="show passing requirements too")] = False,
    ) -> None:
        """Certify a Journal implementation (001's trait) on its own."""
        from conformance.errors import UsageError
        from conformance.journalkit.adapters import DSN_ENV
        from conformance.journalkit.requirements import journal_rows
        from conformance.journalkit.runner import JournalUnavailable, run_kit
        from conformance.report import expectations as exp
        from conformance.report.escape import terminal
        from conformance.report.terminal import print_report
        from conformance.report.writers import write_failed, write_reports

        if kills < 1 or examples <= 0 or timeout <= 0:
            typer.echo("akc journal: --kills must be at least 1, --examples and --timeout above 0", err=True)
            raise typer.Exit(2)
        if dsn:
            os.environ[DSN_ENV] = dsn  # the writer processes of the durability check read it too
        try:
            previous = exp.load(expect, [r.id for r in journal_rows()]) if expect else None
            report = run_kit(adapter, reqs=list(req) if req else None, timeout_s=timeout, examples_scale=examples, kills=kills)
        except UsageError as exc:
            typer.echo(f"akc journal: {terminal(str(exc))}", err=True)
            raise typer.Exit(2) from None
        except JournalUnavailable as exc:
            typer.echo(f"akc journal: {terminal(str(exc))}", err=True)
            raise typer.Exit(3) from None
        if previous is not None:
            report = exp.apply(report, previous)
        write_reports(report, json_path=str(json_path) if json_path else None, junit_path=str(junit_path) if junit_path else None,
                      markdown_path=str(markdown_path) if markdown_path else None,
                      expectations_path=str(write_expectations) if write_expectations else None, previous=previous)
        print_report(report, all_rows=all_rows)
        if write_expectations and not write_failed(report, "--write-expectations"):
            typer.echo(f"wrote the expectations of this run to {write_expectations}")
        raise typer.Exit(report.exit_code)
