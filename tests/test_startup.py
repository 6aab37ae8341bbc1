"""What keeps a certification run's start-up small (issue 17): property modules are skipped
unread by Hypothesis when ``--akc-req`` selects none of their requirements, and the memoised
pytest-bdd step lookup is put back when the run ends."""

from __future__ import annotations

import importlib
import json
import os
import subprocess
import sys
from pathlib import Path

from conformance.harness.plugin import property_requirement_ids, properties_selected

ROOT = Path(__file__).resolve().parents[1]
SUITE = ROOT / "conformance" / "suite"


def test_the_ids_read_from_a_property_module_are_those_of_its_marks() -> None:
    modules = sorted(SUITE.glob("test_prop_*.py"))
    assert modules
    for path in modules:
        module = importlib.import_module(f"conformance.suite.{path.stem}")
        marked = {i for f in vars(module).values() for m in getattr(f, "pytestmark", []) if m.name == "akc" for i in m.kwargs["ids"]}
        assert marked and property_requirement_ids(path) == marked, path.name


def test_properties_selected() -> None:
    assert properties_selected(SUITE, ["tool-003"])  # test_prop_tool.py
    assert not properties_selected(SUITE, ["LOOP-001"])


_PROBE = """
import json, sys
import pytest_bdd.scenario
from conformance.harness.certify import SuiteOptions, run_suite
scenario_module = sys.modules["pytest_bdd.scenario"]
original = scenario_module.find_fixturedefs_for_step
for reqs in sys.argv[1:]:  # one run after the other in this interpreter, as given
    run = run_suite(SuiteOptions(reqs=reqs.split(",")))
    print(json.dumps({"exit": run.exit_code, "verdicts": run.report.verdicts(), "hypothesis": "hypothesis" in sys.modules,
                      "restored": scenario_module.find_fixturedefs_for_step is original}))
"""


def _probe(*runs: str) -> list[dict]:
    """Each of ``runs`` (comma-separated ids) certified in turn in one fresh interpreter."""
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(p for p in (str(ROOT), os.environ.get("PYTHONPATH", "")) if p))
    out = subprocess.run([sys.executable, "-c", _PROBE, *runs], capture_output=True, text=True, cwd=ROOT, env=env, timeout=120)
    assert out.returncode == 0, out.stderr[-2000:]
    return [json.loads(line) for line in out.stdout.strip().splitlines()[-len(runs):]]


def test_a_run_without_properties_never_imports_hypothesis_and_restores_pytest_bdd() -> None:
    """One interpreter: the run without properties first (hypothesis not yet imported by
    anything), then one with a property, which does import it."""
    without, with_property = _probe("LOOP-001", "TOOL-003")
    assert without == {"exit": 0, "verdicts": {"LOOP-001": "pass"}, "hypothesis": False, "restored": True}
    assert with_property["hypothesis"] is True and with_property["verdicts"] == {"TOOL-003": "pass"}
    assert with_property["restored"] is True
