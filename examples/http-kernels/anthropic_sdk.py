"""An HTTP kernel certified through the official ``anthropic`` Python SDK (Messages).

The reference kernel, but its model is an API it calls: every model call streams through
``anthropic.AsyncAnthropic`` pointed at the scenario's served model (``doubles.http_model``).
Anthropic carries the tool result's error flag; usage is one cumulative figure per call (the
``message_start`` part is stored as it arrives, the rest at ``message_delta``), judged as the
dialect delivers it (docs/http-kernels.md).

    PYTHONPATH=examples/http-kernels akc run --adapter anthropic_sdk:adapter
"""

from __future__ import annotations

import json
from collections.abc import AsyncIterator
from typing import Any

import anthropic

from conformance.httpmodel.host import TURN_HEADER
from reference_kernel.adapter import ReferenceAdapter
from reference_kernel.errors import ProviderError


def _content(message: dict[str, Any]) -> tuple[str, list[dict[str, Any]]]:
    """(role, content blocks) of one of our messages."""
    role = message.get("role")
    if role == "tool_result":
        return "user", [{"type": "tool_result", "tool_use_id": message["call_id"], "content": message.get("content", ""),
                         "is_error": bool(message.get("is_error"))}]
    blocks: list[dict[str, Any]] = [{"type": "text", "text": message["text"]}] if message.get("text") else []
    for call in message.get("tool_calls") or []:
        args = call.get("args")
        blocks.append({"type": "tool_use", "id": call["id"], "name": call["name"], "input": args if isinstance(args, dict) else {}})
    return ("assistant" if role == "assistant" else "user"), blocks or [{"type": "text", "text": ""}]


def to_messages_request(model: str, request: dict[str, Any]) -> dict[str, Any]:
    """Our model request as a Messages body: system text apart, consecutive same-role messages
    (tool results after their calls) merged into one turn."""
    system = "\n".join(m.get("text", "") for m in request.get("messages", []) if m.get("role") == "system")
    messages: list[dict[str, Any]] = []
    for m in request.get("messages", []):
        if m.get("role") == "system":
            continue
        role, blocks = _content(m)
        if messages and messages[-1]["role"] == role:
            messages[-1]["content"] += blocks
        else:
            messages.append({"role": role, "content": blocks})
    # the params go as they are (extra_body): the SDK's own keywords change between its versions
    body: dict[str, Any] = {"model": model, "max_tokens": 4096, "messages": messages, "extra_body": dict(request.get("params") or {})}
    if system:
        body["system"] = system
    if request.get("tools"):
        body["tools"] = [{"name": t["name"], "description": t.get("description", ""),
                          "input_schema": t.get("input_schema") or {"type": "object"}} for t in request["tools"]]
    return body


def _usage(u: Any, before: tuple[int, int, int] = (0, 0, 0)) -> dict[str, Any]:
    """The usage not reported yet (Anthropic's figures are cumulative)."""
    now = (u.input_tokens or 0, u.output_tokens or 0, u.cache_read_input_tokens or 0)
    return {"type": "usage", "input_tokens": now[0] - before[0], "output_tokens": now[1] - before[1],
            "cached_input_tokens": now[2] - before[2]}


class AnthropicSDKModel:
    """The kernel's model provider: our request out as a streamed Messages call, chunks back."""

    def __init__(self, base_url: str, api_key: str, model: str) -> None:
        self.client = anthropic.AsyncAnthropic(base_url=base_url, api_key=api_key, max_retries=0)
        self.model = model

    async def stream(self, request: dict[str, Any], turn: dict[str, Any]) -> AsyncIterator[dict[str, Any]]:
        body = to_messages_request(self.model, request)
        tools: dict[int, dict[str, Any]] = {}
        reported = (0, 0, 0)
        try:
            async with self.client.messages.stream(**body, extra_headers={TURN_HEADER: json.dumps(turn)}) as stream:
                async for event in stream:
                    if event.type == "message_start":
                        first = _usage(event.message.usage)
                        if first["input_tokens"] or first["output_tokens"] or first["cached_input_tokens"]:
                            reported = (first["input_tokens"], first["output_tokens"], first["cached_input_tokens"])
                            yield first
                    elif event.type == "content_block_start" and event.content_block.type == "tool_use":
                        tools[event.index] = {"id": event.content_block.id, "name": event.content_block.name, "json": ""}
                    elif event.type == "content_block_delta" and event.delta.type == "text_delta":
                        yield {"type": "text", "text": event.delta.text}
                    elif event.type == "content_block_delta" and event.delta.type == "input_json_delta":
                        tools[event.index]["json"] += event.delta.partial_json
                    elif event.type == "content_block_stop" and event.index in tools:
                        call = tools.pop(event.index)
                        yield {"type": "tool_use", "id": call["id"], "name": call["name"], "input_json": call["json"]}
                    elif event.type == "message_delta":
                        rest = _usage(event.usage, reported)
                        rest["input_tokens"] = max(rest["input_tokens"], 0) if event.usage.input_tokens is not None else 0
                        yield rest
        except anthropic.APIStatusError as exc:
            error = exc.body.get("error") if isinstance(exc.body, dict) else None
            message = error.get("message") if isinstance(error, dict) else exc.message
            raise ProviderError(_status(exc), str(message)) from None


#: A mid-stream error arrives on the stream's 200 response: its type says what it was.
_STATUS = {"invalid_request_error": 400, "authentication_error": 401, "permission_error": 403, "not_found_error": 404,
           "request_too_large": 413, "rate_limit_error": 429, "api_error": 500, "overloaded_error": 529}


def _status(exc: anthropic.APIStatusError) -> int:
    if exc.status_code != 200:
        return exc.status_code
    error = exc.body.get("error") if isinstance(exc.body, dict) else None
    return _STATUS.get(error.get("type") if isinstance(error, dict) else "", 500)


def adapter() -> ReferenceAdapter:
    return ReferenceAdapter(
        name="reference-kernel/anthropic-sdk",
        dialects=["anthropic"],
        model=lambda doubles: AnthropicSDKModel(
            doubles.http_model.base_url("anthropic"), doubles.http_model.api_key, doubles.scenario.model.name
        ),
    )
