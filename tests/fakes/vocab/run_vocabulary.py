"""Runs vocabulary.feature with every step module. Not a test_*.py file: only
tests/test_harness.py collects it, explicitly and with --kernel."""

from pathlib import Path

import pytest
from pytest_bdd import scenarios

from conformance.harness import plugin as pytest_plugin

if not pytest_plugin._STACK:
    pytest.skip("needs --kernel", allow_module_level=True)

from conformance.steps import export_steps

export_steps(globals())
scenarios(str(Path(__file__).resolve().parent / "vocabulary.feature"))
