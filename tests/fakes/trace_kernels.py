"""Reference-kernel variants for the trace tests (``akc run --adapter tests.fakes.trace_kernels:<name>``).

* ``results_reversed``: a *mutant* — tool results go back to the model in reverse order (breaks
  TOOL-003); its traces must diverge at the first misplaced tool_result and nowhere earlier.
* ``other_wording``: a *legal variant* — another synthetic-instruction wording and another
  doom-loop subtype (both free choices); its traces must equal the reference's up to those.
"""

from __future__ import annotations

import inspect
import types
from typing import Any

import reference_kernel.adapter as ref
from reference_kernel.kernel import Kernel

OTHER_DOOM = "doom_loop_detected"


class ResultsReversed(Kernel):
    def _order_results(self, calls: list[Any]) -> list[Any]:
        return list(reversed(calls))


class OtherWording(Kernel):
    def _limit_instruction(self, limit: str) -> str:
        return f"[harness note] Stop here ({limit}): answer with what you know, no more tools."

    def _check_doom(self, run: Any, calls: list[Any]) -> str | None:
        return OTHER_DOOM if super()._check_doom(run, calls) else None


def _adapter(kernel_cls: type[Kernel], name: str, doom: str | None = None) -> Any:
    """The reference adapter driving ``kernel_cls`` for the kernel profile."""
    params = inspect.signature(ref.ReferenceAdapter).parameters
    if "kernel_cls" in params:
        extra = {"doom_loop_subtype": doom} if doom else {}
        return ref.ReferenceAdapter(kernel_cls=kernel_cls, name=name, **extra)
    # An older reference adapter without the swap keywords: the same code with another Kernel.
    scope = dict(vars(ref), Kernel=kernel_cls)
    scope["build"] = types.FunctionType(ref.build.__code__, scope, "build", ref.build.__defaults__)
    run = ref.ReferenceAdapter.run
    cls = type(
        "TraceVariantAdapter",
        (ref.ReferenceAdapter,),
        {"run": types.FunctionType(run.__code__, scope, "run", run.__defaults__, run.__closure__)},
    )
    adapter = cls()
    update: dict[str, Any] = {"name": name}
    if doom:
        update["doom_loop_subtype"] = doom
    adapter.info = adapter.info.model_copy(update=update)
    return adapter


def results_reversed() -> Any:
    return _adapter(ResultsReversed, "reference-kernel/results-reversed")


def other_wording() -> Any:
    return _adapter(OtherWording, "reference-kernel/other-wording", OTHER_DOOM)
