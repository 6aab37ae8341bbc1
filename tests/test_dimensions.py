"""The dimension table (``conformance/catalog/dimensions/``): every listed cell has a check, every
cell a check names is listed for one of its requirements, every row names a testable requirement
of the catalog; and the loader and ``akc show`` on synthetic tables."""

from __future__ import annotations

from pathlib import Path

import pytest
from typer.testing import CliRunner

from conformance import cli
from conformance.catalog import coverage, dimensions
from conformance.catalog.coverage import Check, Coverage
from conformance.catalog.dimensions import DimensionError, load_file
from conformance.catalog.requirements import load_catalog


@pytest.fixture(scope="module")
def real() -> dimensions.Grid:
    return dimensions.grid(coverage.collect())


def test_every_row_names_a_testable_requirement(real: dimensions.Grid) -> None:
    catalog = load_catalog()
    assert not real.unknown_ids(catalog), f"unknown requirement ids: {real.unknown_ids(catalog)}"
    assert not real.untestable_rows(catalog), f"untestable requirements: {real.untestable_rows(catalog)}"


def test_every_cell_a_check_names_is_listed(real: dimensions.Grid) -> None:
    bad = [f"{c.where}: {c.name!r} ({', '.join(c.ids)}) names {cell}" for c, cell in real.unlisted]
    assert not bad, "\n".join(bad)


def test_every_listed_cell_has_a_check(real: dimensions.Grid) -> None:
    empty = [str(cell) for cell in real.empty()]
    assert not empty, "cells with no scenario or property: " + "; ".join(empty)


# --------------------------------------------------------------------------- the machinery


def _write(tmp_path: Path, name: str, text: str) -> Path:
    path = tmp_path / name
    path.write_text(text, encoding="utf-8")
    return path


def test_load_file_reads_rows_in_order(tmp_path: Path) -> None:
    path = _write(tmp_path, "conc.toml", '[CONC-001]\ncalls_per_response = ["2", "3+"]\nkeys = ["equal", "distinct"]\n')
    assert load_file(path) == {"CONC-001": {"calls_per_response": ["2", "3+"], "keys": ["equal", "distinct"]}}


@pytest.mark.parametrize(
    "text, fragment",
    [
        ('[LOOP-001]\nx = ["a"]\n', "not a requirement id of area CONC"),
        ('[CONC-001]\nx = []\n', "non-empty list"),
        ('[CONC-001]\nx = ["a b"]\n', "cannot be a tag"),
        ('[CONC-001]\nx = ["a", "a"]\n', "listed twice"),
        ('[CONC-001]\nBad-Name = ["a"]\n', "lower_snake_case"),
        ("[CONC-001]\n", "at least one dimension"),
        ("[CONC-001\n", "conc.toml"),
    ],
)
def test_load_file_rejects_a_bad_row_naming_it(tmp_path: Path, text: str, fragment: str) -> None:
    with pytest.raises(DimensionError, match="conc.toml") as info:
        load_file(_write(tmp_path, "conc.toml", text))
    assert fragment in str(info.value)


def _check(name: str, ids: tuple[str, ...], dims: tuple[str, ...]) -> Check:
    return Check("scenario", "conc.feature", name, ids, ("kernel",), dims)


def test_grid_finds_empty_cells_unlisted_cells_and_unknown_rows() -> None:
    table = {"CONC-001": {"keys": ["equal", "distinct"]}, "CONC-999": {"n": ["1"]}}
    checks = [
        _check("a", ("CONC-001", "CONC-002"), ("keys=equal",)),  # covers CONC-001 only
        _check("b", ("CONC-002",), ("keys=distinct",)),  # the cell is not CONC-002's
        _check("c", ("CONC-001",), ("keys=one", "malformed")),
    ]
    grid = dimensions.grid(Coverage(checks), table)
    assert [str(c) for c in grid.empty()] == ["CONC-001 keys=distinct", "CONC-999 n=1"]
    assert [(c.name, cell) for c, cell in grid.unlisted] == [("b", "keys=distinct"), ("c", "keys=one"), ("c", "malformed")]
    assert grid.unknown_ids(load_catalog()) == ["CONC-999"]
    assert [c.name for c in grid.covering[dimensions.Cell("CONC-001", "keys", "equal")]] == ["a"]


def test_dimension_tags_and_property_dims_reach_the_checks() -> None:
    """A scenario's @dim: tags and a property's dims= are read into Check.dims."""
    from conformance.suite.properties import requirement

    @requirement("CONC-001", profile="kernel", dims=["keys=equal"])
    def test_x() -> None: ...

    (mark,) = test_x.pytestmark
    assert mark.kwargs["dims"] == ["keys=equal"]
    tagged = [c for c in coverage.scenario_checks() if c.dims]
    assert all(not d.startswith("dim:") for c in tagged for d in c.dims)


def test_show_prints_the_grid(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    _write(tmp_path, "conc.toml", '[CONC-001]\nkeys_probe = ["equal", "never-tagged"]\n')
    monkeypatch.setattr(dimensions, "DIMENSIONS_DIR", tmp_path)
    fake = [_check("the scenario", ("CONC-001",), ("keys_probe=equal",))]
    monkeypatch.setattr(coverage, "collect", lambda: Coverage(fake, {"CONC-001": fake}))
    if not any(c.name == "show" for c in cli.app.registered_commands):
        cli._register()
    result = CliRunner(env={"COLUMNS": "200"}).invoke(cli.app, ["show", "CONC-001"])
    assert result.exit_code == 0, result.output
    out = result.stdout
    assert "dimensions:" in out and "keys_probe" in out
    assert "equal" in out and "the scenario" in out
    assert "never-tagged" in out and "NO CHECK" in out
