"""The OpenAI Chat Completions dialect (``POST /v1/chat/completions``).

Pure translation, no I/O: a chat-completions body to the suite's model request, and the model
double's chunks to ``chat.completion.chunk`` SSE events (``data: [DONE]`` last) or one
``chat.completion`` body.

What Chat Completions cannot carry (``conformance/catalog/readings.toml``, dialect
``openai-chat``): a tool result's error flag (a ``tool`` message is text only: the suite's message
has no ``is_error``); separate usage events (one ``usage`` per call, the sum, and in a stream only
when ``stream_options.include_usage`` asks for it); the HTTP status of an error after the stream
started (an ``{"error"}`` event whose ``code`` carries it).
"""

from __future__ import annotations

import json
from typing import Any

from conformance.httpmodel.dialect import BadRequest, halves, text_of

JSON = dict[str, Any]

NAME = "openai-chat"

#: OpenAI's error ``type`` per HTTP status (anything else ≥ 500 is ``server_error``).
ERROR_TYPES = {
    400: "invalid_request_error",
    401: "authentication_error",
    403: "permission_error",
    404: "not_found_error",
    409: "conflict_error",
    422: "invalid_request_error",
    429: "rate_limit_error",
}


def error_body(status: int, message: str) -> JSON:
    """OpenAI's error shape. ``code`` carries the HTTP status so a mid-stream error keeps it."""
    kind = ERROR_TYPES.get(status, "server_error" if status >= 500 else "invalid_request_error")
    return {"error": {"message": message, "type": kind, "code": status, "param": None}}


#: Parsed arguments by their JSON text: a kernel re-sends its whole history with every call.
_PARSED: dict[str, Any] = {}


def _arguments(raw: Any) -> Any:
    if not raw:
        return {}
    if not isinstance(raw, str):
        return raw
    parsed = _PARSED.get(raw)
    if parsed is None:
        try:
            parsed = json.loads(raw)
        except ValueError:
            return raw
        if len(_PARSED) > 4096:
            _PARSED.clear()
        _PARSED[raw] = parsed
    return parsed


def message(m: Any, i: int) -> JSON:
    """One chat-completions message in the suite's shape (``developer`` is ``system``)."""
    if not isinstance(m, dict):
        raise BadRequest(f"messages[{i}]: expected an object")
    role = m.get("role")
    content = text_of(m.get("content"))
    if role in ("system", "developer", "user"):
        return {"role": "user" if role == "user" else "system", "text": content}
    if role == "tool":
        return {"role": "tool_result", "call_id": m.get("tool_call_id"), "content": content}
    if role != "assistant":
        raise BadRequest(f"messages[{i}].role: expected system, developer, user, assistant or tool, got {role!r}")
    out: JSON = {"role": "assistant"}
    if content:
        out["text"] = content
    calls = []
    for call in m.get("tool_calls") or []:
        function = call.get("function") or {} if isinstance(call, dict) else {}
        calls.append({"id": call.get("id"), "name": function.get("name"), "args": _arguments(function.get("arguments"))})
    if calls:
        out["tool_calls"] = calls
    return out


def request(body: JSON) -> JSON:
    """A chat-completions body as the suite's model request ``{"messages", "tools", "params"}``."""
    messages = body.get("messages")
    if not isinstance(messages, list):
        raise BadRequest("messages: required, a list")
    tools = []
    for tool in body.get("tools") or []:
        function = (tool.get("function") or {}) if isinstance(tool, dict) else {}
        tools.append(
            {
                "name": function.get("name"),
                "description": function.get("description", ""),
                "input_schema": function.get("parameters") or {"type": "object"},
            }
        )
    skip = {"model", "messages", "tools", "stream", "stream_options", "tool_choice"}
    return {
        "messages": [message(m, i) for i, m in enumerate(messages)],
        "tools": tools,
        "params": {k: v for k, v in body.items() if k not in skip},
    }


def streaming(body: JSON) -> bool:
    return bool(body.get("stream"))


def encoder(model: str, ident: str, body: JSON) -> Encoder:
    return Encoder(model, ident, bool((body.get("stream_options") or {}).get("include_usage")))


def _sse(data: JSON | str) -> bytes:
    text = data if isinstance(data, str) else json.dumps(data, ensure_ascii=False)
    return f"data: {text}\n\n".encode()


class Encoder:
    """The chunks of one model call as a chat-completions answer (see ``anthropic.Encoder``)."""

    def __init__(self, model: str, completion_id: str, include_usage: bool = False) -> None:
        self.model = model
        self.id = f"chatcmpl-{completion_id}"
        self.include_usage = include_usage
        self.text = ""
        self.calls: list[JSON] = []
        self._role_sent = False
        self._usage = {"input": 0, "output": 0, "cached": 0}

    def _chunk(self, delta: JSON, finish: str | None = None) -> JSON:
        if not self._role_sent and delta:
            delta = {"role": "assistant", **delta}
            self._role_sent = True
        return {
            "id": self.id,
            "object": "chat.completion.chunk",
            "created": 0,
            "model": self.model,
            "choices": [{"index": 0, "delta": delta, "finish_reason": finish}],
        }

    def events(self, chunk: JSON) -> list[JSON]:
        kind = chunk.get("type")
        if kind == "usage":
            self._usage["input"] += int(chunk.get("input_tokens") or 0)
            self._usage["output"] += int(chunk.get("output_tokens") or 0)
            self._usage["cached"] += int(chunk.get("cached_input_tokens") or 0)
            return []
        if kind == "text":
            text = str(chunk.get("text", ""))
            self.text += text
            return [self._chunk({"content": text})]
        if kind == "tool_use":
            pos = len(self.calls)
            raw = str(chunk.get("input_json") or "")
            self.calls.append({"id": chunk.get("id"), "type": "function", "function": {"name": chunk.get("name"), "arguments": raw}})
            out = []
            for i, part in enumerate(halves(raw)):
                entry: JSON = {"index": pos, "function": {"arguments": part}}
                if i == 0:
                    entry = {"index": pos, "id": chunk.get("id"), "type": "function", "function": {"name": chunk.get("name"), "arguments": part}}
                out.append(self._chunk({"tool_calls": [entry]}))
            return out
        return []

    def chunk(self, chunk: JSON) -> bytes:
        return b"".join(_sse(e) for e in self.events(chunk))

    def usage(self) -> JSON:
        """``prompt_tokens`` includes the cached part, as OpenAI reports it."""
        prompt = self._usage["input"] + self._usage["cached"]
        return {
            "prompt_tokens": prompt,
            "completion_tokens": self._usage["output"],
            "total_tokens": prompt + self._usage["output"],
            "prompt_tokens_details": {"cached_tokens": self._usage["cached"]},
        }

    @property
    def finish_reason(self) -> str:
        return "tool_calls" if self.calls else "stop"

    def end(self) -> bytes:
        frames = [_sse(self._chunk({}, self.finish_reason))]
        if self.include_usage:
            frames.append(_sse({"id": self.id, "object": "chat.completion.chunk", "created": 0, "model": self.model, "choices": [], "usage": self.usage()}))
        frames.append(_sse("[DONE]"))
        return b"".join(frames)

    def error(self, status: int, message: str) -> bytes:
        return _sse(error_body(status, message))

    def body(self) -> JSON:
        message: JSON = {"role": "assistant", "content": self.text or None}
        if self.calls:
            message["tool_calls"] = self.calls
        return {
            "id": self.id,
            "object": "chat.completion",
            "created": 0,
            "model": self.model,
            "choices": [{"index": 0, "message": message, "finish_reason": self.finish_reason}],
            "usage": self.usage(),
        }
