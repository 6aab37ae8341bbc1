"""``akc matrix``: certify every registered kernel (``conformance.adapters.KERNELS``), each in its
own environment, and write the requirement × kernel matrix (Markdown and JSON).

Exit codes: 0 the matrix was written (whatever the verdicts: it is a comparison, not a gate),
2 usage error (unknown kernel name), 3 with ``--require-all`` when a kernel was not installed or
its run broke.
"""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer


def register(app: typer.Typer) -> None:
    """Add the ``matrix`` command to the ``akc`` app."""

    @app.command("matrix")
    def matrix(
        kernel: Annotated[list[str] | None, typer.Option("--kernel", "-k", help="only this kernel (repeatable; default: every registered one)")] = None,
        md_path: Annotated[Path | None, typer.Option("--markdown", help="Markdown output (default docs/conformance-matrix.md)")] = None,
        json_path: Annotated[Path | None, typer.Option("--json", help="JSON output (default docs/conformance-matrix.json)")] = None,
        smoke: Annotated[bool, typer.Option("--smoke", help="only the @smoke scenarios (an adapter check; do not commit that matrix)")] = False,
        timeout_cap: Annotated[float | None, typer.Option("--timeout-cap", help="cap every scenario's timeout (seconds; default: each scenario's own)")] = None,
        require_all: Annotated[bool, typer.Option("--require-all", help="exit 3 when a kernel is not installed or its run broke")] = False,
        jobs: Annotated[int, typer.Option("--jobs", "-j", help="kernels run side by side (default 1)")] = 1,
        reports_dir: Annotated[Path | None, typer.Option("--reports", help="per-kernel JSON reports (default docs/conformance-reports/)")] = None,
        list_only: Annotated[bool, typer.Option("--list", help="list the registered kernels and where their environments are, then stop")] = False,
        from_reports: Annotated[bool, typer.Option("--from-reports", help="run nothing: rebuild the matrix from the committed per-kernel reports (after editing conformance/catalog/fail_causes.toml)")] = False,
        keep_others: Annotated[bool, typer.Option("--keep-others", help="with --kernel: keep every other kernel's column from its committed report")] = False,
    ) -> None:
        """Run every registered kernel's suite in its own environment; write the conformance matrix."""
        from conformance.report import matrix as m
        from conformance.adapters import KERNELS

        names = [k.name for k in KERNELS]
        unknown = [n for n in (kernel or []) if n not in names]
        if unknown:
            typer.echo(f"akc matrix: unknown kernel(s) {', '.join(unknown)} (registered: {', '.join(names)})", err=True)
            raise typer.Exit(2)
        chosen = [k for k in KERNELS if not kernel or k.name in kernel]
        if list_only:
            for k in chosen:
                typer.echo(f"{k.name:16} {k.adapter:48} {k.python() or 'not installed'}")
            raise typer.Exit(0)

        def progress(column: m.Column) -> None:
            if column.report is not None:
                counts = ", ".join(f"{column.report.summary.get(v, 0)} {v}" for v in m.VERDICTS)
                typer.echo(f"akc matrix: {column.name}: {counts} ({column.duration_s:.0f} s)", err=True)
            else:
                typer.echo(f"akc matrix: {column.name}: {column.status}: {column.note}", err=True)

        if jobs < 1:
            typer.echo("akc matrix: --jobs must be at least 1", err=True)
            raise typer.Exit(2)
        runner = m.Committed(reports_dir or m.DEFAULT_REPORTS) if from_reports else m.Runner(smoke=smoke, timeout_cap_s=timeout_cap)
        columns = m.run_matrix(chosen, runner, on_column=progress, jobs=jobs)
        written = m.write_reports(columns, reports_dir or m.DEFAULT_REPORTS)
        if keep_others:  # the other kernels' columns as their committed reports say, in table order
            ran = {c.name: c for c in columns}
            kept = (ran.get(k.name) or m.committed_column(k, reports_dir or m.DEFAULT_REPORTS) for k in KERNELS)
            columns = [c for c in kept if c is not None]
        written += m.write(m.build(columns), md_path or m.DEFAULT_MD, json_path or m.DEFAULT_JSON)
        typer.echo("akc matrix: wrote " + ", ".join(str(p) for p in written))
        if require_all and any(c.status != m.OK for c in columns):
            raise typer.Exit(3)
        raise typer.Exit(0)
