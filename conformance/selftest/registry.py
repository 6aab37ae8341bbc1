"""The self-test's entries: each mutant breaks one requirement, each variant makes another allowed choice.

An entry is declared next to its code with :func:`mutant` or :func:`variant` (a decorator on a
``Kernel`` / ``CommonAgent`` / ``ReferenceAdapter`` subclass, or a plain call for a flag). Each
gets a factory reachable as ``conformance.selftest.mutants.<module>:<snake_name>`` so that
``akc run --adapter`` can certify one mutant on its own.
"""

from __future__ import annotations

import re
import sys
from collections.abc import Callable
from dataclasses import dataclass, field, replace
from typing import Any, Literal

from reference_kernel.adapter import ReferenceAdapter
from reference_kernel.agent import CommonAgent
from reference_kernel.kernel import Kernel

Kind = Literal["mutant", "variant"]


@dataclass(frozen=True)
class Entry:
    kind: Kind
    name: str  # snake_case, unique; also the factory's name in its module
    module: str
    profile: str | None  # the profile the change lives in (None: both)
    description: str
    breaks: str | None = None  # the requirement a mutant breaks
    also_expected: tuple[str, ...] = ()
    make: Callable[[], Any] = field(default=ReferenceAdapter, repr=False)
    #: Further requirements the mutant really violates (a failure of any of them kills it too),
    #: unlike ``also_expected``, which other checks fail as a side effect.
    violates: tuple[str, ...] = ()
    #: A kernel that does nothing: killed only when it passes no requirement of the full suite.
    passes_nothing: bool = False
    #: How many times the mutant is certified (concurrency and cancellation mutants run several
    #: times: a check that catches its mutant only sometimes fails the self-test).
    runs: int = 1
    #: A single-fault mutant (one fault, one verdict, issue 22): run on the full suite, it must fail
    #: one of ``killed_by`` (the requirements that name its fault) and leave every other requirement
    #: ``pass`` or ``blocked`` (or not offered / not applicable): a fail, error or incomplete
    #: elsewhere is the suite counting one fault twice, a self-test failure.
    single_fault: bool = False

    @property
    def spec(self) -> str:
        return f"{self.module}:{self.name}"

    @property
    def area(self) -> str | None:
        return self.breaks.split("-", 1)[0] if self.breaks else None

    @property
    def killed_by(self) -> tuple[str, ...]:
        """Every requirement whose failure kills this mutant (the blamed id must be right)."""
        return tuple(dict.fromkeys(([self.breaks] if self.breaks else []) + list(self.violates)))


REGISTRY: dict[str, Entry] = {}


def snake(name: str) -> str:
    return re.sub(r"(?<=[a-z0-9])(?=[A-Z])", "_", name).lower()


#: Areas (and requirements) whose checks race against the kernel's scheduling: their mutants are
#: certified several times, and must be killed every time.
RACY_AREAS = frozenset({"CONC", "STOP"})
RACY_REQUIREMENTS = frozenset({"TOOL-001", "TOOL-002", "TOOL-003", "TURN-002", "LOOP-008", "LOOP-010", "COST-008"})
STABILITY_RUNS = 3
#: Requirements whose *properties* draw several calls of one response (the scenarios that script
#: such a response are found in the feature files: ``runner.parallel_reqs``). A variant certified
#: several times (``variant(runs=N)``: the random start order of ``variants/start_order.py``)
#: reruns them all, and must pass them every time.
PARALLEL_REQUIREMENTS = frozenset({"CONC-001", "CONC-002", "CONC-003", "CONC-004", "CONC-005", "CONC-006", "TOOL-001", "TOOL-003"})


def _add(entry: Entry) -> Entry:
    if entry.kind == "mutant" and entry.runs == 1 and not entry.single_fault:  # a full-suite run is paid once
        ids = set(entry.killed_by)
        if ids & RACY_REQUIREMENTS or {i.split("-", 1)[0] for i in ids} & RACY_AREAS:
            entry = replace(entry, runs=STABILITY_RUNS)
    if entry.name in REGISTRY:
        raise ValueError(f"self-test entry {entry.name!r} is defined twice")
    REGISTRY[entry.name] = entry
    setattr(sys.modules[entry.module], entry.name, entry.make)  # the `pkg.mod:factory` spec
    return entry


def _maker(target: Any, kind: str, name: str, adapter_kwargs: dict[str, Any]) -> tuple[Callable[[], Any], str | None]:
    label = f"{kind}:{name}"
    if isinstance(target, type) and issubclass(target, Kernel):
        return (lambda: ReferenceAdapter(kernel_cls=target, name=label, **adapter_kwargs)), "kernel"
    if isinstance(target, type) and issubclass(target, CommonAgent):
        return (lambda: ReferenceAdapter(agent_cls=target, name=label, **adapter_kwargs)), "commonagent"
    if isinstance(target, type) and issubclass(target, ReferenceAdapter):
        return (lambda: target(name=label, **adapter_kwargs)), None
    raise TypeError(f"{target!r} is not a Kernel, CommonAgent or ReferenceAdapter subclass")


def _decorator(kind: Kind, breaks: str | None, also_expected: tuple[str, ...], profile: str | None, adapter_kwargs: dict[str, Any], runs: int = 1) -> Callable[[type], type]:
    def register(cls: type) -> type:
        name = snake(cls.__name__)
        make, face = _maker(cls, kind, name, adapter_kwargs)
        doc = (cls.__doc__ or "").strip().splitlines()
        _add(Entry(kind, name, cls.__module__, profile or face, doc[0] if doc else name, breaks, also_expected, make, runs=runs))
        return cls

    return register


def mutant(breaks: str, *, also_expected: tuple[str, ...] = (), profile: str | None = None, **adapter_kwargs: Any) -> Callable[[type], type]:
    """Class decorator: this subclass breaks requirement ``breaks`` (and nothing else on purpose)."""
    return _decorator("mutant", breaks, tuple(also_expected), profile, adapter_kwargs)


def add_mutant(target: type, name: str, violates: list[str], description: str, *, profile: str | None = None, **adapter_kwargs: Any) -> Entry:
    """Register a mutant under an explicit name that violates several requirements (the first is
    the one it is listed under); used for the blind round's mutants, which keep their names."""
    make, face = _maker(target, "mutant", name, adapter_kwargs)
    return _add(Entry("mutant", name, target.__module__, profile or face, description, violates[0], (), make, tuple(violates[1:])))


def add_single_fault(target: type, name: str, names_fault: list[str], description: str, *, profile: str | None = None) -> Entry:
    """Register a single-fault mutant: ``names_fault`` are the requirements that name its fault
    (the first is the one it is listed under); every other requirement must pass or be blocked."""
    make, face = _maker(target, "mutant", name, {})
    entry = Entry("mutant", name, target.__module__, profile or face, description, names_fault[0], (), make, tuple(names_fault[1:]), single_fault=True)
    return _add(entry)


def variant(*, profile: str | None = None, runs: int = 1, **adapter_kwargs: Any) -> Callable[[type], type]:
    """Class decorator: this subclass makes another allowed choice; it must pass everything (and,
    with ``runs`` > 1, the checks involving parallel calls again, every time)."""
    return _decorator("variant", None, (), profile, adapter_kwargs, runs)


def flag(kind: Kind, name: str, module: str, description: str, *, breaks: str | None = None, profile: str | None = None, also_expected: tuple[str, ...] = (), **adapter_kwargs: Any) -> Entry:
    """An entry that is only adapter keywords (another id generator, journal, declared info)."""
    label = f"{kind}:{name}"
    return _add(Entry(kind, name, module, profile, description, breaks, tuple(also_expected),
                      lambda: ReferenceAdapter(name=label, **adapter_kwargs)))


def entries(kind: Kind | None = None) -> list[Entry]:
    """Every registered entry (importing the mutant and variant modules first)."""
    import conformance.selftest.mutants  # noqa: F401  (registers on import)
    import conformance.selftest.variants  # noqa: F401

    return [e for e in REGISTRY.values() if kind is None or e.kind == kind]
