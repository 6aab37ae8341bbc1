"""``akc list``, ``akc show`` and ``akc schemas``: read the catalog and keep the schemas current.

Usage errors (unknown id, profile or level) are one line on stderr and exit code 2; a catalog that
fails to load is a harness error, exit code 3. Neither prints a traceback.
"""

from __future__ import annotations

import json
from typing import Annotated, NoReturn

import typer
from rich.console import Console
from rich.table import Table

from conformance.catalog.requirements import (
    LEVELS,
    PROFILES,
    Catalog,
    CatalogError,
    Requirement,
    UnknownRequirement,
    load_catalog,
)

EXIT_STALE = 1
EXIT_USAGE = 2
EXIT_HARNESS = 3


def _fail(message: str, code: int = EXIT_USAGE) -> NoReturn:
    typer.echo(f"akc: error: {message}", err=True)
    raise typer.Exit(code)


def _catalog() -> Catalog:
    try:
        return load_catalog()
    except CatalogError as exc:
        _fail(str(exc), EXIT_HARNESS)


def _level(value: str) -> str:
    """Accept ``MUST NOT``, ``must-not``, ``MUST_NOT``... for the level ``MUST NOT``."""
    norm = value.strip().upper().replace("_", " ").replace("-", " ")
    norm = " ".join(norm.split())
    if norm not in LEVELS:
        _fail(f"unknown level {value!r} (expected one of: {', '.join(LEVELS)})")
    return norm


def _profile(value: str) -> str:
    if value not in PROFILES:
        _fail(f"unknown profile {value!r} (expected one of: {', '.join(PROFILES)})")
    return value


def _as_json(obj: object) -> str:
    return json.dumps(obj, indent=2, ensure_ascii=False)


def list_requirements(
    profile: Annotated[
        str | None, typer.Option("--profile", help="kernel or commonagent.")
    ] = None,
    level: Annotated[
        str | None,
        typer.Option("--level", help="MUST, 'MUST NOT' (or must-not), SHOULD, MAY, DESCRIBED."),
    ] = None,
    as_json: Annotated[
        bool, typer.Option("--json", help="Print the catalog as JSON (all fields).")
    ] = False,
) -> None:
    """List the requirements of the catalog."""
    catalog = _catalog()
    reqs = catalog.requirements
    if profile is not None:
        reqs = catalog.for_profile(_profile(profile))
    if level is not None:
        wanted = _level(level)
        reqs = [r for r in reqs if r.level == wanted]
    if as_json:
        data = {
            "version": catalog.version,
            "requirements": [r.model_dump(mode="json") for r in reqs],
        }
        typer.echo(_as_json(data))
        return
    table = Table(title=f"Requirement catalog {catalog.version}: {len(reqs)} requirements")
    table.add_column("id", no_wrap=True)
    table.add_column("level", no_wrap=True)
    table.add_column("profiles")
    table.add_column("statement")
    for r in reqs:
        level_text = r.level + ("" if r.gating or r.level != "DESCRIBED" else " (advisory)")
        table.add_row(r.id, level_text, ", ".join(r.profiles), r.statement)
    Console(soft_wrap=False).print(table)


def show(
    req_id: Annotated[str, typer.Argument(metavar="ID", help="Requirement id, e.g. BOUND-009.")],
    as_json: Annotated[bool, typer.Option("--json", help="Print the requirement as JSON.")] = False,
) -> None:
    """Show one requirement with its source."""
    catalog = _catalog()
    try:
        req = catalog.get(req_id)
    except UnknownRequirement as exc:
        _fail(str(exc))
    checks = _checks_of(req.id)
    grid = _grid_of(req.id, checks)
    if as_json:
        data = req.model_dump(mode="json")
        data["checked_by"] = [{"kind": c.kind, "where": c.where, "name": c.name, "profiles": list(c.profiles)} for c in checks]
        data["dimensions"] = {
            dim: {value: [{"kind": c.kind, "where": c.where, "name": c.name} for c in covering] for value, covering in values.items()}
            for dim, values in grid.items()
        }
        typer.echo(_as_json(data))
        return
    typer.echo(_describe(req, checks))
    if grid:
        typer.echo(_describe_grid(grid))


def _checks_of(req_id: str) -> list:
    """The scenarios and properties tagged with this requirement (read from the feature files
    and property modules, no kernel needed)."""
    from conformance.catalog.coverage import collect

    try:
        return collect().by_requirement.get(req_id, [])
    except Exception as exc:  # noqa: BLE001 - a broken feature file must not hide the requirement
        typer.echo(f"akc: warning: cannot read the checks ({type(exc).__name__}: {exc})", err=True)
        return []


def _grid_of(req_id: str, checks: list) -> dict[str, dict[str, list]]:
    """The requirement's input dimensions (``conformance/catalog/dimensions/``): each value with
    the checks covering it."""
    from conformance.catalog.coverage import Coverage
    from conformance.catalog.dimensions import DimensionError, check_cells, load_table

    try:
        table = load_table()
    except DimensionError as exc:
        _fail(str(exc), EXIT_HARNESS)
    dims = table.get(req_id, {})
    out: dict[str, dict[str, list]] = {d: {v: [] for v in values} for d, values in dims.items()}
    for check in Coverage(checks).checks:
        for cell in check_cells(check, {req_id: dims})[0]:
            out[cell.dimension][cell.value].append(check)
    return out


def _describe_grid(grid: dict[str, dict[str, list]]) -> str:
    lines = ["  dimensions:"]
    for dim, values in grid.items():
        lines.append(f"    {dim}")
        width = max(len(v) for v in values) + 2
        for value, covering in values.items():
            if not covering:
                lines.append(f"      {value:<{width}}NO CHECK")
            for i, c in enumerate(covering):
                lines.append(f"      {value if i == 0 else '':<{width}}{c.kind:<9} {c.where} / {c.name}")
    return "\n".join(lines)


def _describe(req: Requirement, checks: list | None = None) -> str:
    lines = [
        f"{req.id}  {req.level}{'  (gating)' if req.gating else ''}",
        f"  statement:    {req.statement}",
        f"  profiles:     {', '.join(req.profiles)}",
        f"  source:       {req.source.file}, section \u201c{req.source.section}\u201d",
        f"  testability:  {req.testability}",
    ]
    if req.untestable_reason:
        lines.append(f"  why:          {req.untestable_reason}")
    if req.required_capabilities:
        lines.append(f"  capability:   {', '.join(req.required_capabilities)}")
    if req.conflicts_with:
        lines.append(f"  conflicts:    {', '.join(req.conflicts_with)}")
    if req.notes:
        lines.append(f"  notes:        {req.notes}")
    if checks is not None:
        if checks:
            lines.append(f"  checked by:   {len(checks)} check{'s' if len(checks) != 1 else ''}")
            for c in checks:
                lines.append(f"    {c.kind:<9} {c.where} / {c.name}  [{', '.join(c.profiles)}]")
        elif req.testability == "black-box":
            lines.append("  checked by:   no check yet")
    return "\n".join(lines)


def schemas(
    write: Annotated[bool, typer.Option("--write", help="Regenerate schemas/*.json.")] = False,
    check: Annotated[
        bool, typer.Option("--check", help="Exit 1 when a checked-in schema is stale or missing.")
    ] = False,
) -> None:
    """Generate the JSON Schemas of the catalog and the adapter boundary (draft 2020-12)."""
    from conformance.cli import schemagen  # imports every boundary model: only when asked for

    if write and check:
        _fail("--write and --check exclude each other")
    try:
        if write:
            changed = schemagen.write()
            for path in changed:
                typer.echo(f"wrote {path}")
            if not changed:
                typer.echo("schemas up to date")
            return
        out_of_date = schemagen.stale()
    except (OSError, CatalogError) as exc:
        _fail(str(exc), EXIT_HARNESS)
    if check:
        for name in out_of_date:
            typer.echo(f"stale: schemas/{name} (run `akc schemas --write`)", err=True)
        if out_of_date:
            raise typer.Exit(EXIT_STALE)
        typer.echo(f"{len(schemagen.SCHEMAS)} schemas up to date")
        return
    for name in schemagen.SCHEMAS:
        state = "stale" if name in out_of_date else "ok"
        typer.echo(f"{name:28} {schemagen.model_name(name):14} {state}")


def register(app: typer.Typer) -> None:
    """Add ``list``, ``show`` and ``schemas`` to the ``akc`` app."""
    app.command("list")(list_requirements)
    app.command("show")(show)
    app.command("schemas")(schemas)
