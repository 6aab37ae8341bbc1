"""Single-fault mutants (issue 22, one fault, one verdict): each removes exactly one hook point of
its profile (the kernel never dispatches it, and its adapter declares it ``absent``, as a kernel
without that point would), or raises at the limit. Run on the whole suite, each
must fail only the requirements that name its fault — the point's dispatch requirement
(``mechanisms.toml`` [dispatch]) and those that depend on the point ([depends]) — and leave every
other requirement ``pass`` or ``blocked``: anything else is one fault counted twice.
"""

from __future__ import annotations

from typing import Any

from conformance.boundary.adapter import Mechanism
from conformance.boundary.scenario import COMMONAGENT_HOOK_POINTS, KERNEL_HOOK_POINTS
from conformance.catalog.mechanisms import dependencies, dispatch_subject
from conformance.selftest.mutants.bounds import LimitRaises
from conformance.selftest.registry import add_single_fault
from reference_kernel.adapter import ReferenceAdapter
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


def _adapter(point: str, base: type, profile: str) -> type:
    """A reference adapter over ``base`` without ``point``, declaring that point ``absent``."""
    kernel = _without(point, base)
    swap = {"kernel_cls": kernel} if profile == "kernel" else {"agent_cls": kernel}
    mechanisms = {**ReferenceAdapter.info.mechanisms, point: Mechanism(kind="absent", note="removed (single-fault mutant)")}

    def __init__(self: Any, **kwargs: Any) -> None:
        ReferenceAdapter.__init__(self, **swap, **kwargs)

    return type(
        kernel.__name__ + "Adapter",
        (ReferenceAdapter,),
        {"info": ReferenceAdapter.info.model_copy(update={"mechanisms": mechanisms, "profiles": [profile]}),
         "__init__": __init__, "__module__": __name__, "__doc__": kernel.__doc__},
    )


def _slug(point: str) -> str:
    return point.replace("-", "_")


for _profile, _points, _base in (("kernel", KERNEL_HOOK_POINTS, Kernel), ("commonagent", COMMONAGENT_HOOK_POINTS, CommonAgent)):
    for _point in _points:
        add_single_fault(
            _adapter(_point, _base, _profile), f"single_fault_{_profile}_no_{_slug(_point)}", names_fault(_point),
            f"{_point} is never dispatched", profile=_profile,
        )

add_single_fault(LimitRaises, "single_fault_limit_raises", ["BOUND-008"], "a fired bound raises out of run_session instead of reporting an outcome")
