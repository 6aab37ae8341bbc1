"""Small fakes shared by the loop tests of both faces: stream chunks, a list-driven model provider,
an event log and hooks that record every dispatch."""

from __future__ import annotations

import json
from collections.abc import Iterable
from typing import Any

from reference_kernel.config import HookRegistry


def call(cid: str, name: str, args: Any = None, raw: str | None = None) -> dict[str, Any]:
    """A tool_use chunk; ``raw`` scripts the argument text as is (invalid JSON, say)."""
    return {"type": "tool_use", "id": cid, "name": name, "input_json": raw if raw is not None else json.dumps(args or {})}


def text(t: str) -> dict[str, Any]:
    return {"type": "text", "text": t}


class ListProvider:
    """Answers request k with responses[k] (a list of chunks, or a callable making an async gen);
    past the end it repeats the last one. Records every request."""

    def __init__(self, *responses: Any) -> None:
        self.responses = list(responses)
        self.requests: list[dict[str, Any]] = []

    async def stream(self, request: dict[str, Any]):
        self.requests.append(request)
        response = self.responses[min(len(self.requests) - 1, len(self.responses) - 1)]
        if callable(response):
            async for chunk in response():
                yield chunk
            return
        for chunk in response:
            yield chunk


class Log:
    def __init__(self) -> None:
        self.events: list[tuple[str, Any]] = []

    def points(self) -> list[str]:
        return [e for e, _ in self.events]


def recording_hooks(points: Iterable[str], log: Log, outcomes: dict[str, Any] | None = None) -> HookRegistry:
    """One hook per point that logs (point, payload) and returns ``outcomes[point]`` (a value, or
    a function of the payload)."""
    hooks = HookRegistry()
    outcomes = outcomes or {}
    for point in points:

        async def hook(p: str, payload: Any, turn: Any, _point: str = point) -> Any:
            log.events.append((_point, payload))
            out = outcomes.get(_point)
            return out(payload) if callable(out) else out

        hooks.register(point, f"rec-{point}", hook)
    return hooks
