"""The OpenAI Responses dialect (``POST /v1/responses``).

Pure translation, no I/O: a Responses body (``instructions``, ``input`` as a string or a list of
items) to the suite's model request, and the model double's chunks to the Responses stream
(``response.created``, ``response.output_item.added`` / ``.done``, ``response.content_part.*``,
``response.output_text.delta`` / ``.done``, ``response.function_call_arguments.delta`` /
``.done``, ``response.completed``) or one ``response`` body.

What Responses cannot carry (``conformance/catalog/readings.toml``, dialect ``openai-responses``):
a tool result's error flag (``function_call_output`` is text); separate usage events (one
``usage`` per call, on ``response.completed``); the HTTP status of an error after the stream
started (an ``error`` event, then ``response.failed``). The served model keeps no state:
``previous_response_id`` is refused (send the whole input).
"""

from __future__ import annotations

import json
from typing import Any

from conformance.httpmodel.dialect import BadRequest, halves, text_of
from conformance.httpmodel.openai_chat import error_body

__all__ = ["Encoder", "encoder", "error_body", "request", "streaming"]

JSON = dict[str, Any]

NAME = "openai-responses"


def _arguments(raw: Any) -> Any:
    try:
        return json.loads(raw) if raw else {}
    except (TypeError, ValueError):
        return raw


def _items(value: Any) -> list[JSON]:
    if isinstance(value, str):
        return [{"type": "message", "role": "user", "content": value}]
    if not isinstance(value, list):
        raise BadRequest("input: expected a string or a list of items")
    return [v for v in value if isinstance(v, dict)]


def request(body: JSON) -> JSON:
    """A Responses body as the suite's model request ``{"messages", "tools", "params"}``: an
    assistant message and the function calls after it are one suite message."""
    if body.get("previous_response_id"):
        raise BadRequest("previous_response_id: the served model keeps no responses; send the whole input")
    if "input" not in body:
        raise BadRequest("input: required")
    messages: list[JSON] = []
    if body.get("instructions"):
        messages.append({"role": "system", "text": text_of(body["instructions"])})
    for i, item in enumerate(_items(body.get("input"))):
        kind = item.get("type", "message")
        if kind == "function_call":
            last = messages[-1] if messages and messages[-1]["role"] == "assistant" else None
            if last is None:
                last = {"role": "assistant"}
                messages.append(last)
            last.setdefault("tool_calls", []).append(
                {"id": item.get("call_id"), "name": item.get("name"), "args": _arguments(item.get("arguments"))}
            )
        elif kind == "function_call_output":
            messages.append({"role": "tool_result", "call_id": item.get("call_id"), "content": text_of(item.get("output"))})
        elif kind == "message":
            role = item.get("role")
            text = text_of(item.get("content"))
            if role == "assistant":
                messages.append({"role": "assistant", **({"text": text} if text else {})})
            elif role in ("system", "developer", "user"):
                messages.append({"role": "user" if role == "user" else "system", "text": text})
            else:
                raise BadRequest(f"input[{i}].role: expected user, system, developer or assistant, got {role!r}")
        # reasoning and other items carry nothing the suite's request has
    tools = [
        {
            "name": t.get("name"),
            "description": t.get("description") or "",
            "input_schema": t.get("parameters") or {"type": "object"},
        }
        for t in body.get("tools") or []
        if isinstance(t, dict) and t.get("type", "function") == "function"
    ]
    skip = {"model", "input", "instructions", "tools", "stream", "stream_options", "tool_choice", "store"}
    return {"messages": messages, "tools": tools, "params": {k: v for k, v in body.items() if k not in skip}}


def streaming(body: JSON) -> bool:
    return bool(body.get("stream"))


def encoder(model: str, ident: str, body: JSON) -> Encoder:
    return Encoder(model, ident)


class Encoder:
    """The chunks of one model call as a Responses answer (see ``anthropic.Encoder``)."""

    def __init__(self, model: str, ident: str) -> None:
        self.model = model
        self.id = f"resp_{ident}"
        self.output: list[JSON] = []
        self._open_text: int | None = None
        self._started = False
        self._seq = 0
        self._usage = {"input": 0, "output": 0, "cached": 0}

    def _event(self, kind: str, **fields: Any) -> JSON:
        event = {"type": kind, "sequence_number": self._seq, **fields}
        self._seq += 1
        return event

    def response(self, status: str) -> JSON:
        prompt = self._usage["input"] + self._usage["cached"]
        return {
            "id": self.id,
            "object": "response",
            "created_at": 0,
            "status": status,
            "model": self.model,
            "output": self.output if status != "in_progress" else [],
            "parallel_tool_calls": True,
            "tool_choice": "auto",
            "tools": [],
            "usage": {
                "input_tokens": prompt,
                "input_tokens_details": {"cached_tokens": self._usage["cached"]},
                "output_tokens": self._usage["output"],
                "output_tokens_details": {"reasoning_tokens": 0},
                "total_tokens": prompt + self._usage["output"],
            }
            if status != "in_progress"
            else None,
        }

    def _start(self) -> list[JSON]:
        if self._started:
            return []
        self._started = True
        return [self._event("response.created", response=self.response("in_progress"))]

    def _close_text(self) -> list[JSON]:
        if self._open_text is None:
            return []
        index, self._open_text = self._open_text, None
        item = self.output[index]
        item["status"] = "completed"
        part = item["content"][0]
        return [
            self._event("response.output_text.done", item_id=item["id"], output_index=index, content_index=0, text=part["text"], logprobs=[]),
            self._event("response.content_part.done", item_id=item["id"], output_index=index, content_index=0, part=part),
            self._event("response.output_item.done", output_index=index, item=item),
        ]

    def events(self, chunk: JSON) -> list[JSON]:
        kind = chunk.get("type")
        if kind == "usage":
            self._usage["input"] += int(chunk.get("input_tokens") or 0)
            self._usage["output"] += int(chunk.get("output_tokens") or 0)
            self._usage["cached"] += int(chunk.get("cached_input_tokens") or 0)
            return []
        out = self._start()
        if kind == "text":
            text = str(chunk.get("text", ""))
            if self._open_text is None:
                self._open_text = index = len(self.output)
                item_id = f"msg_{self.id}_{index}"
                self.output.append({"type": "message", "id": item_id, "status": "in_progress", "role": "assistant",
                                    "content": [{"type": "output_text", "text": "", "annotations": []}]})
                out.append(self._event("response.output_item.added", output_index=index,
                                       item={"type": "message", "id": item_id, "status": "in_progress", "role": "assistant", "content": []}))
                out.append(self._event("response.content_part.added", item_id=item_id, output_index=index, content_index=0,
                                       part={"type": "output_text", "text": "", "annotations": []}))
            index = self._open_text
            item = self.output[index]
            item["content"][0]["text"] += text
            out.append(self._event("response.output_text.delta", item_id=item["id"], output_index=index, content_index=0, delta=text, logprobs=[]))
        elif kind == "tool_use":
            out += self._close_text()
            index = len(self.output)
            raw = str(chunk.get("input_json") or "")
            item = {"type": "function_call", "id": f"fc_{self.id}_{index}", "call_id": chunk.get("id"), "name": chunk.get("name"),
                    "arguments": "", "status": "in_progress"}
            out.append(self._event("response.output_item.added", output_index=index, item=dict(item)))
            for part in halves(raw):
                out.append(self._event("response.function_call_arguments.delta", item_id=item["id"], output_index=index, delta=part))
            item.update(arguments=raw, status="completed")
            self.output.append(item)
            out.append(self._event("response.function_call_arguments.done", item_id=item["id"], output_index=index, arguments=raw))
            out.append(self._event("response.output_item.done", output_index=index, item=item))
        return out

    @staticmethod
    def _frames(events: list[JSON]) -> bytes:
        return b"".join(f"event: {e['type']}\ndata: {json.dumps(e, ensure_ascii=False)}\n\n".encode() for e in events)

    def chunk(self, chunk: JSON) -> bytes:
        return self._frames(self.events(chunk))

    def end(self) -> bytes:
        events = self._start() + self._close_text()
        events.append(self._event("response.completed", response=self.response("completed")))
        return self._frames(events)

    def error(self, status: int, message: str) -> bytes:
        body = error_body(status, message)["error"]
        failed = {**self.response("failed"), "error": {"code": str(body["code"]), "message": message}}
        return self._frames([
            self._event("error", code=str(status), message=message, param=None),
            self._event("response.failed", response=failed),
        ])

    def body(self) -> JSON:
        self._close_text()
        return self.response("completed")
