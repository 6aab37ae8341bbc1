"""The input dimensions of the requirements, as data (issue 21 §3).

For each testable requirement, ``dimensions/<area>.toml`` lists the dimensions its statement ranges
over and the values of each that matter (a category-partition test plan):

    [CONC-001]
    calls_per_response = ["2", "3+"]
    keys = ["equal", "distinct"]

One file per catalog area, so engineers working on different areas never touch the same file.
A scenario declares the cells it covers with ``@dim:<dimension>=<value>`` tags (on the scenario,
or on an Examples block of an outline); a property with ``@requirement(..., dims=["d=v"])``. A
cell belongs to the requirement ids the check carries. The gate (``tests/test_dimensions.py``)
fails on a listed cell with no check, on a cell a check names that no requirement of it lists, and
on a row for an id the catalog does not have; ``akc show ID`` prints the grid.
"""

from __future__ import annotations

import re
import tomllib
from dataclasses import dataclass
from pathlib import Path

from conformance.catalog.coverage import Check, Coverage
from conformance.catalog.requirements import ID_PATTERN, Catalog

DIMENSIONS_DIR = Path(__file__).resolve().parent / "dimensions"

#: A dimension name, and a value: a scenario tag carries both, so neither may hold whitespace.
DIMENSION_NAME = re.compile(r"^[a-z][a-z0-9_]*$")
DIMENSION_VALUE = re.compile(r"^[^\s@=]+$")
_REQ_ID = re.compile(ID_PATTERN)

#: requirement id -> dimension -> the values that matter, in the order the file lists them.
Table = dict[str, dict[str, list[str]]]


class DimensionError(Exception):
    """A dimensions file is not TOML or breaks the format (names the file and the row)."""


@dataclass(frozen=True)
class Cell:
    req_id: str
    dimension: str
    value: str

    def __str__(self) -> str:
        return f"{self.req_id} {self.dimension}={self.value}"


def parse_cell(text: str) -> tuple[str, str]:
    """``"dimension=value"`` (a property's ``dims`` entry, a tag without its ``dim:``) -> the pair."""
    dimension, sep, value = text.partition("=")
    if not sep or not DIMENSION_NAME.match(dimension) or not DIMENSION_VALUE.match(value):
        raise DimensionError(f"bad dimension cell {text!r} (expected dimension=value)")
    return dimension, value


def load_file(path: Path) -> Table:
    """One area's rows, checked: every id of the file's area, every value a non-empty list of
    distinct tag-safe strings."""
    where = path.name
    try:
        data = tomllib.loads(path.read_text(encoding="utf-8"))
    except (OSError, tomllib.TOMLDecodeError) as exc:
        raise DimensionError(f"{where}: {exc}") from exc
    area = path.stem.upper()
    table: Table = {}
    for req_id, dims in data.items():
        if not _REQ_ID.match(req_id) or req_id.split("-", 1)[0] != area:
            raise DimensionError(f"{where}: [{req_id}] is not a requirement id of area {area}")
        if not isinstance(dims, dict) or not dims:
            raise DimensionError(f"{where}: [{req_id}] must list at least one dimension")
        table[req_id] = {}
        for dimension, values in dims.items():
            at = f"{where}: [{req_id}] {dimension}"
            if not DIMENSION_NAME.match(dimension):
                raise DimensionError(f"{at}: a dimension name is lower_snake_case")
            if not isinstance(values, list) or not values or not all(isinstance(v, str) for v in values):
                raise DimensionError(f"{at}: expected a non-empty list of strings")
            bad = [v for v in values if not DIMENSION_VALUE.match(v)]
            if bad:
                raise DimensionError(f"{at}: value {bad[0]!r} cannot be a tag (no spaces, '@' or '=')")
            if len(set(values)) != len(values):
                raise DimensionError(f"{at}: a value is listed twice")
            table[req_id][dimension] = list(values)
    return table


def load_table(directory: Path | None = None) -> Table:
    """Every area file of ``directory`` (default ``DIMENSIONS_DIR``) merged; an id lives in its
    area's file only."""
    table: Table = {}
    for path in sorted((directory or DIMENSIONS_DIR).glob("*.toml")):
        table.update(load_file(path))
    return table


def cells(table: Table) -> list[Cell]:
    return [Cell(r, d, v) for r, dims in table.items() for d, values in dims.items() for v in values]


def check_cells(check: Check, table: Table) -> tuple[list[Cell], list[str]]:
    """The listed cells ``check`` covers, and the ``dimension=value`` it names that no requirement
    it carries lists (a typo, or a row missing from the table)."""
    covered, unlisted = [], []
    for text in check.dims:
        try:
            dimension, value = parse_cell(text)
        except DimensionError:
            unlisted.append(text)
            continue
        hits = [Cell(r, dimension, value) for r in check.ids if value in table.get(r, {}).get(dimension, ())]
        covered += hits
        if not hits:
            unlisted.append(text)
    return covered, unlisted


@dataclass
class Grid:
    """The table against the checks: who covers each cell, and what does not fit."""

    table: Table
    covering: dict[Cell, list[Check]]
    unlisted: list[tuple[Check, str]]

    def empty(self) -> list[Cell]:
        return [c for c in cells(self.table) if not self.covering.get(c)]

    def unknown_ids(self, catalog: Catalog) -> list[str]:
        known = {r.id for r in catalog.requirements}
        return sorted(set(self.table) - known)

    def untestable_rows(self, catalog: Catalog) -> list[str]:
        untestable = {r.id for r in catalog.requirements if r.testability == "untestable"}
        return sorted(set(self.table) & untestable)


def grid(coverage: Coverage, table: Table | None = None) -> Grid:
    table = load_table() if table is None else table
    covering: dict[Cell, list[Check]] = {c: [] for c in cells(table)}
    unlisted = []
    for check in coverage.checks:
        covered, bad = check_cells(check, table)
        for cell in covered:
            covering[cell].append(check)
        unlisted += [(check, b) for b in bad]
    return Grid(table, covering, unlisted)
