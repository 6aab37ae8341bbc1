"""agent-kernel-conformance: the conformance suite for agent kernels.

The public API is what this module exports (:data:`__all__`, frozen by ``tests/test_layout.py``):
:func:`certify`, the adapter boundary (what an adapter receives and returns), the report model,
and the errors an adapter or a kernel author's test may raise or catch. Everything else may move.
Names are resolved on first use, so ``import conformance`` stays cheap (the pytest plugin, which
every pytest run of an environment with this package loads, imports it).
"""

from __future__ import annotations

import importlib
from typing import Any

__version__ = "0.1.0"

_EXPORTS: dict[str, tuple[str, ...]] = {
    "conformance.harness.certify": ("certify",),
    "conformance.boundary.adapter": (
        "CAPABILITIES",
        "AdapterInfo",
        "Doubles",
        "JournalDump",
        "KernelAdapter",
        "KernelRaised",
        "MessageRecord",
        "ModelCallError",
        "Outcome",
        "Rejection",
        "RunResult",
        "SessionRecord",
        "Span",
        "ToolCallRecord",
        "ToolFailed",
        "TurnInfo",
        "TurnRecord",
        "UsageEvent",
        "run_user_messages",
    ),
    "conformance.boundary.scenario": (
        "HOOK_POINTS",
        "Bounds",
        "ClockDef",
        "ConcurrencySpec",
        "DoomLoop",
        "HookDef",
        "Pricing",
        "Scenario",
        "SubagentDef",
        "ToolDef",
        "UserMessage",
    ),
    "conformance.report.model": (
        "VERDICTS",
        "CheckResult",
        "KernelInfo",
        "Report",
        "RequirementResult",
        "SuiteInfo",
        "UntestableEntry",
    ),
    "conformance.errors": ("ConformanceFailure", "HarnessError", "Unsupported", "UsageError"),
}
_WHERE = {name: module for module, names in _EXPORTS.items() for name in names}

__all__ = sorted(_WHERE) + ["__version__"]


def __getattr__(name: str) -> Any:
    module = _WHERE.get(name)
    if module is None:
        raise AttributeError(f"module 'conformance' has no attribute {name!r}")
    value = getattr(importlib.import_module(module), name)
    globals()[name] = value  # resolved once
    return value


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(__all__))
