"""The Anthropic Messages dialect (``POST /v1/messages``, ``/v1/messages/count_tokens``).

Pure translation, no I/O: a Messages request body to the suite's model request, and the model
double's chunks (``{"type": "text" | "tool_use" | "usage"}``, see ``conformance.harness.doubles``)
to the Messages answer — the SSE event sequence the ``anthropic`` SDK parses (``message_start``,
``content_block_start`` / ``content_block_delta`` (``text_delta``, ``input_json_delta``) /
``content_block_stop``, ``message_delta`` with ``stop_reason`` and usage, ``message_stop``) or
one ``message`` body.

What Messages cannot carry (``conformance/catalog/readings.toml``, dialect ``anthropic``): usage
is one cumulative figure per call (the first usage chunk rides on ``message_start``, the total on
``message_delta``), not a stream of separate usage events; an error after the stream started is an
``error`` event with the error's ``type``, not its HTTP status.
"""

from __future__ import annotations

import json
from typing import Any

from conformance.httpmodel.dialect import BadRequest, halves, text_of

JSON = dict[str, Any]

NAME = "anthropic"

#: Anthropic's error ``type`` per HTTP status (anything else ≥ 500 is ``api_error``).
ERROR_TYPES = {
    400: "invalid_request_error",
    401: "authentication_error",
    403: "permission_error",
    404: "not_found_error",
    413: "request_too_large",
    429: "rate_limit_error",
    529: "overloaded_error",
}


def error_body(status: int, message: str) -> JSON:
    kind = ERROR_TYPES.get(status, "api_error" if status >= 500 else "invalid_request_error")
    return {"type": "error", "error": {"type": kind, "message": message}}


def _blocks(content: Any, where: str) -> list[JSON]:
    if isinstance(content, str):
        return [{"type": "text", "text": content}]
    if not isinstance(content, list):
        raise BadRequest(f"{where}.content: expected a string or a list of content blocks")
    return [b for b in content if isinstance(b, dict)]


def _message(message: Any, i: int) -> list[JSON]:
    """One Messages message as the suite's messages (a user turn may carry several tool results
    and text: one suite message each, in block order)."""
    where = f"messages[{i}]"
    if not isinstance(message, dict):
        raise BadRequest(f"{where}: expected an object")
    role = message.get("role")
    blocks = _blocks(message.get("content"), where)
    if role == "assistant":
        out: JSON = {"role": "assistant"}
        text = "".join(b.get("text", "") for b in blocks if b.get("type") == "text")
        if text:
            out["text"] = text
        calls = [
            {"id": b.get("id"), "name": b.get("name"), "args": b.get("input")}
            for b in blocks
            if b.get("type") == "tool_use"
        ]
        if calls:
            out["tool_calls"] = calls
        return [out]
    if role == "system":  # Claude Code sends its environment notes as a system message in the list
        return [{"role": "system", "text": "".join(b.get("text", "") for b in blocks if b.get("type") == "text")}]
    if role != "user":
        raise BadRequest(f"{where}.role: expected 'user' or 'assistant', got {role!r}")
    out_list: list[JSON] = []
    text_parts: list[str] = []
    for b in blocks:
        if b.get("type") == "tool_result":
            if text_parts:
                out_list.append({"role": "user", "text": "".join(text_parts)})
                text_parts = []
            out_list.append(
                {
                    "role": "tool_result",
                    "call_id": b.get("tool_use_id"),
                    "content": text_of(b.get("content")),
                    "is_error": bool(b.get("is_error", False)),
                }
            )
        elif b.get("type") == "text":
            text_parts.append(str(b.get("text", "")))
    if text_parts or not out_list:
        out_list.append({"role": "user", "text": "".join(text_parts)})
    return out_list


def request(body: JSON) -> JSON:
    """A Messages body as the suite's model request ``{"messages", "tools", "params"}``."""
    messages = body.get("messages")
    if not isinstance(messages, list):
        raise BadRequest("messages: required, a list")
    out: list[JSON] = []
    system = body.get("system")
    if system:
        out.append({"role": "system", "text": text_of(system)})
    for i, m in enumerate(messages):
        out.extend(_message(m, i))
    tools = [
        {
            "name": t.get("name"),
            "description": t.get("description", ""),
            "input_schema": t.get("input_schema") or {"type": "object"},
        }
        for t in body.get("tools") or []
        if isinstance(t, dict)
    ]
    skip = {"model", "messages", "system", "tools", "stream", "tool_choice"}
    return {"messages": out, "tools": tools, "params": {k: v for k, v in body.items() if k not in skip}}


def streaming(body: JSON) -> bool:
    return bool(body.get("stream"))


def count_tokens(body: JSON) -> JSON:
    """``/v1/messages/count_tokens``: a rough count (a quarter of the request's JSON length); the
    suite's requirements never depend on it, but kernels that call it must get an answer."""
    size = len(json.dumps([body.get("system"), body.get("messages"), body.get("tools")], ensure_ascii=False))
    return {"input_tokens": max(1, size // 4)}


def encoder(model: str, ident: str, body: JSON) -> Encoder:
    return Encoder(model, f"msg_{ident}")


def _frame(event: JSON) -> bytes:
    return f"event: {event['type']}\ndata: {json.dumps(event, ensure_ascii=False)}\n\n".encode()


class Encoder:
    """The chunks of one model call as a Messages answer: SSE frames per chunk (``chunk``,
    ``end``, ``error``) or, fed the same chunks, the one JSON body (``body``)."""

    def __init__(self, model: str, message_id: str) -> None:
        self.model = model
        self.message_id = message_id
        self.content: list[JSON] = []
        self._open_text: int | None = None
        self._started = False
        self._usage = {"input_tokens": 0, "output_tokens": 0, "cache_read_input_tokens": 0}

    def _add_usage(self, chunk: JSON) -> None:
        self._usage["input_tokens"] += int(chunk.get("input_tokens") or 0)
        self._usage["output_tokens"] += int(chunk.get("output_tokens") or 0)
        self._usage["cache_read_input_tokens"] += int(chunk.get("cached_input_tokens") or 0)

    def _start(self) -> list[JSON]:
        if self._started:
            return []
        self._started = True
        message = {
            "id": self.message_id,
            "type": "message",
            "role": "assistant",
            "model": self.model,
            "content": [],
            "stop_reason": None,
            "stop_sequence": None,
            "usage": {**self._usage, "cache_creation_input_tokens": 0},
        }
        return [{"type": "message_start", "message": message}]

    def _close_text(self) -> list[JSON]:
        if self._open_text is None:
            return []
        index, self._open_text = self._open_text, None
        return [{"type": "content_block_stop", "index": index}]

    def events(self, chunk: JSON) -> list[JSON]:
        kind = chunk.get("type")
        if kind == "usage":
            first = not self._started
            self._add_usage(chunk)
            return self._start() if first else []  # later usage: in message_delta's total
        out = self._start()
        if kind == "text":
            text = str(chunk.get("text", ""))
            if self._open_text is None:
                self._open_text = len(self.content)
                self.content.append({"type": "text", "text": ""})
                out.append({"type": "content_block_start", "index": self._open_text, "content_block": {"type": "text", "text": ""}})
            self.content[self._open_text]["text"] += text
            out.append({"type": "content_block_delta", "index": self._open_text, "delta": {"type": "text_delta", "text": text}})
        elif kind == "tool_use":
            out += self._close_text()
            index = len(self.content)
            raw = str(chunk.get("input_json") or "")
            try:
                args: Any = json.loads(raw) if raw else {}
            except ValueError:
                args = raw  # malformed arguments stay malformed (the kernel must cope)
            self.content.append({"type": "tool_use", "id": chunk.get("id"), "name": chunk.get("name"), "input": args})
            start = {"type": "tool_use", "id": chunk.get("id"), "name": chunk.get("name"), "input": {}}
            out.append({"type": "content_block_start", "index": index, "content_block": start})
            for part in halves(raw):
                out.append({"type": "content_block_delta", "index": index, "delta": {"type": "input_json_delta", "partial_json": part}})
            out.append({"type": "content_block_stop", "index": index})
        return out

    def chunk(self, chunk: JSON) -> bytes:
        return b"".join(_frame(e) for e in self.events(chunk))

    @property
    def stop_reason(self) -> str:
        return "tool_use" if any(b["type"] == "tool_use" for b in self.content) else "end_turn"

    def end(self) -> bytes:
        events = self._start() + self._close_text()
        events.append(
            {"type": "message_delta", "delta": {"stop_reason": self.stop_reason, "stop_sequence": None}, "usage": dict(self._usage)}
        )
        events.append({"type": "message_stop"})
        return b"".join(_frame(e) for e in events)

    def error(self, status: int, message: str) -> bytes:
        return _frame(error_body(status, message))

    def body(self) -> JSON:
        return {
            "id": self.message_id,
            "type": "message",
            "role": "assistant",
            "model": self.model,
            "content": self.content,
            "stop_reason": self.stop_reason,
            "stop_sequence": None,
            "usage": {**self._usage, "cache_creation_input_tokens": 0},
        }
