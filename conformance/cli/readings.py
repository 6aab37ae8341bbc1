"""``akc readings [ID]``: the points the seeds leave open, their legal alternatives, and how the
suite handles each (accepts every alternative, holds the kernel to a declared one, or records a
decision). The data is ``conformance/catalog/readings.toml``; ``docs/readings.md`` explains it."""

from __future__ import annotations

import json
from typing import Annotated

import typer
from rich.console import Console
from rich.markup import escape
from rich.table import Table

from conformance.catalog.readings import Reading, load_readings
from conformance.catalog.requirements import CatalogError

EXIT_USAGE = 2
EXIT_HARNESS = 3


def _fail(message: str, code: int) -> None:
    typer.echo(f"akc: error: {message}", err=True)
    raise typer.Exit(code)


def _alternatives(row: Reading) -> str:
    return "; ".join(f"{a.id}{' (reference)' if a.reference else ''}" for a in row.alternatives) or "—"


def _show(row: Reading) -> str:
    lines = [
        f"{row.id}  {row.handling}",
        f"  title:        {row.title}",
        f"  requirements: {', '.join(row.requirements)}",
        f"  seeds:        {'; '.join(row.seeds)}",
        f"  summary:      {' '.join(row.summary.split())}",
    ]
    for alt in row.alternatives:
        lines.append(f"  alternative:  {alt.id}{' (reference kernel)' if alt.reference else ''}: {alt.text}")
    if row.declared_by:
        lines.append(f"  declared by:  {row.declared_by}")
    lines.append(f"  check:        {' '.join(row.check.split())}")
    if row.variants:
        lines.append(f"  variants:     {', '.join(row.variants)}")
    return "\n".join(lines)


def register(app: typer.Typer) -> None:
    @app.command("readings")
    def readings_cmd(
        reading_id: Annotated[str | None, typer.Argument(help="Show one reading in full.", show_default=False)] = None,
        as_json: Annotated[bool, typer.Option("--json", help="Print JSON instead of a table.")] = False,
    ) -> None:
        """List the open points of the seeds and how the suite reads them."""
        try:
            table = load_readings()
        except CatalogError as exc:
            _fail(str(exc), EXIT_HARNESS)
        rows = table.reading
        if reading_id is not None:
            row = table.get(reading_id)
            if row is None:
                _fail(f"unknown reading {reading_id!r} (see 'akc readings')", EXIT_USAGE)
            rows = [row]
        if as_json:
            typer.echo(json.dumps([r.model_dump(exclude_none=True) for r in rows], indent=2, ensure_ascii=False))
            return
        if reading_id is not None:
            typer.echo(_show(rows[0]))
            return
        out = Table(title=f"Readings of the seeds: {len(rows)} open points and decisions")
        for column in ("reading", "handling", "requirements", "alternatives"):
            out.add_column(column, overflow="fold")
        for r in rows:
            out.add_row(escape(r.id), r.handling, escape(", ".join(r.requirements)), escape(_alternatives(r)))
        Console().print(out)
