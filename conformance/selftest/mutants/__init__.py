"""Mutants: kernels derived from the reference kernel, each breaking one requirement.

Each module groups the mutants of one area; importing this package registers them all
(``conformance.selftest.registry.REGISTRY``). Certify one alone with
``akc run --adapter conformance.selftest.mutants.<module>:<name>``.
"""

import importlib

MODULES = ("loop", "tools", "bounds", "stop", "agent", "records", "null", "blind", "blind2", "single_fault", "dims_ca", "machine")

for _name in MODULES:
    try:
        importlib.import_module(f"{__name__}.{_name}")
    except ModuleNotFoundError as exc:  # a module not written yet
        if exc.name != f"{__name__}.{_name}":
            raise
