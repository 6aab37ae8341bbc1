"""Single-fault mutants (issue 22, one fault, one verdict): each removes exactly one hook point of
its profile (the kernel never dispatches it), or raises at the limit. Run on the whole suite, each
must fail only the requirements that name its fault — the point's dispatch requirement
(``mechanisms.toml`` [dispatch]) and those that depend on the point ([depends]) — and leave every
other requirement ``pass`` or ``blocked``: anything else is one fault counted twice.
"""

from __future__ import annotations

from typing import Any

from conformance.boundary.scenario import COMMONAGENT_HOOK_POINTS, KERNEL_HOOK_POINTS
from conformance.catalog.mechanisms import dependencies, dispatch_subject
from conformance.selftest.mutants.bounds import LimitRaises
from conformance.selftest.registry import add_single_fault
from reference_kernel.agent import CommonAgent
from reference_kernel.kernel import Kernel


def names_fault(point: str) -> list[str]:
    """The requirements that name "``point`` is never dispatched": its dispatch requirement first,
    then every requirement whose checks depend on the point."""
    owner = dispatch_subject(point)
    if owner is None:
        raise ValueError(f"mechanisms.toml [dispatch] names no requirement for hook point {point!r}")
    deps = sorted(rid for rid, ds in dependencies().items() if any(d.name == point for d in ds))
    return list(dict.fromkeys([owner, *deps]))


def _without(point: str, base: type) -> type:
    """``base`` that never dispatches ``point`` (as if no hook were registered there)."""

    async def _dispatch(self: Any, at: str, payload: Any, *args: Any, **kwargs: Any) -> Any:
        if at == point:
            return payload
        return await base._dispatch(self, at, payload, *args, **kwargs)

    name = "Without" + "".join(part.title() for part in point.replace("-", "_").split("_"))
    return type(name, (base,), {"_dispatch": _dispatch, "__module__": __name__, "__doc__": f"{point} is never dispatched."})


def _slug(point: str) -> str:
    return point.replace("-", "_")


for _point in KERNEL_HOOK_POINTS:
    add_single_fault(_without(_point, Kernel), f"single_fault_kernel_no_{_slug(_point)}", names_fault(_point), f"{_point} is never dispatched")
for _point in COMMONAGENT_HOOK_POINTS:
    add_single_fault(_without(_point, CommonAgent), f"single_fault_commonagent_no_{_slug(_point)}", names_fault(_point), f"{_point} is never dispatched")

add_single_fault(LimitRaises, "single_fault_limit_raises", ["BOUND-008"], "a fired bound raises out of run_session instead of reporting an outcome")
