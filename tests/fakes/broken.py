"""Broken adapters, built as WRAPPERS around any adapter (the fake one or the reference one).

Each factory wraps the adapter named by the environment variable ``AKC_INNER``
(default: the fake kernel), so the same broken behaviour can be aimed at any kernel:

* ``raising``: ``run`` raises (an adapter bug) → verdicts ``error``, exit 3;
* ``hanging``: ``run`` never returns (a hung kernel) → ``fail`` within the timeout;
* ``reordering``: the tool_result messages of every model request are reversed before the
  harness's model sees them → the ordered-results requirement fails, exit 1;
* ``malformed``: ``run`` returns a result with a wrongly typed field → ``error``;
* ``blocking``: blocks the event loop with a synchronous sleep (the backstop reports a hang);
* ``unsupported``: raises conformance.errors.Unsupported → ``incomplete``;
* ``interactive_together``: the reference kernel running interactive tools as safe data sources,
  whatever they declare → CONC-007 fails, CONC-008 is blocked by it.
"""

from __future__ import annotations

import os
import time
from typing import Any

import anyio

from conformance.errors import Unsupported
from conformance.harness.loading import load_adapter

DEFAULT_INNER = "tests.fakes.fake_kernel:factory"


def inner() -> Any:
    return load_adapter(os.environ.get("AKC_INNER", DEFAULT_INNER))


class Wrapper:
    def __init__(self, adapter: Any) -> None:
        self.inner = adapter
        self.info = adapter.info.model_copy(update={"name": f"{type(self).__name__.lower()}({adapter.info.name})"})


class Raising(Wrapper):
    async def run(self, scenario: Any, doubles: Any) -> Any:
        raise RuntimeError("adapter bug: cannot build the kernel")


class Hanging(Wrapper):
    async def run(self, scenario: Any, doubles: Any) -> Any:
        await self.inner.run(scenario, doubles)
        await anyio.sleep_forever()


class Malformed(Wrapper):
    async def run(self, scenario: Any, doubles: Any) -> Any:
        result = await self.inner.run(scenario, doubles)
        data = result.model_dump()
        data["outcomes"] = [{"message": "first", "status": None}]
        return data


class Blocking(Wrapper):
    #: How long to block the event loop (default: past the harness's backstop).
    seconds: float | None = None

    async def run(self, scenario: Any, doubles: Any) -> Any:
        time.sleep(self.seconds if self.seconds is not None else scenario.timeout_s + 4.5)  # fail_after cannot fire
        return await self.inner.run(scenario, doubles)


class UnsupportedAll(Wrapper):
    async def run(self, scenario: Any, doubles: Any) -> Any:
        raise Unsupported("this adapter cannot express any scenario")


class _ReorderingDoubles:
    """Delegates to the harness doubles, but reverses the tool results in each model request."""

    def __init__(self, doubles: Any) -> None:
        self._d = doubles

    def __getattr__(self, name: str) -> Any:
        return getattr(self._d, name)

    def model_stream(self, request: Any, turn: Any) -> Any:
        messages = list(request.get("messages") or [])
        slots = [i for i, m in enumerate(messages) if m.get("role") == "tool_result"]
        results = [messages[i] for i in slots]
        for i, m in zip(slots, reversed(results), strict=True):
            messages[i] = m
        return self._d.model_stream({**request, "messages": messages}, turn)


class Reordering(Wrapper):
    async def run(self, scenario: Any, doubles: Any) -> Any:
        return await self.inner.run(scenario, _ReorderingDoubles(doubles))


class _DroppingDoubles(_ReorderingDoubles):
    """Delegates to the harness doubles, but drops the last tool result of each model request
    (the same requirement as Reordering fails, for another reason)."""

    def model_stream(self, request: Any, turn: Any) -> Any:
        messages = list(request.get("messages") or [])
        last = max((i for i, m in enumerate(messages) if m.get("role") == "tool_result"), default=None)
        if last is not None:
            del messages[last]
        return self._d.model_stream({**request, "messages": messages}, turn)


class Dropping(Wrapper):
    async def run(self, scenario: Any, doubles: Any) -> Any:
        return await self.inner.run(scenario, _DroppingDoubles(doubles))


def raising() -> Raising:
    return Raising(inner())


def hanging() -> Hanging:
    return Hanging(inner())


def malformed() -> Malformed:
    return Malformed(inner())


def blocking() -> Blocking:
    return Blocking(inner())


def unsupported() -> UnsupportedAll:
    return UnsupportedAll(inner())


def reordering() -> Reordering:
    return Reordering(inner())


def dropping() -> Dropping:
    return Dropping(inner())


class InteractiveTogether(Wrapper):
    """Interactive calls run at once whether or not their tool declares a ConcurrencySpec: the
    kernel ignores the declaration (legal) and breaks CONC-007, not CONC-008."""

    async def run(self, scenario: Any, doubles: Any) -> Any:
        from conformance.boundary.scenario import ConcurrencySpec

        scenario = scenario.model_copy(deep=True)
        for tool in scenario.tools:
            if tool.kind == "interactive":
                tool.kind, tool.concurrency = "data_source", ConcurrencySpec(safe=True)
        return await self.inner.run(scenario, doubles)


def interactive_together() -> InteractiveTogether:
    return InteractiveTogether(load_adapter("reference_kernel.adapter:factory"))


# Factories that are broken themselves (for the adapter-loading errors).
def factory_raises() -> Any:
    raise ValueError("no kernel configured")


def not_an_adapter() -> Any:
    return object()


not_callable = 42
