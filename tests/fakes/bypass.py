"""A kernel whose model calls never reach the harness: the reference kernel answered by a script
player of its own (what a kernel pointed at a stand-alone mock API does), for the message that
names the fault once (issue 23 §3)."""

from __future__ import annotations

from typing import Any

from conformance.boundary.scenario import Scenario
from conformance.harness.doubles import HarnessDoubles
from reference_kernel.adapter import ReferenceAdapter


class _OwnModel:
    """The harness's doubles, but the model: a second copy of the script the harness never sees."""

    def __init__(self, doubles: Any, scenario: Scenario) -> None:
        self._doubles = doubles
        self.model_stream = HarnessDoubles(scenario).model_stream

    def __getattr__(self, name: str) -> Any:
        return getattr(self._doubles, name)


class BypassingAdapter(ReferenceAdapter):
    async def run(self, scenario: Scenario, doubles: Any) -> Any:
        return await super().run(scenario, _OwnModel(doubles, scenario))


def adapter() -> BypassingAdapter:
    return BypassingAdapter(name="bypassing-kernel")
