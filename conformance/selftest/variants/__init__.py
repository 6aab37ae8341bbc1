"""Legal variants: kernels that make another allowed choice; each must pass the full suite.

Importing this package registers them (``conformance.selftest.registry.REGISTRY``).
"""

import importlib

MODULES = ("choices", "readings_kernel", "readings_bounds")

for _name in MODULES:
    importlib.import_module(f"{__name__}.{_name}")
