"""Do-nothing kernels (the self-test's ``null_empty`` and ``null_completed``), for the harness's own tests."""

from conformance.selftest.mutants.null import NullAdapter, null_completed, null_empty

__all__ = ["NullAdapter", "null_completed", "null_empty"]
