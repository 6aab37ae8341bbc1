"""Legal variants: kernels that make another allowed choice; each must pass the full suite.

Importing this package registers them (``conformance.selftest.registry.REGISTRY``).
"""

import importlib

MODULES = ("choices", "readings_kernel", "readings_agent", "readings_bounds", "blind2", "start_order")

for _name in MODULES:
    try:
        importlib.import_module(f"{__name__}.{_name}")
    except ModuleNotFoundError as exc:  # a module not written yet
        if exc.name != f"{__name__}.{_name}":
            raise
