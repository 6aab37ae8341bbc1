"""Every scenario of every feature file, with the step definitions of every module of
``conformance.steps`` (a new ``conformance/steps/<area>.py`` is picked up with no edit here)."""

import pytest

from conformance.harness import plugin as pytest_plugin

if not pytest_plugin._STACK:
    pytest.skip("the conformance suite needs --kernel=pkg.mod:factory", allow_module_level=True)

from pytest_bdd import scenarios  # noqa: E402

from conformance.paths import features_dir  # noqa: E402
from conformance.steps import export_steps  # noqa: E402

export_steps(globals())

if any(features_dir().rglob("*.feature")):
    scenarios(str(features_dir()))
