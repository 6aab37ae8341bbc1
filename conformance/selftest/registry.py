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
from dataclasses import dataclass, field
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

    @property
    def spec(self) -> str:
        return f"{self.module}:{self.name}"

    @property
    def area(self) -> str | None:
        return self.breaks.split("-", 1)[0] if self.breaks else None


REGISTRY: dict[str, Entry] = {}


def snake(name: str) -> str:
    return re.sub(r"(?<=[a-z0-9])(?=[A-Z])", "_", name).lower()


def _add(entry: Entry) -> Entry:
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


def _decorator(kind: Kind, breaks: str | None, also_expected: tuple[str, ...], profile: str | None, adapter_kwargs: dict[str, Any]) -> Callable[[type], type]:
    def register(cls: type) -> type:
        name = snake(cls.__name__)
        make, face = _maker(cls, kind, name, adapter_kwargs)
        doc = (cls.__doc__ or "").strip().splitlines()
        _add(Entry(kind, name, cls.__module__, profile or face, doc[0] if doc else name, breaks, also_expected, make))
        return cls

    return register


def mutant(breaks: str, *, also_expected: tuple[str, ...] = (), profile: str | None = None, **adapter_kwargs: Any) -> Callable[[type], type]:
    """Class decorator: this subclass breaks requirement ``breaks`` (and nothing else on purpose)."""
    return _decorator("mutant", breaks, tuple(also_expected), profile, adapter_kwargs)


def variant(*, profile: str | None = None, **adapter_kwargs: Any) -> Callable[[type], type]:
    """Class decorator: this subclass makes another allowed choice; it must pass everything."""
    return _decorator("variant", None, (), profile, adapter_kwargs)


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
