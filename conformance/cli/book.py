"""``akc book DIR``: write the spec book, a static site of the catalog, the readings, the
scenarios, the properties and every kernel's verdicts (open ``DIR/index.html``).

The kernels are those of the committed matrix (``docs/conformance-matrix.json``, with
``docs/conformance-reports/<kernel>.json`` where committed); ``--report FILE`` adds a kernel from
a JSON report, ``--adapter SPEC`` certifies one now and adds its column.

Exit codes: 0 the book was written, 2 usage error (bad path, unreadable report or matrix, unknown
adapter), 3 a fresh run produced no report (nothing is written then).
"""

from __future__ import annotations

import time
from pathlib import Path
from typing import Annotated

import typer


def register(app: typer.Typer) -> None:
    """Add the ``book`` command to the ``akc`` app."""

    @app.command("book")
    def book(
        out: Annotated[Path, typer.Argument(help="folder to write the site into (created)")],
        adapter: Annotated[list[str] | None, typer.Option("--adapter", "-a", help="certify this adapter now and add its column (repeatable)")] = None,
        report: Annotated[list[Path] | None, typer.Option("--report", help="add a kernel from an akc JSON report (repeatable)")] = None,
        matrix: Annotated[Path | None, typer.Option("--matrix", help="the matrix JSON (default: the committed docs/conformance-matrix.json)")] = None,
        no_matrix: Annotated[bool, typer.Option("--no-matrix", help="leave the committed matrix's kernels out")] = False,
        timeout_cap: Annotated[float | None, typer.Option("--timeout-cap", help="fresh runs: cap every scenario's timeout (seconds)", hidden=True)] = None,
    ) -> None:
        """Write the spec book (a static site; open DIR/index.html in a browser)."""
        from conformance.book import data
        from conformance.book.render import build_site
        from conformance.errors import UsageError

        start = time.monotonic()
        if out.exists() and not out.is_dir():
            typer.echo(f"akc book: {out} exists and is not a folder", err=True)
            raise typer.Exit(2)
        extra = []
        try:
            for path in report or []:
                extra.append((data.load_report_file(path), ""))
            for spec in adapter or []:
                from conformance.harness.certify import SuiteOptions, run_suite

                typer.echo(f"akc book: certifying {spec} …", err=True)
                run = run_suite(SuiteOptions(adapter=spec, timeout_cap_s=timeout_cap))
                if run.report is None:
                    typer.echo(f"akc book: the run of {spec} produced no report; nothing written", err=True)
                    raise typer.Exit(3)
                extra.append((run.report.model_dump(mode="json"), spec))
            matrix_path = None if no_matrix else (matrix or data.MATRIX_JSON)
            if matrix is not None and not matrix.is_file():
                raise data.BookError(f"no such matrix file: {matrix}")
            the_book = data.gather(matrix_path=matrix_path, extra_reports=extra)
            written = build_site(the_book, out)
        except (data.BookError, UsageError) as exc:
            typer.echo(f"akc book: {exc}", err=True)
            raise typer.Exit(2) from None
        except OSError as exc:
            typer.echo(f"akc book: cannot write {out}: {exc.strerror or exc}", err=True)
            raise typer.Exit(2) from None
        pages = sum(1 for p in written if p.suffix == ".html")
        typer.echo(
            f"akc book: wrote {pages} pages ({len(the_book.kernels)} kernels) to {out} in {time.monotonic() - start:.1f} s; "
            f"open {(out / 'index.html').resolve().as_uri()}"
        )
        raise typer.Exit(0)
