"""Memoise pytest-bdd's step lookup for a certification session.

For every step of every scenario, pytest-bdd (``pytest_bdd.scenario.find_fixturedefs_for_step``)
walks every fixture name the session knows and asks pytest which of its definitions are visible
to the test, to find the step definitions, before matching their parsers against the step's
text: about 570,000 fixture look-ups in one ``akc run``, a third of its CPU time. Which step
definitions a test sees depends only on where it sits (its parent node: every scenario of a
module sees the same ones) and on the step definitions registered (all at collection, before
any step runs), so that list is computed once per parent node and number of step definitions
(pytest-bdd also leaves one fixture name per step text behind); a step's text is then matched
against their parsers, in the same order as pytest-bdd does, once per text and type.

The cache lives on the session's fixture manager (a new session starts empty) and the original
function is put back when the session ends. A pytest-bdd without these internals is left alone.
"""

from __future__ import annotations

import importlib
from collections.abc import Callable
from typing import Any

_CACHE_ATTR = "_akc_step_fixturedefs"
_MATCH_ATTR = "_akc_step_matches"


def install() -> Callable[[], None] | None:
    """Replace pytest-bdd's step lookup by a memoised one; returns the undo (None: not installed)."""
    try:
        # (``from pytest_bdd import scenario`` is the function of that name, not the module.)
        bdd_scenario = importlib.import_module("pytest_bdd.scenario")
        from pytest_bdd.compat import get_fixture_names, getfixturedefs
        from pytest_bdd.steps import step_function_context_registry
    except ImportError:  # another pytest-bdd: keep its own lookup
        return None
    original = getattr(bdd_scenario, "find_fixturedefs_for_step", None)
    if original is None or getattr(original, "_akc_memoised", False):
        return None

    def step_definitions(fixturemanager: Any, node: Any) -> list[tuple[Any, Any]]:
        """(fixture definition, step context) of every step definition visible to ``node``."""
        cache = fixturemanager.__dict__.setdefault(_CACHE_ATTR, {})
        key = (getattr(getattr(node, "parent", None), "nodeid", None), len(step_function_context_registry))
        found = cache.get(key)
        if found is None:
            found = cache[key] = [
                (fixturedef, context)
                for name in get_fixture_names(fixturemanager=fixturemanager)
                for fixturedef in getfixturedefs(fixturemanager, name, node) or []
                if (context := step_function_context_registry.get(fixturedef.func)) is not None
            ]
        return found

    def find_fixturedefs_for_step(step: Any, fixturemanager: Any, node: Any) -> list[Any]:
        definitions = step_definitions(fixturemanager, node)
        # The match depends only on the visible definitions and the step's type and text, which
        # recur across scenarios (and across the jobs of a batch): matched once per text.
        matches = fixturemanager.__dict__.setdefault(_MATCH_ATTR, {})
        key = (id(definitions), step.type, step.name)
        found = matches.get(key)
        if found is None:
            found = matches[key] = [
                fixturedef
                for fixturedef, context in definitions
                if (context.type is None or context.type == step.type) and context.parser.is_matching(step.name)
            ]
        return list(found)

    find_fixturedefs_for_step._akc_memoised = True  # type: ignore[attr-defined]
    bdd_scenario.find_fixturedefs_for_step = find_fixturedefs_for_step
    unsign = _memoise_signatures(bdd_scenario)

    def restore() -> None:
        if bdd_scenario.find_fixturedefs_for_step is find_fixturedefs_for_step:
            bdd_scenario.find_fixturedefs_for_step = original
        unsign()

    return restore


def _memoise_signatures(bdd_scenario: Any) -> Callable[[], None]:
    """pytest-bdd inspects each step function's signature twice every time a step runs (about
    2,300 steps a run, 3% of its CPU); a function's signature does not change: read once."""
    names = [n for n in ("signature", "get_required_args") if callable(getattr(bdd_scenario, n, None))]
    originals = {n: getattr(bdd_scenario, n) for n in names}
    memo: dict[tuple[str, Any], Any] = {}

    def memoised(name: str) -> Callable[[Any], Any]:
        compute = originals[name]

        def lookup(func: Any) -> Any:
            key = (name, func)
            try:
                found = memo.get(key)
            except TypeError:  # an unhashable callable: not memoised
                return compute(func)
            if found is None:
                found = memo[key] = compute(func)
            return list(found) if isinstance(found, list) else found

        return lookup

    installed = {n: memoised(n) for n in names}
    for n, f in installed.items():
        setattr(bdd_scenario, n, f)

    def restore() -> None:
        for n, f in installed.items():
            if getattr(bdd_scenario, n) is f:
                setattr(bdd_scenario, n, originals[n])

    return restore
