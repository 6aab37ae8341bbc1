"""Mutants found by machine: survivors of cosmic-ray over reference_kernel/ (mutation/run.sh) that
were missing checks, written back by hand so the self-test keeps them killed. Each docstring names
the module and line cosmic-ray mutated (docs/selftest.md, "Mutation testing by machine")."""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

from conformance.selftest.registry import flag, mutant
from reference_kernel.agent import CommonAgent
from reference_kernel.errors import ConfigError
from reference_kernel.ids import IdGenerator
from reference_kernel.kernel import Kernel


@mutant("MSG-004")
class CompletedChildIsAnError(CommonAgent):
    """A sub-agent whose turn completed answers the delegation call as an error (agent.py:415,
    `return result.reply or "", False` → `True`)."""

    async def _delegate(self, c: Any, t: Any, span: str) -> tuple[str, bool]:
        content, _ = await super()._delegate(c, t, span)
        return content, True


def _ids_from_a_slow_clock(clock: Callable[[], float]) -> Callable[[], str]:
    """UUID v7 ids made from 0.999 of the clock's value: well formed, 20 days early today."""
    return IdGenerator(lambda: clock() * 0.999)


flag("mutant", "uuid7_time_scaled", __name__,
     "UUID v7 ids whose time is 0.999 of the clock's (ids.py:85, `* 1000` -> `* 999`).",
     breaks="IDENT-005", profile="commonagent", ids_factory=_ids_from_a_slow_clock)


@mutant("DOOM-004")
class DoomThresholdOneRefused(Kernel):
    """A doom-loop threshold of 1 is refused when a session run builds its detector (doom.py:54,
    `threshold < 1` -> `threshold < 2`): the threshold is configurable, but not down to 1."""

    async def _run(self, *args: Any, **kwargs: Any) -> Any:
        if self.profile.doom_loop.threshold < 2:
            raise ConfigError("doom_loop.threshold", f"must be an integer >= 2, got {self.profile.doom_loop.threshold!r}")
        return await super()._run(*args, **kwargs)


@mutant("CONC-002")
class KeyValuesInWrittenOrder(Kernel):
    """A concurrency key holds each key-field value as the model wrote it, an object's members
    unsorted, so equal objects written in another order get distinct keys (concurrency.py:49,
    `sort_keys=True` -> `False`)."""

    def _tool_key(self, c: Any) -> Any:
        key = super()._tool_key(c)
        if key[0] != "key":
            return key
        fields = c.args if isinstance(c.args, dict) else {}
        written = tuple(json.dumps(fields.get(f), separators=(",", ":")) for f in c.entry.spec.concurrency.key_fields)
        return (*key[:3], written)
