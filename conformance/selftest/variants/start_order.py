"""A legal variant whose parallel tool calls start in a random order (issue 21 §2).

000 runs the calls of one response in parallel and 003 runs distinct concurrency keys concurrently:
neither fixes which call starts first, and equal keys (or interactive calls) may run one after the
other in any order (reading ``sequential-order``). A check that compares start order across runs,
or against the order asked, fails a correct kernel at random. This variant makes that visible: each
call yields to the scheduler a random number of times before its tool starts, in both faces, and
the self-test certifies it several times (``runs``), the reruns over the checks that involve
parallel calls (``conformance.selftest.registry.PARALLEL_REQUIREMENTS``). It must pass every time.
"""

from __future__ import annotations

import random
from typing import Any

import anyio.lowlevel

from conformance.selftest.registry import variant
from reference_kernel.adapter import ReferenceAdapter
from reference_kernel.agent import CommonAgent
from reference_kernel.kernel import Call, Kernel

#: How many times the self-test certifies it (the first run: the full suite).
RUNS = 5


class _RandomStart:
    """Before a call's tool starts, yield 0 to 4 times: calls started together start in a random order."""

    _rng = random.Random()

    async def _execute(self, c: Call, ctx: Any, parent_span: str | None) -> None:
        for _ in range(self._rng.randint(0, 4)):
            await anyio.lowlevel.checkpoint()
        await super()._execute(c, ctx, parent_span)  # type: ignore[misc]


class RandomStartKernel(_RandomStart, Kernel):
    pass


class RandomStartAgent(_RandomStart, CommonAgent):
    pass


@variant(runs=RUNS)
class RandomToolStartOrder(ReferenceAdapter):
    """Parallel tool calls start in a random order (both faces): 000 and 003 leave start order open."""

    def __init__(self, **kwargs: Any) -> None:
        super().__init__(kernel_cls=RandomStartKernel, agent_cls=RandomStartAgent, **kwargs)
