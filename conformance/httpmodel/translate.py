"""Our scripted model responses as OpenAI chat-completions answers: JSON bodies and SSE events.

Pure functions, no I/O: the loopback server and the respx router both serve what these build, so
a kernel sees byte-for-byte the same endpoint in and out of process. Tool call ids follow the
scripted model's rule (``conformance.harness.doubles``): unset → ``c<call index>_<position>``; a
``repeat``-ed response gets a ``_r<k>`` suffix.
"""

from __future__ import annotations

import json
from typing import Any

from conformance.harness.doubles import exhausted_response, split_text
from conformance.boundary.scenario import ModelError, ModelResponse, ScriptedToolCall

JSON = dict[str, Any]

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


def expand(responses: list[ModelResponse]) -> list[tuple[ModelResponse, int]]:
    """One entry per model call: (response, repetition), ``repeat`` unrolled."""
    return [(r, k) for r in responses for k in range(max(1, r.repeat))]


def exhausted(past_end: int = 0) -> tuple[ModelResponse, int]:
    """What a call past the end of the script gets (what the scripted model answers)."""
    return exhausted_response(past_end), 0


def call_id(call: ScriptedToolCall, index: int, pos: int, repetition: int) -> str:
    if call.id is None:
        return f"c{index}_{pos}"
    return call.id if repetition == 0 else f"{call.id}_r{repetition}"


def _arguments(call: ScriptedToolCall) -> str:
    return call.raw_args if call.raw_args is not None else json.dumps(call.args or {})


def error_body(status: int, message: str) -> JSON:
    """OpenAI's error shape. ``code`` carries the HTTP status so a mid-stream error keeps it."""
    kind = ERROR_TYPES.get(status, "server_error" if status >= 500 else "invalid_request_error")
    return {"error": {"message": message, "type": kind, "code": status, "param": None}}


def usage_of(response: ModelResponse) -> JSON:
    """``prompt_tokens`` includes the cached part, as OpenAI reports it."""
    u = response.usage
    prompt = u.input_tokens + u.cached_input_tokens
    return {
        "prompt_tokens": prompt,
        "completion_tokens": u.output_tokens,
        "total_tokens": prompt + u.output_tokens,
        "prompt_tokens_details": {"cached_tokens": u.cached_input_tokens},
    }


def _tool_calls(response: ModelResponse, index: int, repetition: int) -> list[JSON]:
    return [
        {
            "id": call_id(call, index, pos, repetition),
            "type": "function",
            "function": {"name": call.name, "arguments": _arguments(call)},
        }
        for pos, call in enumerate(response.tool_calls)
    ]


def completion(response: ModelResponse, index: int, repetition: int, model: str) -> JSON:
    """The non-streaming ``chat.completion`` body."""
    calls = _tool_calls(response, index, repetition)
    message: JSON = {"role": "assistant", "content": response.text}
    if calls:
        message["tool_calls"] = calls
    return {
        "id": f"chatcmpl-{index}",
        "object": "chat.completion",
        "created": 0,
        "model": model,
        "choices": [{"index": 0, "message": message, "finish_reason": "tool_calls" if calls else "stop"}],
        "usage": usage_of(response),
    }


def _chunk(index: int, model: str, delta: JSON, finish: str | None = None) -> JSON:
    return {
        "id": f"chatcmpl-{index}",
        "object": "chat.completion.chunk",
        "created": 0,
        "model": model,
        "choices": [{"index": 0, "delta": delta, "finish_reason": finish}],
    }


def _halves(text: str) -> list[str]:
    """Arguments are streamed in two pieces when they can be, so clients must accumulate."""
    if len(text) < 2:
        return [text]
    mid = len(text) // 2
    return [text[:mid], text[mid:]]


def stream_groups(
    response: ModelResponse, index: int, repetition: int, model: str, include_usage: bool
) -> tuple[list[list[JSON]], list[JSON]]:
    """The SSE events of a streamed answer, grouped by the scripted model's chunk they carry.

    Returns (groups, tail): one group per scripted chunk (each text piece, each tool call, the
    usage), so ``after_chunks`` and ``block_until_cancelled`` cut at the same places as the
    in-process scripted model; ``tail`` is the closing event (``finish_reason``) when the usage
    chunk is not requested. The usage group holds the finish event and the usage event.
    """
    groups: list[list[JSON]] = []
    first = True
    for piece in split_text(response.text, response.chunks) if response.text else []:
        delta: JSON = {"content": piece}
        if first:
            delta["role"] = "assistant"
            first = False
        groups.append([_chunk(index, model, delta)])
    for pos, call in enumerate(response.tool_calls):
        parts = _halves(_arguments(call))
        events = []
        for i, part in enumerate(parts):
            entry: JSON = {"index": pos, "function": {"arguments": part}}
            if i == 0:
                entry = {
                    "index": pos,
                    "id": call_id(call, index, pos, repetition),
                    "type": "function",
                    "function": {"name": call.name, "arguments": part},
                }
            delta = {"tool_calls": [entry]}
            if first:
                delta["role"] = "assistant"
                first = False
            events.append(_chunk(index, model, delta))
        groups.append(events)
    finish = _chunk(index, model, {}, "tool_calls" if response.tool_calls else "stop")
    if not include_usage:
        return groups, [finish]
    usage_event = {
        "id": f"chatcmpl-{index}",
        "object": "chat.completion.chunk",
        "created": 0,
        "model": model,
        "choices": [],
        "usage": usage_of(response),
    }
    groups.append([finish, usage_event])
    return groups, []


def sse(event: JSON | str) -> bytes:
    """One SSE frame (``[DONE]`` is passed as the string)."""
    data = event if isinstance(event, str) else json.dumps(event, ensure_ascii=False)
    return f"data: {data}\n\n".encode()


def mid_stream_error(error: ModelError) -> JSON:
    return error_body(error.status, error.message)
