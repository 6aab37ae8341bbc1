"""Step definitions for the feature files, one module per area (``common`` is the generic
vocabulary; feature writers add ``conformance/steps/<area>.py``).

``conformance/suite/test_features.py`` calls :func:`export_steps` so that every module of this
package is picked up with no edit anywhere else: pytest-bdd step definitions are fixtures
(``pytestbdd_stepdef_*``), so copying them into the test module makes them visible to its
scenarios.
"""

from __future__ import annotations

import importlib
import pkgutil
from types import ModuleType
from typing import Any


def step_modules() -> list[ModuleType]:
    """Every step module of this package (``common`` first, then by name; ``_private`` skipped)."""
    names = sorted(m.name for m in pkgutil.iter_modules(__path__) if not m.name.startswith("_"))
    if "common" in names:
        names.remove("common")
        names.insert(0, "common")
    return [importlib.import_module(f"{__name__}.{name}") for name in names]


def export_steps(namespace: dict[str, Any]) -> list[str]:
    """Copy every step definition and fixture of every step module into ``namespace``.

    Two modules defining the same fixture name would shadow each other silently, so that is an
    error naming both.
    """
    owners: dict[str, str] = {}
    for module in step_modules():
        for name, value in vars(module).items():
            is_fixture = hasattr(value, "_fixture_function_marker") or type(value).__name__ == "FixtureFunctionDefinition"
            if not (name.startswith("pytestbdd_") or is_fixture):
                continue
            if name in owners and namespace.get(name) is not value:
                if name.startswith("pytestbdd_"):
                    # Same step text in two modules: keep both under distinct names.
                    i = 1
                    while f"{name}_{module.__name__.rsplit('.', 1)[-1]}_{i}" in namespace:
                        i += 1
                    namespace[f"{name}_{module.__name__.rsplit('.', 1)[-1]}_{i}"] = value
                    continue
                raise RuntimeError(f"fixture {name!r} is defined in both {owners[name]} and {module.__name__}")
            owners[name] = module.__name__
            namespace[name] = value
    return sorted(owners)
