"""The scripted endpoint in-process, as a respx router, for kernels built on plain ``httpx``.

The router answers exactly what the loopback server would (same :class:`ScriptedEndpoint`), so a
kernel tested both ways sees the same model. respx is a test dependency: import this module only
where respx is installed.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Iterator
from pathlib import Path
from typing import Any

import anyio
import httpx
import respx

from conformance.httpmodel.endpoint import Reply, ScriptedEndpoint, load_script
from conformance.boundary.scenario import ModelDef, ModelResponse

DEFAULT_BASE_URL = "https://model.test/v1"


class _SSEStream(httpx.AsyncByteStream, httpx.SyncByteStream):
    """The reply's frames; a blocked reply then waits until the client cancels the read."""

    def __init__(self, reply: Reply) -> None:
        self._reply = reply

    async def __aiter__(self) -> AsyncIterator[bytes]:
        for frame in self._reply.events:
            yield frame
        if self._reply.block:
            await anyio.sleep_forever()

    def __iter__(self) -> Iterator[bytes]:
        # A sync client cannot be cancelled mid-read: a blocked reply simply ends (unfinished).
        yield from self._reply.events


def _respond(endpoint: ScriptedEndpoint, request: httpx.Request) -> httpx.Response:
    reply = endpoint.handle(request.method, request.url.path, request.content)
    if not reply.streaming:
        return httpx.Response(reply.status, json=reply.json)
    return httpx.Response(
        reply.status, headers={"content-type": "text/event-stream"}, stream=_SSEStream(reply)
    )


def scripted_router(
    script: ScriptedEndpoint | ModelDef | list[ModelResponse] | list[Any] | str | Path,
    *,
    base_url: str = DEFAULT_BASE_URL,
    record: str | Path | None = None,
) -> respx.MockRouter:
    """A respx router serving ``script`` under ``base_url`` (``…/chat/completions``, ``…/models``).

    ``router.endpoint`` is the :class:`ScriptedEndpoint` (its ``requests`` are the recording).
    Use it as ``with scripted_router(script) as router: ...``.
    """
    if isinstance(script, ScriptedEndpoint):
        endpoint = script
    elif isinstance(script, ModelDef) or (isinstance(script, list) and all(isinstance(r, ModelResponse) for r in script)):
        endpoint = ScriptedEndpoint(script, record=record)  # type: ignore[arg-type]
    else:
        endpoint = ScriptedEndpoint(load_script(script), record=record)  # type: ignore[arg-type]
    base = base_url.rstrip("/")
    router = respx.MockRouter(assert_all_called=False, assert_all_mocked=True)
    router.route(url__startswith=base + "/").mock(side_effect=lambda request: _respond(endpoint, request))
    router.endpoint = endpoint  # type: ignore[attr-defined]
    return router
