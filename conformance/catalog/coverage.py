"""Which checks claim which requirements, read statically from the feature files and the
property modules (no kernel needed): the basis of the coverage gate and of ``akc coverage``."""

from __future__ import annotations

import importlib
import pkgutil
import re
from collections import defaultdict
from dataclasses import dataclass, field

from pytest_bdd.parser import FeatureParser

from conformance.catalog.requirements import Catalog, load_catalog
from conformance.paths import features_dir

REQ_ID = re.compile(r"^[A-Z]+-\d{3}$")
#: A scenario tag ``@dim:<dimension>=<value>`` names an input-dimension cell it covers.
DIM_TAG = "dim:"
PROFILES = ("kernel", "commonagent")


@dataclass(frozen=True)
class Check:
    """One scenario or property, with the requirement ids and profiles it is tagged with."""

    kind: str  # "scenario" | "property"
    where: str  # feature file or module
    name: str
    ids: tuple[str, ...]
    profiles: tuple[str, ...]
    #: The input-dimension cells it covers, ``"dimension=value"`` (``conformance/catalog/dimensions.py``).
    dims: tuple[str, ...] = ()


@dataclass
class Coverage:
    checks: list[Check]
    by_requirement: dict[str, list[Check]] = field(default_factory=dict)

    def unknown_ids(self, catalog: Catalog) -> list[tuple[Check, str]]:
        known = {r.id for r in catalog.requirements}
        return [(c, i) for c in self.checks for i in c.ids if i not in known]

    def uncovered(self, catalog: Catalog, profile: str, gating_only: bool = True) -> list[str]:
        """Black-box requirements of ``profile`` with no check in that profile."""
        missing = []
        for req in catalog.requirements:
            if profile not in req.profiles or req.testability != "black-box":
                continue
            if gating_only and not req.gating:
                continue
            if not any(profile in c.profiles for c in self.by_requirement.get(req.id, [])):
                missing.append(req.id)
        return missing


def _profiles(tags: set[str]) -> tuple[str, ...]:
    found = tuple(p for p in PROFILES if p in tags)
    return found or PROFILES


def scenario_checks() -> list[Check]:
    base = features_dir()
    checks = []
    for path in sorted(base.rglob("*.feature")):
        feature = FeatureParser(str(base), str(path.relative_to(base))).parse()
        for scenario in feature.scenarios.values():
            tags = set(feature.tags) | set(scenario.tags)
            for examples in getattr(scenario, "examples", []) or []:
                tags |= set(getattr(examples, "tags", ()) or ())
            checks.append(
                Check(
                    kind="scenario",
                    where=path.name,
                    name=scenario.name,
                    ids=tuple(sorted(t for t in tags if REQ_ID.match(t))),
                    profiles=_profiles(tags),
                    dims=tuple(sorted(t.removeprefix(DIM_TAG) for t in tags if t.startswith(DIM_TAG))),
                )
            )
    return checks


def property_checks() -> list[Check]:
    import conformance.suite as suite

    checks = []
    for info in pkgutil.iter_modules(suite.__path__):
        if not info.name.startswith("test_prop_"):
            continue
        module = importlib.import_module(f"conformance.suite.{info.name}")
        for name, obj in sorted(vars(module).items()):
            if not name.startswith("test_"):
                continue
            for mark in getattr(obj, "pytestmark", []):
                if mark.name != "akc":
                    continue
                profile = mark.kwargs.get("profile")
                profiles = (profile,) if isinstance(profile, str) else tuple(profile or PROFILES)
                ids, dims = tuple(mark.kwargs.get("ids", ())), tuple(mark.kwargs.get("dims", ()))
                checks.append(Check("property", info.name, name, ids, profiles, dims))
    return checks


def collect() -> Coverage:
    checks = scenario_checks() + property_checks()
    by_req: dict[str, list[Check]] = defaultdict(list)
    for check in checks:
        for req_id in check.ids:
            by_req[req_id].append(check)
    return Coverage(checks=checks, by_requirement=dict(by_req))


def summary(catalog: Catalog | None = None) -> dict[str, dict[str, int]]:
    """Per profile: gating black-box requirements, how many have a check."""
    catalog = catalog or load_catalog()
    cov = collect()
    out = {}
    for profile in PROFILES:
        gating = [
            r for r in catalog.requirements
            if profile in r.profiles and r.gating and r.testability == "black-box"
        ]
        out[profile] = {
            "gating_black_box": len(gating),
            "covered": len(gating) - len(cov.uncovered(catalog, profile)),
        }
    return out
