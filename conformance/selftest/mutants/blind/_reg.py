"""Registration of the blind round's mutants into the self-test registry.

The blind round: mutants written from the seeds alone by an engineer who had not read
``features/`` or ``conformance/steps/`` (docs/selftest.md). Each keeps its name (``k_…`` kernel
profile, ``a_…`` CommonAgent) and lists every requirement it violates; a failure of any of them
kills it. The decorator's ``shape`` is the input the mutant needs to show its bug.
"""

from __future__ import annotations

import re
import sys
from collections.abc import Callable
from typing import Any

from conformance.selftest.mutants._util import DroppingSpans  # noqa: F401  (the blind modules import it from here)
from conformance.selftest.registry import add_mutant


def snake(name: str) -> str:
    """``KContextHistoryWindow`` → ``k_context_history_window``."""
    return name[0].lower() + "_" + re.sub(r"(?<=[a-z0-9])(?=[A-Z])", "_", name[1:]).lower()


def mutant(ids: list[str], shape: str, **adapter_kwargs: Any) -> Callable[[type], type]:
    """Class decorator: this subclass violates ``ids`` (first = the one it is listed under) and
    needs the input ``shape`` to show it."""

    def register(cls: type) -> type:
        doc = " ".join((cls.__doc__ or cls.__name__).split())
        profile = getattr(cls, "PROFILE", None)  # an adapter-level mutant names the profile it changes
        entry = add_mutant(
            cls, snake(cls.__name__), list(ids), f"{doc} [blind; needs: {shape}]",
            profile=profile if profile in ("kernel", "commonagent") else None, **adapter_kwargs,
        )
        setattr(sys.modules[cls.__module__], entry.name, entry.make)
        return cls

    return register
