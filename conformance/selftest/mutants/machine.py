"""Mutants found by machine: survivors of cosmic-ray over reference_kernel/ (mutation/run.sh) that
were missing checks, written back by hand so the self-test keeps them killed. Each docstring names
the module and line cosmic-ray mutated (docs/selftest.md, "Mutation testing by machine")."""

from __future__ import annotations

from typing import Any

from conformance.selftest.registry import mutant
from reference_kernel.agent import CommonAgent


@mutant("MSG-004")
class CompletedChildIsAnError(CommonAgent):
    """A sub-agent whose turn completed answers the delegation call as an error (agent.py:415,
    `return result.reply or "", False` → `True`)."""

    async def _delegate(self, c: Any, t: Any, span: str) -> tuple[str, bool]:
        content, _ = await super()._delegate(c, t, span)
        return content, True
