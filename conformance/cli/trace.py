"""``akc trace diff A B``: compare two canonical traces, or two folders written by
``akc run --traces DIR``. Exit 0 when equivalent, 1 when a scenario differs or is missing on one
side, 2 for a usage error (no such path, not a trace)."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer


def register(app: typer.Typer) -> None:
    """Add the ``trace`` sub-app (``akc trace diff``) to the ``akc`` app."""
    trace_app = typer.Typer(help="Canonical traces: compare how two kernels behaved.", no_args_is_help=True)

    @trace_app.command("diff")
    def diff(
        a: Annotated[Path, typer.Argument(help="a trace file, or a folder of traces (akc run --traces)")],
        b: Annotated[Path, typer.Argument(help="the trace file or folder to compare with")],
        json_out: Annotated[bool, typer.Option("--json", help="print the result as JSON (for machines)")] = False,
        context: Annotated[int, typer.Option("--context", min=0, max=50, help="events of context around a divergence")] = 3,
        html: Annotated[Path | None, typer.Option("--html", help="also write the diff as an HTML page, side by side (conformance.book)")] = None,
        only: Annotated[str | None, typer.Option("--only", help="compare only these parts, e.g. outcome,hooks,tools,messages (also usage, spans, notes)")] = None,
        ignore: Annotated[str | None, typer.Option("--ignore", help="leave these parts out, e.g. spans,attributes (attributes: span attributes only)")] = None,
        all_spots: Annotated[bool, typer.Option("--all", help="list every divergence of a scenario, not only the first")] = False,
    ) -> None:
        """Show, for each scenario whose traces differ, the first divergence side by side, then a
        summary of the divergences grouped by kind."""
        from conformance.errors import UsageError
        from conformance.trace.diff import Selection, diff_paths, parse_categories, print_diff, to_json

        try:
            selection = Selection(only=parse_categories(only, "--only"), ignore=parse_categories(ignore, "--ignore"))
            result = diff_paths(a, b, context=context, selection=selection)
            if html is not None:
                from conformance.book.render import write_diff_html

                write_diff_html(result, html)
        except UsageError as exc:
            typer.echo(f"akc trace diff: {exc}", err=True)
            raise typer.Exit(2) from None
        if json_out:
            typer.echo(to_json(result), nl=False)
        else:
            print_diff(result, all_spots=all_spots)
        raise typer.Exit(result.exit_code)

    app.add_typer(trace_app, name="trace")
