"""``akc selftest``: run the suite against every mutant (each must be caught by the requirement
it breaks) and every legal variant (each must pass everything), and print the matrix.

Exit codes: 0 every mutant killed and every variant passing, 1 otherwise, 2 usage error.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Annotated

import typer


def register(app: typer.Typer) -> None:
    """Add the ``selftest`` command to the ``akc`` app."""

    @app.command("selftest")
    def selftest(
        json_path: Annotated[Path | None, typer.Option("--json", help="write the matrix as JSON here")] = None,
        scope: Annotated[str, typer.Option("--scope", help="what each mutant runs: target (its own requirement; default), area (+ its area and smoke) or full (the whole suite: shows every requirement it fails; slow)")] = "target",
        only: Annotated[list[str] | None, typer.Option("--only", help="only this mutant or variant (repeatable; see --list)")] = None,
        workers: Annotated[int | None, typer.Option("--workers", help="worker processes (default: twice the CPUs)")] = None,
        list_: Annotated[bool, typer.Option("--list", help="list the mutants and variants, run nothing")] = False,
        verbose: Annotated[bool, typer.Option("--verbose", "-v", help="describe each entry and what it ran")] = False,
    ) -> None:
        """Check the suite itself: every mutant killed, every legal variant passing."""
        from conformance.selftest.registry import entries
        from conformance.selftest.runner import render, run_selftest

        from conformance.journalkit.mutants import ENTRIES as JOURNAL_ENTRIES

        known = {e.name: e for e in entries()}
        if list_:
            for e in [*known.values(), *JOURNAL_ENTRIES.values()]:
                target = f"breaks {e.breaks}" if e.breaks else "must pass"
                typer.echo(f"{e.kind:<8} {e.name:<45} {target:<17} {e.spec}\n         {e.description}")
            return
        if scope not in ("target", "area", "full"):
            typer.echo(f"akc selftest: unknown --scope {scope!r} (use target, area or full)", err=True)
            raise typer.Exit(2)
        unknown = [n for n in only or [] if n not in known and n not in JOURNAL_ENTRIES]
        if unknown:
            typer.echo(f"akc selftest: unknown mutant or variant: {', '.join(unknown)} (see akc selftest --list)", err=True)
            raise typer.Exit(2)
        if workers is not None and workers < 1:
            typer.echo("akc selftest: --workers must be at least 1", err=True)
            raise typer.Exit(2)
        kernel_names = [n for n in only or [] if n in known]
        journal_names = [n for n in only or [] if n in JOURNAL_ENTRIES]
        matrix = None
        if not only or kernel_names:
            matrix = run_selftest(scope=scope, workers=workers, names=kernel_names or None)
            typer.echo(render(matrix, verbose=verbose))
        journal_ok = True
        if not only or journal_names:  # the journal kit's own mutants and variants (akc journal)
            from conformance.journalkit.selftest import render as render_journal
            from conformance.journalkit.selftest import run_journal_selftest

            rows = run_journal_selftest(journal_names or None)
            typer.echo(render_journal(rows))
            journal_ok = all(r.ok for r in rows)
        if json_path is not None and matrix is not None:
            try:
                json_path.write_text(json.dumps(matrix.to_json(), indent=2) + "\n", encoding="utf-8")
            except OSError as exc:
                typer.echo(f"akc selftest: cannot write {json_path}: {exc.strerror}", err=True)
                raise typer.Exit(2) from None
        raise typer.Exit(0 if (matrix is None or matrix.ok) and journal_ok else 1)
