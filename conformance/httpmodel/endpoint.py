"""The scripted chat-completions endpoint: routing, one scripted answer per call, recording.

Transport-free: ``handle(method, path, body)`` returns a :class:`Reply` that the loopback server
writes to a socket and the respx router turns into an ``httpx.Response``. Calls take the script's
responses in order, whatever the transport, and every chat request is recorded (in memory and,
with ``record``, as one JSON line per request) so checks can read what the kernel sent.
"""

from __future__ import annotations

import json
import threading
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from pydantic import TypeAdapter, ValidationError

from conformance.harness.doubles import split_text
from conformance.httpmodel import translate
from conformance.boundary.scenario import ModelDef, ModelResponse, Scenario

JSON = dict[str, Any]

_RESPONSES = TypeAdapter(list[ModelResponse])


class ScriptError(ValueError):
    """A model script that cannot be used; the message names the file and the bad field."""


def load_script(source: str | Path | list[Any] | JSON, *, where: str | None = None) -> ModelDef:
    """A script as a :class:`ModelDef`, from a file or parsed JSON.

    Accepted shapes: a bare list of ``ModelResponse``; a ``ModelDef`` (``{"name", "pricing",
    "responses"}``); a whole ``Scenario`` (its ``model`` is used).
    """
    if isinstance(source, (str, Path)):
        path = Path(source)
        where = where or str(path)
        try:
            data: Any = json.loads(path.read_text(encoding="utf-8"))
        except OSError as exc:
            raise ScriptError(f"model script {where}: cannot read it ({exc.strerror or exc})") from None
        except ValueError as exc:
            raise ScriptError(f"model script {where}: not valid JSON ({exc})") from None
        except RecursionError:
            raise ScriptError(f"model script {where}: nested too deeply") from None
    else:
        data, where = source, where or "(inline)"
    try:
        if isinstance(data, list):
            return ModelDef(responses=_RESPONSES.validate_python(data))
        if isinstance(data, dict) and "profile" in data and "name" in data:
            return Scenario.model_validate(data).model
        if isinstance(data, dict):
            return ModelDef.model_validate(data)
    except ValidationError as exc:
        err = exc.errors()[0]
        loc = ".".join(str(p) for p in err.get("loc", ())) or "(root)"
        raise ScriptError(f"model script {where}: {loc}: {err.get('msg')}") from None
    except RecursionError:
        raise ScriptError(f"model script {where}: nested too deeply") from None
    raise ScriptError(f"model script {where}: expected a list of responses, a model or a scenario")


@dataclass
class Reply:
    """What to answer: a JSON body, or SSE frames (then ``block``: never finish the stream)."""

    status: int = 200
    json: JSON | None = None
    events: list[bytes] = field(default_factory=list)
    block: bool = False

    @property
    def streaming(self) -> bool:
        return self.json is None


def from_chat_message(message: JSON) -> JSON:
    """A chat-completions message back in our 001 shape (for comparing with the scripted model's
    requests). ``is_error`` of a tool result does not travel over chat completions."""
    role = message.get("role")
    content = message.get("content")
    if isinstance(content, list):  # content parts
        content = "".join(p.get("text", "") for p in content if isinstance(p, dict))
    if role in ("system", "user", "developer"):
        return {"role": "system" if role == "developer" else role, "text": content or ""}
    if role == "tool":
        return {"role": "tool_result", "call_id": message.get("tool_call_id"), "content": content or ""}
    out: JSON = {"role": role}
    if content:
        out["text"] = content
    calls = []
    for call in message.get("tool_calls") or []:
        function = call.get("function") or {}
        raw = function.get("arguments") or ""
        try:
            args: Any = json.loads(raw) if raw else {}
        except ValueError:
            args = raw
        calls.append({"id": call.get("id"), "name": function.get("name"), "args": args})
    if calls:
        out["tool_calls"] = calls
    return out


def from_chat_request(body: JSON) -> JSON:
    """A chat-completions body as our model request ``{"messages", "tools", "params"}``."""
    tools = []
    for tool in body.get("tools") or []:
        function = tool.get("function") or {}
        tools.append(
            {
                "name": function.get("name"),
                "description": function.get("description", ""),
                "input_schema": function.get("parameters") or {"type": "object"},
            }
        )
    skip = {"model", "messages", "tools", "stream", "stream_options", "tool_choice"}
    return {
        "messages": [from_chat_message(m) for m in body.get("messages") or []],
        "tools": tools,
        "params": {k: v for k, v in body.items() if k not in skip},
    }


class ScriptedEndpoint:
    """One scripted model behind an OpenAI-compatible API. Safe to call from many threads."""

    def __init__(self, script: ModelDef | list[ModelResponse], *, record: str | Path | None = None) -> None:
        model = script if isinstance(script, ModelDef) else ModelDef(responses=list(script))
        self.model = model.name
        self._script = translate.expand(model.responses)
        self._lock = threading.Lock()
        self._calls = 0
        self.requests: list[JSON] = []
        self._record = Path(record) if record is not None else None
        if self._record is not None:
            self._record.write_text("", encoding="utf-8")

    @property
    def calls(self) -> int:
        """Chat requests answered so far."""
        return self._calls

    @property
    def scripted_calls(self) -> int:
        """Model calls the script covers (``repeat`` unrolled)."""
        return len(self._script)

    def _log(self, entry: JSON) -> None:
        self.requests.append(entry)
        if self._record is not None:
            with self._record.open("a", encoding="utf-8") as f:
                f.write(json.dumps(entry, ensure_ascii=False) + "\n")

    def handle(self, method: str, path: str, body: bytes) -> Reply:
        route = path.split("?", 1)[0].rstrip("/")
        if route.startswith("/v1/"):
            route = route[3:]
        if route == "/models":
            if method != "GET":
                return Reply(405, translate.error_body(405, f"{method} is not allowed on {path}"))
            return Reply(json={"object": "list", "data": [{"id": self.model, "object": "model", "created": 0, "owned_by": "akc"}]})
        if route != "/chat/completions":
            return Reply(404, translate.error_body(404, f"no route {method} {path}"))
        if method != "POST":
            return Reply(405, translate.error_body(405, f"{method} is not allowed on {path}"))
        try:
            request = json.loads(body or b"null")
        except ValueError as exc:
            return Reply(400, translate.error_body(400, f"request body is not valid JSON: {exc}"))
        if not isinstance(request, dict) or not isinstance(request.get("messages"), list):
            return Reply(400, translate.error_body(400, "request body must be an object with a 'messages' list"))
        return self._chat(request)

    def _chat(self, request: JSON) -> Reply:
        stream = bool(request.get("stream"))
        include_usage = bool((request.get("stream_options") or {}).get("include_usage"))
        with self._lock:
            index = self._calls
            self._calls += 1
            scripted = index < len(self._script)
            response, repetition = self._script[index] if scripted else translate.exhausted(index - len(self._script))
            self._log(
                {
                    "index": index,
                    "model": request.get("model"),
                    "stream": stream,
                    "messages": request.get("messages"),
                    "tools": request.get("tools") or [],
                    "request": from_chat_request(request),
                    "exhausted": not scripted,
                }
            )
        if response.block_until_cancelled:
            # Like the scripted model: the text streams, then the answer never finishes (a plain
            # JSON request gets the headers and then waits the same way).
            if not stream:
                return Reply(block=True)
            groups, _ = translate.stream_groups(response, index, repetition, self.model, include_usage)
            n_text = len(split_text(response.text, response.chunks)) if response.text else 0
            return Reply(events=[translate.sse(e) for g in groups[:n_text] for e in g], block=True)
        error = response.error
        if error is not None and (not stream or error.after_chunks == 0):
            return Reply(error.status, translate.error_body(error.status, error.message))
        if not stream:
            return Reply(json=translate.completion(response, index, repetition, self.model))
        groups, tail = translate.stream_groups(response, index, repetition, self.model, include_usage)
        if error is not None:
            head = [e for g in groups[: error.after_chunks] for e in g]
            frames = [translate.sse(e) for e in head]
            frames.append(translate.sse(translate.mid_stream_error(error)))
            return Reply(events=frames)
        frames = [translate.sse(e) for g in groups for e in g] + [translate.sse(e) for e in tail]
        frames.append(translate.sse("[DONE]"))
        return Reply(events=frames)
