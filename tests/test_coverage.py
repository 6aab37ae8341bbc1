"""The coverage gate: every gating requirement that can be observed has a check in its profile,
and no check names a requirement the catalog does not have."""

import pytest

from conformance.catalog import coverage
from conformance.catalog.requirements import load_catalog


@pytest.fixture(scope="module")
def cov() -> coverage.Coverage:
    return coverage.collect()


def test_checks_exist(cov: coverage.Coverage) -> None:
    assert any(c.kind == "scenario" for c in cov.checks)
    assert any(c.kind == "property" for c in cov.checks)


def test_every_check_names_known_requirements(cov: coverage.Coverage) -> None:
    unknown = cov.unknown_ids(load_catalog())
    assert not unknown, [f"{c.where}: {c.name!r} names {i}" for c, i in unknown]


def test_every_check_names_a_requirement(cov: coverage.Coverage) -> None:
    untagged = [f"{c.where}: {c.name!r}" for c in cov.checks if not c.ids]
    assert not untagged


@pytest.mark.parametrize("profile", coverage.PROFILES)
def test_every_gating_requirement_has_a_check(cov: coverage.Coverage, profile: str) -> None:
    missing = cov.uncovered(load_catalog(), profile)
    assert not missing, f"{profile}: no check for {', '.join(missing)}"


def test_untestable_requirements_have_no_checks(cov: coverage.Coverage) -> None:
    untestable = {r.id for r in load_catalog().requirements if r.testability == "untestable"}
    claimed = sorted(untestable & set(cov.by_requirement))
    assert not claimed, f"checks claim untestable requirements: {claimed}"
