"""A model provider for OpenAI-compatible chat-completions APIs, streamed over SSE with httpx.

Our request shape in: ``{"messages": [001 messages + {"role": "system", "text"}], "tools":
[{"name", "description", "input_schema"}], "params": {...}}``. Our chunk shapes out:
``{"type": "text", "text"}`` as text arrives; at the end of the stream every tool call
(accumulated across deltas by ``index``) as ``{"type": "tool_use", "id", "name", "input_json"}``
in index order, then ``{"type": "usage", "input_tokens", "output_tokens",
"cached_input_tokens"}`` where ``input_tokens`` is the non-cached part of ``prompt_tokens``.

Plain httpx (not the openai SDK) so respx can script the endpoint in tests.
"""

from __future__ import annotations

import json
from collections.abc import AsyncIterator
from contextlib import aclosing
from typing import Any

import httpx

from reference_kernel.errors import ProviderError

DEFAULT_TIMEOUT = httpx.Timeout(60.0, connect=10.0)


def _arguments(args: Any) -> str:
    """Chat completions carry arguments as JSON text; a raw string is passed on as given."""
    if isinstance(args, str):
        return args
    return json.dumps(args if args is not None else {}, ensure_ascii=False)


def _message(message: dict[str, Any]) -> dict[str, Any]:
    role = message.get("role")
    if role in ("system", "user"):
        return {"role": role, "content": message.get("text", "")}
    if role == "assistant":
        out: dict[str, Any] = {"role": "assistant", "content": message.get("text")}
        calls = message.get("tool_calls") or []
        if calls:
            out["tool_calls"] = [
                {
                    "id": call["id"],
                    "type": "function",
                    "function": {"name": call["name"], "arguments": _arguments(call.get("args"))},
                }
                for call in calls
            ]
        elif out["content"] is None:
            out["content"] = ""
        return out
    if role == "tool_result":
        return {
            "role": "tool",
            "tool_call_id": message["call_id"],
            "content": message.get("content", ""),
        }
    raise ValueError(f"openai provider: cannot send a message with role {role!r}")


def to_chat_request(model: str, request: dict[str, Any]) -> dict[str, Any]:
    """Our model request as a chat-completions body (streaming, usage included)."""
    body: dict[str, Any] = dict(request.get("params") or {})
    body["model"] = model
    body["messages"] = [_message(m) for m in request.get("messages", [])]
    tools = request.get("tools") or []
    if tools:
        body["tools"] = [
            {
                "type": "function",
                "function": {
                    "name": tool["name"],
                    "description": tool.get("description", ""),
                    "parameters": tool.get("input_schema") or {"type": "object"},
                },
            }
            for tool in tools
        ]
    else:
        body.pop("tools", None)
    body["stream"] = True
    body["stream_options"] = {"include_usage": True}
    return body


def _error_message(status: int, raw: bytes) -> str:
    try:
        data = json.loads(raw)
    except ValueError:
        data = None
    if isinstance(data, dict):
        error = data.get("error")
        if isinstance(error, dict) and error.get("message"):
            return str(error["message"])
        if isinstance(error, str) and error:
            return error
    text = raw.decode("utf-8", "replace").strip()
    return text[:500] or httpx.codes.get_reason_phrase(status) or "request failed"


def _usage_chunk(usage: dict[str, Any]) -> dict[str, Any]:
    prompt = int(usage.get("prompt_tokens") or 0)
    cached = int((usage.get("prompt_tokens_details") or {}).get("cached_tokens") or 0)
    return {
        "type": "usage",
        "input_tokens": max(prompt - cached, 0),
        "output_tokens": int(usage.get("completion_tokens") or 0),
        "cached_input_tokens": cached,
    }


class OpenAICompatProvider:
    """Streams completions from ``{base_url}/chat/completions``.

    Failures raise ``ProviderError(status, message)``: the HTTP status for non-2xx answers
    (message from the ``{"error": {"message"}}`` body when present), 0 when no answer came.
    """

    def __init__(
        self,
        base_url: str,
        api_key: str,
        model: str,
        client: httpx.AsyncClient | None = None,
        timeout: httpx.Timeout | float = DEFAULT_TIMEOUT,
    ) -> None:
        self.url = base_url.rstrip("/") + "/chat/completions"
        self.api_key = api_key
        self.model = model
        self._client = client
        self._timeout = timeout

    def _headers(self) -> dict[str, str]:
        headers = {
            "Accept": "text/event-stream",
            "Content-Type": "application/json",
        }
        if self.api_key:
            headers["Authorization"] = f"Bearer {self.api_key}"
        return headers

    async def stream(self, request: dict[str, Any]) -> AsyncIterator[dict[str, Any]]:
        body = to_chat_request(self.model, request)
        if self._client is not None:
            async with aclosing(self._stream(self._client, body)) as chunks:
                async for chunk in chunks:
                    yield chunk
            return
        async with httpx.AsyncClient(timeout=self._timeout) as client:
            async with aclosing(self._stream(client, body)) as chunks:
                async for chunk in chunks:
                    yield chunk

    async def _stream(
        self, client: httpx.AsyncClient, body: dict[str, Any]
    ) -> AsyncIterator[dict[str, Any]]:
        state = _StreamState()
        try:
            async with client.stream(
                "POST", self.url, json=body, headers=self._headers(), timeout=self._timeout
            ) as response:
                if not response.is_success:
                    raw = await response.aread()
                    raise ProviderError(
                        response.status_code, _error_message(response.status_code, raw)
                    )
                async with aclosing(_sse_data(response)) as events:
                    async for data in events:
                        for chunk in state.feed(data):
                            yield chunk
                state.raise_error()
        except httpx.HTTPError as exc:
            raise ProviderError(0, f"{type(exc).__name__}: {exc}") from exc
        for chunk in state.finish():
            yield chunk


async def _sse_data(response: httpx.Response) -> AsyncIterator[str]:
    """The ``data:`` payloads of an SSE body, up to ``[DONE]``.

    The body is always read to its end (what follows ``[DONE]`` is discarded): httpx stacks
    async generators it does not close when a reader stops early, which trio reports as leaked.
    """
    done = False
    async for line in response.aiter_lines():
        data = _data_of(line)
        if done or data is None:
            continue
        if data == "[DONE]":
            done = True
            continue
        yield data


def _data_of(line: str) -> str | None:
    line = line.strip()
    if not line.startswith("data:"):
        return None  # blank separators, ``event:``, ``: comments``
    return line[5:].strip()


class _StreamState:
    """Turns chat-completion chunk events into our chunks; tool calls and usage wait for the end."""

    def __init__(self) -> None:
        self.calls: dict[int, dict[str, Any]] = {}
        self.usage: dict[str, Any] | None = None
        self.error: ProviderError | None = None

    def raise_error(self) -> None:
        if self.error is not None:
            raise self.error

    def feed(self, data: str) -> list[dict[str, Any]]:
        """Chunks for one event. The first error (an error event, malformed JSON) is kept and
        everything after it ignored, so the body is drained before ``raise_error``."""
        if self.error is not None:
            return []
        try:
            event = json.loads(data)
        except ValueError:
            self.error = ProviderError(502, f"malformed stream event: {data[:200]!r}")
            return []
        if not isinstance(event, dict):
            return []
        error = event.get("error")
        if error:
            message = error.get("message") if isinstance(error, dict) else error
            code = error.get("code") if isinstance(error, dict) else None
            self.error = ProviderError(code if isinstance(code, int) else 500, str(message))
            return []
        if event.get("usage"):
            self.usage = event["usage"]
        out: list[dict[str, Any]] = []
        for choice in event.get("choices") or []:
            delta = choice.get("delta") or {}
            text = delta.get("content")
            if isinstance(text, str) and text:
                out.append({"type": "text", "text": text})
            for position, part in enumerate(delta.get("tool_calls") or []):
                slot = self.calls.setdefault(
                    part.get("index", position), {"id": None, "name": "", "args": []}
                )
                if part.get("id"):
                    slot["id"] = part["id"]
                function = part.get("function") or {}
                if function.get("name"):
                    slot["name"] += function["name"]
                if function.get("arguments"):
                    slot["args"].append(function["arguments"])
        return out

    def finish(self) -> list[dict[str, Any]]:
        out = [
            {
                "type": "tool_use",
                "id": slot["id"] or f"call_{index}",
                "name": slot["name"],
                "input_json": "".join(slot["args"]),
            }
            for index, slot in sorted(self.calls.items())
        ]
        if self.usage is not None:
            out.append(_usage_chunk(self.usage))
        return out
