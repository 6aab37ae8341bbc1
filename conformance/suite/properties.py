"""Helpers for hypothesis properties of the suite (``conformance/suite/test_prop_<area>.py``).

A property is a plain (synchronous) pytest test decorated with :func:`requirement` (the ids it
checks and its profile) and :data:`PROPERTY_SETTINGS`; it builds scenarios and runs them through
the kernel under test with :func:`run` / :func:`context`, which use the session's event loop and
adapter (the same hard timeouts as the feature scenarios)::

    from hypothesis import given, strategies as st
    from conformance.suite.properties import PROPERTY_SETTINGS, context, requirement

    @requirement("TOOL-003", profile="kernel")
    @PROPERTY_SETTINGS
    @given(n=st.integers(1, 4))
    def test_results_in_call_order(n):
        ctx = context("kernel")
        ...
        ctx.run()
        assert ...

The settings are deterministic (derandomized, no database, no deadline) and small; shrinking is
off, because a failing example against a hanging kernel would otherwise be re-run many times.
"""

from __future__ import annotations

import warnings
from collections.abc import Callable
from typing import Any, TypeVar

import pytest
from hypothesis import HealthCheck, Phase, settings

from conformance.boundary.adapter import RunResult
from conformance.errors import Unsupported
from conformance.harness.runner import ScenarioRun
from conformance.boundary.scenario import Scenario

F = TypeVar("F", bound=Callable[..., Any])

PROPERTY_SETTINGS = settings(
    max_examples=10,
    derandomize=True,
    deadline=None,
    database=None,
    print_blob=False,
    phases=(Phase.explicit, Phase.reuse, Phase.generate),
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture, HealthCheck.data_too_large],
)
settings.register_profile(
    "akc",
    max_examples=10,
    derandomize=True,
    deadline=None,
    database=None,
    suppress_health_check=[HealthCheck.too_slow],
)


def requirement(
    *ids: str, profile: str | None = None, capability: str | None = None, dims: tuple[str, ...] | list[str] = ()
) -> Callable[[F], F]:
    """Mark a property with the requirement ids it checks, its profile (kernel / commonagent;
    None: any claimed profile), the optional capability it needs and the input-dimension cells it
    covers (``"dimension=value"``, as a scenario's ``@dim:dimension=value`` tags;
    ``conformance/catalog/dimensions.toml``)."""

    def decorate(fn: F) -> F:
        # The plugin registers the marker; modules imported outside pytest (the coverage gate)
        # or before the plugin loads must not warn.
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", pytest.PytestUnknownMarkWarning)
            mark = pytest.mark.akc(ids=list(ids), profile=profile, capability=capability, dims=list(dims))
        return mark(fn)

    return decorate


def _state() -> Any:
    """The active run's state; outside a certification run (no --kernel) the property skips."""
    from conformance.harness import plugin as pytest_plugin

    if not pytest_plugin._STACK:
        pytest.skip("conformance properties need --kernel=pkg.mod:factory")
    return pytest_plugin.current_state()


def adapter_profiles() -> list[str]:
    """The profiles being certified in this run (selected and claimed)."""
    return list(_state().profiles)


def run(scenario: Scenario) -> ScenarioRun:
    """Run a scenario through the current adapter, synchronously, under its hard timeout.
    Returns the ScenarioRun as is (check ``.timed_out``, ``.error``, ``.result`` yourself)."""
    state = _state()
    if scenario.profile not in state.info.profiles:
        raise Unsupported(f"the adapter does not claim the {scenario.profile} profile")
    return state.portal().run(state.adapter, scenario)


def context(profile: str = "kernel", name: str = "property") -> Any:
    """A fresh ScenarioContext (the same builder, run() and log queries the steps use)."""
    from conformance.steps.common import ScenarioContext

    state = _state()
    if profile not in state.info.profiles:
        raise Unsupported(f"the adapter does not claim the {profile} profile")
    check = state.checks.get(state.current) if state.current is not None else None
    return ScenarioContext(
        adapter=state.adapter, info=state.info, runner=state.portal(), profile=profile, name=name,
        evidence=state.evidence_log(None),
        # the property's own requirement ids: what its failures and blocks are judged against
        requirement_ids=list(check.requirement_ids) if check is not None else [],
    )


def run_ok(scenario: Scenario) -> RunResult:
    """Run and return the RunResult; a hang fails, an adapter error is a HarnessError (like the
    ``When the kernel runs`` step)."""
    ctx = context(scenario.profile, scenario.name)
    ctx.scenario = scenario
    ctx.record_hooks = False
    return ctx.run()
