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


def selected_scenarios(wanted: set[str]) -> None:
    """Like ``scenarios(features_dir())``, but builds a test only for the scenarios tagged with a
    wanted requirement id (``--akc-req``): building all ~300 to deselect most of them was most
    of a small run's collection. Every scenario still reserves its test name, so a kept test
    has the node id it has in a full run. A tag on the feature, rule or examples counts (the
    plugin's selection then decides exactly, as before)."""
    from pytest_bdd.feature import get_features
    from pytest_bdd.scenario import get_features_base_dir, get_python_name_generator, scenario

    base_dir = get_features_base_dir(__file__)
    namespace = globals()
    taken: set[str] = set()
    for feature in get_features([str(features_dir())]):
        for name, template in feature.scenarios.items():
            test_name = next(n for n in get_python_name_generator(name) if n not in namespace and n not in taken)
            taken.add(test_name)
            tags = template.tags | feature.tags | (template.rule.tags if template.rule is not None else set())
            tags = tags.union(*(ex.tags or () for ex in template.examples))
            if tags & wanted:

                @scenario(feature.filename, name, features_base_dir=base_dir)
                def _scenario() -> None:
                    pass  # pragma: no cover

                namespace[test_name] = _scenario


def _wanted() -> set[str] | None:
    """The requirement ids this run selects (None: every scenario, e.g. a batch selects per job)."""
    state = pytest_plugin._STACK[-1]
    return None if state.batch or state.req_filter is None else set(state.req_filter)


#: The requirement ids this module's scenarios were built for (None: every scenario). A module
#: imported by an earlier run in this process is imported again by a run that wants scenarios
#: it did not build (conformance.harness.plugin ``drop_stale_features``).
BUILT_FOR: set[str] | None = _wanted()

if any(features_dir().rglob("*.feature")):
    if BUILT_FOR is None:
        scenarios(str(features_dir()))
    else:
        selected_scenarios(BUILT_FOR)
