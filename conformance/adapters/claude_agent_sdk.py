"""Claude Code's agent loop (``claude-agent-sdk``, its bundled CLI) as a ``kernel``-profile kernel.
Extra: ``claude-agent-sdk`` (pinned in ``scripts/requirements/claude-agent-sdk.txt``; mapping read
against claude-agent-sdk 0.2.189, the Python source in ``claude_agent_sdk/``).

The kernel is a compiled CLI (``claude_agent_sdk/_bundled/claude``) the SDK runs as a subprocess
and talks to over stdio. It calls its model over HTTP: the harness serves the scenario's model
double in the Anthropic Messages dialect (``doubles.http_model.base_url("anthropic")``,
``docs/http-kernels.md``) and the CLI gets it as ``ANTHROPIC_BASE_URL``, with a scratch ``HOME``
and working folder, telemetry and non-essential traffic off, and every other outbound request
sent to a trap proxy (``HTTPS_PROXY``): a request that reaches the trap, or any request to the
served model but ``/v1/messages`` / ``count_tokens``, fails the run (:class:`LeftLoopback`).

One scenario session is one ``ClaudeSDKClient`` (one CLI process, one Claude Code session); each
user message is one ``client.query(text)`` read up to its ``ResultMessage``. What maps to what:

* Scenario tools → one in-process MCP server of the adapter's own (an ``mcp`` lowlevel ``Server``
  as ``McpSdkServerConfig(type="sdk")``, the SDK's documented way to bring one's own server,
  ``__init__.py:577-583``; it lists and runs the tools as ``create_sdk_mcp_server`` does, input
  schema validated, and can set a result's ``_meta``); Claude Code's own tools are off
  (``tools=[]``). A data-source or resource tool declared concurrency-safe is ``readOnlyHint``
  (Claude Code runs read-only calls of one response together, the others one at a time); an
  interactive tool never is (Claude Code has no tool kinds: a read-only interactive tool would
  run beside the others). Claude Code names them ``mcp__akc__<name>``: the adapter maps that prefix
  away between the CLI's requests and the model double, and back on the double's tool calls (a
  naming map only, like every adapter's message conversion).
* ``session-start`` → the ``UserPromptSubmit`` hook (once per query, before the model);
  ``session-end`` → ``Stop`` (when the agent finishes responding; its input has no status, so the
  payload has no subtype); on a query that ends without ``Stop`` (an interrupt's abort path, a
  failed model call's error path), its ``ResultMessage``, the CLI's own end of the run. ``SessionStart`` / ``SessionEnd`` exist only as settings-file command
  hooks, with no SDK callback in this version (``types.py:324-335``).
* ``context-assemble`` (observe-only) and ``post-model-response`` → the ``turn.step`` hook of a
  plugin hooks module, which the CLI dispatches around every model request (``claude@348429596``;
  a plugin's ``hooks/hooks.json`` naming ``{"modules": [...]}``, ``claude@329510900``). The adapter
  writes that plugin into its scratch folder (the module is ``claude_agent_sdk_hooks.js``) and loads
  it with ``plugins=[{"type": "local", ...}]``; the hook calls the adapter's loopback endpoint
  (:class:`HookBridge`), which runs the chain before the hook goes on: context-assemble with
  ``{"history": $.session.messages({as: "api"}), "budget": {"turns_used": <step index>,
  "cost_usd": $.session.usage().cost.usd}}`` before the request (:func:`assembled_context`), its
  replacement unused (``turn.step`` may change only the request's model and effort,
  ``claude@333437132``); post-model-response with the message assembled from all of ``next(e)``'s
  chunks once the stream ended (:func:`streamed_message`). The loop acts on the chunks the hook
  *yields*, not on the stream: the CLI turns them into the stored assistant message
  (``claude@348416137``; ``claude@348421735`` builds a new block where a yielded text or tool
  differs from the wire's, ``claude@348423151``, ``348423418``), and the hook's return value, the
  step's ``{answer, toolUses, stopReason, usage}``, is only checked (``claude@333437132``): the loop
  reads the chain with ``for await``, which drops it (``claude@348416137``); the bridge's answer
  sets its ``answer`` and ``toolUses`` to the replacement's all the same. So the hook holds the whole response and yields what the bridge answers: the streamed chunks, or a
  replacement in the CLI's own chunk shapes (``{kind: "text" | "tool" | "input", index, …}``,
  ``claude@348427288``; :func:`replied_chunks`) with the stream's ``engine`` chunks passed on
  unchanged, once each (the chunk check refuses an engine ref never pulled or passed on twice,
  ``claude@333437132``). Its stop chunk passes on too (usage kept), its stop reason set to
  ``tool_use`` / ``end_turn`` by whether the replacement calls tools: the loop reads a ``tool_use``
  stop without ``tool_use`` blocks as a failed call and asks the model again (``claude@330626071``).
  Holding the response means no partial text reaches the loop (or the host) before the response
  ended. Cancellation: the hook reports the first text chunk it holds (``model-text``) and a cancel
  at a model call interrupts then (:class:`StreamRelay`); the interrupt aborts the stream the hook
  drains, so the call is abandoned in flight (STOP-002) and the loop, having been handed nothing of
  it, stores nothing of it (STOP-003 passes in this configuration, where the CLI without such a hook
  keeps the partial text, ``claude@343006364``, ``351698941``); STOP-001's and LOOP-018's cancels
  between steps and at tools are untouched by it.
* ``pre-tool-call`` → the ``PreToolUse`` hook (``updatedInput`` with ``permissionDecision: allow``
  for a replaced call); ``post-tool-call`` (observe-only) and ``post-apply`` → the
  ``PostToolBatch`` hook, which Claude Code dispatches once per response with tool calls, after
  every call ended, with every ``tool_use`` block's input and response, denied ones included
  (CLI 2.1.332 ``claude@351339784``; an SDK callback event although ``types.py:324-335``'s
  Literal omits it): post-tool-call once per call in order, then post-apply with the plan of the
  response's resource calls, none vetoed (there is no plan gate).
* The policy precheck → ``can_use_tool`` (Claude Code asks it before every MCP tool not in
  ``allowed_tools``): a deny is ``PermissionResultDeny(message)``, the model gets an error result.
* A terminal tool → its MCP result carries ``_meta: {"claude/endTurn": true}``, Claude Code's own
  tool-ends-the-turn signal (``claude@338970394``): the loop makes no further request and ends the
  turn through its end-of-turn path, Stop hook included (``claude@351486546``). The SDK's own
  server drops ``_meta`` (``__init__.py:633-638``), hence the adapter's server.
* ``max_turns`` / ``max_cost_usd`` → ``max_turns`` / ``max_budget_usd``; the subtype is the
  ``ResultMessage``'s (``success``, ``error_max_turns``, ``error_max_budget_usd``,
  ``error_during_execution``).
* Cancellation → ``ClaudeSDKClient.interrupt()``; a cancel at a model call interrupts once the
  CLI holds some of that call's streamed text (the turn.step hook reports it), as a user presses
  stop on a response under way: the double cannot see the CLI read its socket, and an interrupt
  before the CLI holds the text tests nothing (``docs/adapter.md``, step 3).
* Spans → the CLI's own OpenTelemetry traces (beta: ``CLAUDE_CODE_ENHANCED_TELEMETRY_BETA``),
  exported as OTLP/JSON to a loopback receiver of the adapter: ``claude_code.interaction`` (one per
  prompt: the session run), ``claude_code.llm_request`` (model call), ``claude_code.tool``,
  ``claude_code.hook``. There is no span per turn.
* The journal → the conversation the CLI streamed (user / assistant / tool results).

Absent in Claude Code: a hook that sees or replaces the model request (``pre-model-call``;
``turn.step`` gets no request, ``UserPromptSubmit`` only adds context), ``plan-ready``,
tool kinds and concurrency keys, a doom-loop detector, a wall-clock bound. Sub-agents (``agents=`` / the Task tool) are not wired.
"""

from __future__ import annotations

import copy
import json
import os
import secrets
import tempfile
from importlib import metadata, resources
from typing import Any

import anyio
from anyio.abc import SocketAttribute, SocketStream

from conformance.adapters._common import AdapterBug, Hooks, Run, Session, mapping, mapping_code, parse_args, run_messages
from conformance.boundary.adapter import AdapterInfo, Doubles, Mechanism, Outcome, RunResult, ToolFailed
from conformance.boundary.scenario import Scenario, ToolDef
from conformance.httpmodel.dialect import text_of

SERVER = "akc"
PREFIX = f"mcp__{SERVER}__"
#: How long to wait after the last prompt for the CLI's batched span export.
SPAN_WAIT_S = 3.0
#: How long a cancel at a model call waits for the CLI to hold that call's streamed text.
RELAY_WAIT_S = 5.0
#: The largest request body the adapter's loopback endpoints read (a span batch, a hook's payload).
MAX_BODY = 64 * 1024 * 1024


def _version() -> str:
    try:
        return metadata.version("claude-agent-sdk")
    except metadata.PackageNotFoundError:
        return "not installed"


def _m(kind: str, via: str | None = None, note: str | None = None) -> Mechanism:
    return Mechanism(kind=kind, via=via, note=note)  # type: ignore[arg-type]


MECHANISMS: dict[str, Mechanism] = {
    "session-start": _m("native", "UserPromptSubmit hook (once per query, before its first model call)", "observed only: its output can add context for the model, not change the prompt; SessionStart exists only as a settings-file command hook (types.py:324-335)"),
    "context-assemble": _m("observe-only", "a plugin hooks module's turn.step hook, before each model request: history $.session.messages({as: api}), budget $.session.usage() and the step index", "turn.step may change only the request's model and effort, not its history (claude@333437132)"),
    "pre-model-call": _m("absent", note="turn.step gets its turn, index, model, effort and message count, not the request (tool specs, system prompt), and may change only model and effort; UserPromptSubmit adds context once per prompt"),
    "post-model-response": _m("native", "the same turn.step hook: next(e) drained, the whole response held until the chain ran, then the chain's message yielded: the streamed chunks, or the replacement's text / tool / input chunks with the stream's engine and stop chunks passed on; the loop acts on the chunks the hook yields (claude@348416137, 348421735)", "no partial text reaches the loop or the host before the response ended: a cancel at a model call interrupts once the hook holds text, and the loop stores nothing of the cancelled call"),
    "pre-tool-call": _m("native", "PreToolUse hook (permissionDecision / updatedInput)"),
    "post-tool-call": _m("observe-only", "PostToolBatch hook (once per response, after every call ended)"),
    "session-end": _m("native", "Stop hook (when the agent finishes responding); else the query's ResultMessage", "its input has no status: the payload carries no subtype; SessionEnd exists only as a settings-file command hook (types.py:324-335)"),
    "plan-ready": _m("absent"),
    "post-apply": _m("observe-only", "PostToolBatch hook", "the plan: the response's resource calls, none vetoed (no plan-ready)"),
    "policy_precheck": _m("native", "can_use_tool → PermissionResultDeny(message)"),
    "tool_kinds": _m("absent"),
    "concurrency_keys": _m("absent"),
    "terminal_tool": _m("native", "the tool's MCP result with _meta claude/endTurn"),
    "max_turns": _m("native", "ClaudeAgentOptions.max_turns → subtype error_max_turns"),
    "max_cost_usd": _m("native", "ClaudeAgentOptions.max_budget_usd → subtype error_max_budget_usd", "cost from the CLI's own price table"),
    "final_turn": _m("absent"),
    "doom_loop": _m("absent"),
    "usage": _m("absent", note="token usage per message in the CLI's transcript, no cost; ResultMessage.usage / total_cost_usd is one total per query priced by the CLI's own table, not a cost per usage event from a model's pricing"),
    "spans": _m("native", "the CLI's OpenTelemetry traces (beta), OTLP/JSON to the adapter's receiver", "claude_code.interaction per prompt, llm_request, tool, hook; no turn span"),
    "journal": _m("native", "the session's messages as the CLI streams them"),
    "cancellation": _m("native", "ClaudeSDKClient.interrupt()"),
    "subagents": _m("not-wired", "ClaudeAgentOptions.agents / the Task tool", "the adapter maps no child agents onto them"),
}


def tool_server(scenario: Scenario, run_tool: Any) -> Any:
    """The scenario's tools as an in-process MCP server (``McpSdkServerConfig``): listed and run as
    ``create_sdk_mcp_server`` does (input validated, a failure an error result), except that a
    terminal tool's result carries ``_meta: {"claude/endTurn": true}``, which the SDK's server drops.
    ``run_tool(tool, args)`` returns the result text and whether it is an error."""
    import jsonschema
    from claude_agent_sdk import McpSdkServerConfig
    from mcp.server import Server
    from mcp.types import CallToolResult, ListToolsResult, Tool

    tools = {t.name: t for t in scenario.tools}
    schemas = {t.name: {"type": "object", "properties": {}, **t.input_schema} for t in scenario.tools}
    wire = [
        Tool.model_validate({
            "name": t.name, "description": t.description or t.name, "inputSchema": schemas[t.name],
            # Claude Code runs read-only calls of one response together, the others one at a time;
            # it has no tool kinds, so an interactive tool is never read-only (it would run beside others)
            "annotations": {"readOnlyHint": True} if t.concurrency is not None and t.concurrency.safe and t.kind != "interactive" else None,
        })
        for t in scenario.tools
    ]

    def result(text: str, is_error: bool, meta: dict[str, Any] | None = None) -> Any:
        return CallToolResult.model_validate({"content": [{"type": "text", "text": text}], "isError": is_error, **({"_meta": meta} if meta else {})})

    async def on_list_tools(ctx: Any, params: Any) -> Any:
        return ListToolsResult(tools=wire)

    async def on_call_tool(ctx: Any, params: Any) -> Any:
        tool, args = tools.get(params.name), params.arguments or {}
        if tool is None:
            return result(f"Tool '{params.name}' not found", True)
        try:
            jsonschema.validate(instance=args, schema=schemas[tool.name])
        except jsonschema.ValidationError as exc:
            return result(f"Input validation error: {exc.message}", True)
        text, is_error = await run_tool(tool, args)
        return result(text, is_error, {"claude/endTurn": True} if tool.terminates_turn else None)

    server = Server(SERVER, version="1.0.0", on_list_tools=on_list_tools, on_call_tool=on_call_tool)
    return McpSdkServerConfig(type="sdk", name=SERVER, instance=server)


class LeftLoopback(AdapterBug):
    """The CLI sent a request somewhere other than the served model's ``/v1/messages``."""


# --------------------------------------------------------------------------- names


@mapping_code
def unprefixed_request(request: dict[str, Any]) -> dict[str, Any]:
    """The CLI's request (suite shape) with Claude Code's MCP tool names mapped to the scenario's."""
    out = copy.deepcopy(request)
    for spec in out.get("tools") or []:
        spec["name"] = str(spec.get("name", "")).removeprefix(PREFIX)
    for message in out.get("messages") or []:
        for call in message.get("tool_calls") or []:
            call["name"] = str(call.get("name", "")).removeprefix(PREFIX)
    return out


def prefixed_chunk(chunk: dict[str, Any]) -> dict[str, Any]:
    if chunk.get("type") == "tool_use" and isinstance(chunk.get("name"), str):
        return {**chunk, "name": PREFIX + chunk["name"]}
    return chunk


def name_bridge(doubles: Any, current: dict[str, Any]) -> None:
    """Route the served model's calls through the name map (the host looks ``model_stream`` up
    on the doubles at each call); the call's TurnInfo is the running message's."""
    inner = doubles.model_stream

    async def model_stream(request: dict[str, Any], turn: Any = None, **kwargs: Any) -> Any:
        async for chunk in inner(unprefixed_request(request), turn or current.get("turn"), **kwargs):
            yield prefixed_chunk(chunk)

    doubles.model_stream = model_stream


class Loopback:
    """A listener on a free loopback port (``port``) serving each connection with ``_connection``."""

    port = 0

    async def serve(self, *, task_status: Any = anyio.TASK_STATUS_IGNORED) -> None:
        listener = await anyio.create_tcp_listener(local_host="127.0.0.1", local_port=0)
        self.port = int(listener.extra(SocketAttribute.local_port))
        task_status.started()
        await listener.serve(self._connection)

    async def _connection(self, stream: SocketStream) -> None:
        raise NotImplementedError


class Trap(Loopback):
    """A loopback listener standing in for every host beyond loopback (the CLI's ``HTTPS_PROXY``):
    it records the first line of each connection and closes it."""

    def __init__(self) -> None:
        self.seen: list[str] = []

    async def _connection(self, stream: SocketStream) -> None:
        async with stream:
            try:
                with anyio.fail_after(5):
                    data = await stream.receive()
            except Exception:
                data = b"(no request line)"
            self.seen.append(data.split(b"\r\n", 1)[0].decode("latin-1")[:200])


async def http_exchanges(stream: SocketStream, answer: Any) -> None:
    """Serve HTTP/1.1 requests on one loopback connection: ``await answer(target, method, body)``
    gives each one's status and JSON body."""
    import h11

    conn = h11.Connection(h11.SERVER)
    async with stream:
        while True:
            body = b""
            request = None
            try:
                while True:
                    event = conn.next_event()
                    if event is h11.NEED_DATA:
                        conn.receive_data(await stream.receive())
                        continue
                    if isinstance(event, h11.Request):
                        request = event
                    elif isinstance(event, h11.Data):
                        body += event.data
                        if len(body) > MAX_BODY:
                            return
                    elif isinstance(event, h11.EndOfMessage):
                        break
                    elif isinstance(event, h11.ConnectionClosed) or event is h11.PAUSED:
                        return
            except (anyio.EndOfStream, anyio.BrokenResourceError, h11.RemoteProtocolError):
                return  # closed, or not HTTP: nothing to answer
            status, data = await answer(request.target, request.method, body) if request is not None else (400, b"{}")
            await stream.send(conn.send(h11.Response(status_code=status, headers=[("content-type", "application/json"), ("content-length", str(len(data)))])))
            await stream.send(conn.send(h11.Data(data=data)) + conn.send(h11.EndOfMessage()))
            if conn.our_state is h11.MUST_CLOSE:
                return
            conn.start_next_cycle()


class OtlpTraces(Loopback):
    """A loopback OTLP/HTTP (JSON) receiver for the spans the CLI exports
    (``CLAUDE_CODE_ENABLE_TELEMETRY=1``, ``CLAUDE_CODE_ENHANCED_TELEMETRY_BETA=1``,
    ``OTEL_TRACES_EXPORTER=otlp``): ``claude_code.interaction`` (one per prompt),
    ``claude_code.llm_request``, ``claude_code.tool``, ``claude_code.hook``, …"""

    KINDS = {"claude_code.interaction": "session", "claude_code.llm_request": "model_call", "claude_code.tool": "tool",
             "claude_code.hook": "hook"}

    def __init__(self) -> None:
        self.spans: list[dict[str, Any]] = []
        self.arrived = anyio.Event()

    async def _connection(self, stream: SocketStream) -> None:
        await http_exchanges(stream, self._answer)

    async def _answer(self, target: bytes, method: bytes, body: bytes) -> tuple[int, bytes]:
        if target.startswith(b"/v1/traces"):
            self._take(body)
        return 200, b"{}"

    def _take(self, body: bytes) -> None:
        try:
            data = json.loads(body)
        except ValueError:
            return
        for resource in data.get("resourceSpans") or []:
            for scope in resource.get("scopeSpans") or []:
                self.spans.extend(scope.get("spans") or [])
        self.arrived.set()
        self.arrived = anyio.Event()

    def take(self) -> list[Any]:
        from conformance.boundary.adapter import Span

        out, self.spans = self.spans, []
        return [
            Span(span_id=s.get("spanId", ""), parent_id=s.get("parentSpanId") or None, name=s.get("name", ""),
                 kind=self.KINDS.get(s.get("name", ""), "other"),
                 start=int(s["startTimeUnixNano"]) / 1e9 if s.get("startTimeUnixNano") else None,
                 end=int(s["endTimeUnixNano"]) / 1e9 if s.get("endTimeUnixNano") else None)
            for s in out
        ]

    def roots(self) -> int:
        return sum(1 for s in self.spans if s.get("name") == "claude_code.interaction")


#: How Claude Code marks the context it adds to a user message (environment, date, reminders).
REMINDER = "<system-reminder>"


@mapping_code
def assembled_context(data: dict[str, Any]) -> dict[str, Any]:
    """context-assemble's payload from what the turn.step hook read before its request: the
    history as the request carries it (``$.session.messages({as: "api"})``: Messages-API messages,
    the transcript's rows joined as the CLI joins them; the blocks Claude Code adds to a user
    message, each wrapped in ``<system-reminder>``, are its own context: system messages), the
    session's spend (``$.session.usage()``) and the step's index in the turn."""
    history: list[dict[str, Any]] = []
    for m in data["messages"]:
        content = m.get("content")
        blocks = [{"type": "text", "text": content}] if isinstance(content, str) else [b for b in content if isinstance(b, dict)]
        if m.get("role") == "assistant":
            message: dict[str, Any] = {"role": "assistant"}
            text = "".join(str(b.get("text", "")) for b in blocks if b.get("type") == "text")
            calls = [{"id": b.get("id"), "name": str(b.get("name", "")).removeprefix(PREFIX), "args": b.get("input")}
                     for b in blocks if b.get("type") == "tool_use"]
            if text:
                message["text"] = text
            if calls:
                message["tool_calls"] = calls
            history.append(message)
            continue
        said: list[str] = []
        for b in blocks:
            if b.get("type") == "text" and str(b.get("text", "")).lstrip().startswith(REMINDER):
                history.append({"role": "system", "text": str(b["text"])})
            elif b.get("type") == "text":
                said.append(str(b.get("text", "")))
            elif b.get("type") == "tool_result":
                history.append({"role": "tool_result", "call_id": b.get("tool_use_id"), "content": text_of(b.get("content")),
                                "is_error": bool(b.get("is_error", False))})
        if said:
            history.append({"role": "user", "text": "".join(said)})
    cost = (data.get("usage") or {}).get("cost") or {}
    budget: dict[str, Any] = {"turns_used": int(data["index"])}
    if isinstance(cost.get("usd"), int | float):
        budget["cost_usd"] = cost["usd"]
    return {"history": history, "budget": budget}


@mapping_code
def streamed_message(data: dict[str, Any]) -> dict[str, Any]:
    """post-model-response's payload: the assistant message the turn.step hook's ``next(e)``
    streamed (``text`` chunks; ``tool`` chunks with index, id and name, then their ``input`` JSON)."""
    text = ""
    calls: dict[Any, dict[str, Any]] = {}
    for chunk in data["chunks"]:
        if chunk.get("kind") == "text":
            text += str(chunk.get("text", ""))
        elif chunk.get("kind") == "tool":
            calls[chunk.get("index")] = {"id": chunk.get("id"), "name": str(chunk.get("name", "")).removeprefix(PREFIX), "json": ""}
        elif chunk.get("kind") == "input" and chunk.get("index") in calls:
            calls[chunk["index"]]["json"] += str(chunk.get("json", ""))
    message: dict[str, Any] = {"role": "assistant"}
    if text:
        message["text"] = text
    if calls:
        message["tool_calls"] = [{"id": c["id"], "name": c["name"], "args": parse_args(c["json"])} for c in calls.values()]
    return message


#: The chunk kinds that carry the response's content; the others (``engine``: the stream's own
#: events; ``stop``: its stop reason and usage) pass on in a replacement, a stop reason that says
#: whether the message calls tools (tool_use / end_turn) set to say it of the replacement.
CONTENT_KINDS = ("text", "thinking", "tool", "input")


@mapping_code
def replied_chunks(chunks: list[Any], message: dict[str, Any]) -> dict[str, Any]:
    """The turn.step hook's answer for a replaced message: the items it yields in place of the
    streamed chunks, each the index of a chunk passed on unchanged or a chunk of the replacement in
    the CLI's own shapes (``{kind: text, index, text}``; ``{kind: tool, index, id, name}`` then
    ``{kind: input, index, json}``, names prefixed), where the streamed content was (before the
    stop chunk if there was none), and the step's result (``answer``, ``toolUses``) to match.
    ``chunks`` are dicts (:class:`HookBridge` refuses others)."""
    text = message.get("text") or ""
    calls = message.get("tool_calls") or []
    if not isinstance(text, str) or not isinstance(calls, list) or not all(isinstance(c, dict) for c in calls):
        raise AdapterBug(f"a post-model-response replacement that is not an assistant message: {json.dumps(message)[:200]}")
    # the replacement's blocks after the streamed ones: a block index the stream used keeps its kind
    start = 1 + max((c["index"] for c in chunks if c.get("kind") in CONTENT_KINDS and isinstance(c.get("index"), int)), default=-1)
    content: list[Any] = [{"kind": "text", "index": start, "text": text}] if text else []
    for i, call in enumerate(calls, start=start + len(content)):
        args = call.get("args") if isinstance(call.get("args"), dict) else {}
        content += [{"kind": "tool", "index": i, "id": str(call.get("id") or f"toolu_akc_{i}"), "name": PREFIX + str(call.get("name", ""))},
                    {"kind": "input", "index": i, "json": json.dumps(args)}]
    items: list[Any] = []
    for i, chunk in enumerate(chunks):
        if chunk.get("kind") in CONTENT_KINDS:
            items, content = items + content, []
        elif chunk.get("kind") == "stop":
            items, content = items + content, []
            # the loop reads a tool_use stop without tool_use blocks as a failed call and asks again
            # (claude@330626071): the stop reason follows whether the replacement calls tools
            reason = "tool_use" if calls else "end_turn"
            items.append({**chunk, "stopReason": reason} if chunk.get("stopReason") in ("tool_use", "end_turn") and chunk["stopReason"] != reason else i)
        else:
            items.append(i)
    result = {"answer": text, "toolUses": [{"name": PREFIX + str(c.get("name", "")), "input": c.get("args") if isinstance(c.get("args"), dict) else {}} for c in calls]}
    return {"chunks": items + content, "result": result}


class HookBridge(Loopback):
    """The loopback endpoint the adapter's hooks module (``claude_agent_sdk_hooks.js``) calls from
    Claude Code's ``turn.step`` hook: ``POST /<token>/hook`` with ``{"point", "data"}`` runs that
    hook point's chain on what :func:`assembled_context` / :func:`streamed_message` make of
    ``data`` and answers once it has run, so the CLI's request waits on it; post-model-response's
    answer is the chunks the hook yields (``{"chunks": [...], "result": ...}``: the streamed ones by
    index, or a replacement's, :func:`replied_chunks`). Every request is the kernel's data: one that
    is not such a call is refused (400) and recorded."""

    MAPS = {"context-assemble": assembled_context, "post-model-response": streamed_message}

    def __init__(self) -> None:
        self.path = f"/{secrets.token_hex(16)}/hook".encode()
        self.chain: Any = None  # async (point, payload) -> (payload, replaced), set once the session's hooks exist
        self.relay = StreamRelay()
        self.refused: list[str] = []

    @property
    def endpoint(self) -> str:
        return f"http://127.0.0.1:{self.port}{self.path.decode()}"

    async def _connection(self, stream: SocketStream) -> None:
        await http_exchanges(stream, self._answer)

    async def _answer(self, target: bytes, method: bytes, body: bytes) -> tuple[int, bytes]:
        if method != b"POST" or target != self.path:
            return self._refuse(f"{method.decode('latin-1')} {target[:100].decode('latin-1')}: not the hook endpoint")
        try:
            call = json.loads(body)
        except ValueError:
            return self._refuse("a hook call whose body is not JSON")
        point = call.get("point") if isinstance(call, dict) else None
        if point not in (*self.MAPS, "model-text") or not isinstance(call.get("data"), dict):
            return self._refuse(f"a hook call that is not {{point: {' | '.join(self.MAPS)} | model-text, data: {{...}}}}")
        if point == "model-text":  # the hook holds the first text chunk of the running request's response
            self.relay.text()
            return 200, b"{}"
        if point == "post-model-response" and not (isinstance(call["data"].get("chunks"), list) and all(isinstance(c, dict) for c in call["data"]["chunks"])):
            return self._refuse("a post-model-response call whose data is not {chunks: [{...}, ...]}")
        if self.chain is None:
            return self._refuse(f"a {point} call before the session's hooks were set up")
        try:
            payload = self.MAPS[point](call["data"])
        except AdapterBug as exc:
            return self._refuse(str(exc))
        if point == "context-assemble":
            self.relay.request()
        try:
            new, replaced = await self.chain(point, payload)
        except Exception as exc:  # a hook's raise outcome: the CLI's turn.step hook raises it
            return 500, json.dumps({"error": f"{type(exc).__name__}: {exc}"}).encode()
        if point != "post-model-response":
            return 200, b"{}"
        chunks = call["data"]["chunks"]
        if not replaced:
            return 200, json.dumps({"chunks": list(range(len(chunks)))}).encode()
        if not isinstance(new, dict):
            return self._refuse(f"a post-model-response replacement that is not an assistant message: {json.dumps(new)[:200]}")
        try:
            return 200, json.dumps(replied_chunks(chunks, new)).encode()
        except AdapterBug as exc:
            return self._refuse(str(exc))

    def _refuse(self, why: str) -> tuple[int, bytes]:
        self.refused.append(why)
        return 400, json.dumps({"error": why}).encode()


def hooks_plugin(folder: str, endpoint: str) -> str:
    """Write the adapter's plugin (manifest, ``hooks/hooks.json`` naming the hooks module, the
    module with ``endpoint`` filled in) into ``folder``; its path, for ``plugins=[{"type": "local"}]``."""
    root = os.path.join(folder, "akc-plugin")
    os.makedirs(os.path.join(root, ".claude-plugin"), exist_ok=True)
    os.makedirs(os.path.join(root, "hooks"), exist_ok=True)
    module = (resources.files("conformance.adapters") / "claude_agent_sdk_hooks.js").read_text(encoding="utf-8")
    files = {
        os.path.join(".claude-plugin", "plugin.json"): json.dumps({"name": SERVER}),
        os.path.join("hooks", "hooks.json"): json.dumps({"modules": ["./register.js"]}),
        os.path.join("hooks", "register.js"): module.replace("__ENDPOINT__", endpoint),
    }
    for name, text in files.items():
        with open(os.path.join(root, name), "w", encoding="utf-8") as f:
            f.write(text)
    return root


def outside_requests(doubles: Any, trap: Trap) -> list[str]:
    """Every request the CLI made that was not a model call or token count (the served model logs
    each refused request, ``http_rejected``; the trap each request beyond loopback)."""
    out = [f"beyond loopback: {line}" for line in trap.seen]
    for entry in doubles.log.of("http_rejected", "http_other"):
        out.append(f"served model: {entry.get('method', '')} {entry.get('path')} ({entry.get('message', '')})")
    return out


class CallIds:
    """The ``tool_use`` id of each MCP tool call: Claude Code hands an in-process MCP tool its
    arguments only, so ``PreToolUse`` (which fires before every call, with the id) records
    (id, arguments) and the tool takes the oldest record of its name with equal arguments."""

    def __init__(self) -> None:
        self.pending: dict[str, list[tuple[str, Any]]] = {}

    def expect(self, name: str, call_id: str, args: Any) -> None:
        self.pending.setdefault(name, []).append((call_id, args))

    def drop(self, call_id: str) -> None:
        for entries in self.pending.values():
            entries[:] = [e for e in entries if e[0] != call_id]

    def take(self, name: str, args: Any) -> str | None:
        entries = self.pending.get(name) or []
        for i, (call_id, expected) in enumerate(entries):
            if expected == args:
                return entries.pop(i)[0]
        return entries.pop(0)[0] if entries else None


async def close(client: Any) -> None:
    """End a session's CLI at once: the scenario is over, nothing of it is read after this (a
    graceful ``disconnect`` waits up to ~20 s for the CLI, past the harness's grace period)."""
    process = getattr(getattr(client, "_transport", None), "_process", None)
    if process is not None and process.returncode is None:
        process.kill()
    with anyio.move_on_after(5):
        await client.disconnect()


# --------------------------------------------------------------------------- messages


@mapping_code
def journal_entries(message: Any) -> list[dict[str, Any]]:
    """One streamed SDK message → the boundary's message JSON (tool names unprefixed)."""
    from claude_agent_sdk import AssistantMessage, UserMessage
    from claude_agent_sdk.types import TextBlock, ToolResultBlock, ToolUseBlock

    if isinstance(message, AssistantMessage):
        text = "".join(b.text for b in message.content if isinstance(b, TextBlock))
        calls = [{"id": b.id, "name": b.name.removeprefix(PREFIX), "args": b.input} for b in message.content if isinstance(b, ToolUseBlock)]
        entry: dict[str, Any] = {"role": "assistant"}
        if text:
            entry["text"] = text
        if calls:
            entry["tool_calls"] = calls
        return [entry]
    if isinstance(message, UserMessage):
        if isinstance(message.content, str):
            return [{"role": "user", "text": message.content}]
        out = []
        for block in message.content:
            if isinstance(block, ToolResultBlock):
                content = block.content if isinstance(block.content, str) else "".join(
                    c.get("text", "") for c in block.content or [] if isinstance(c, dict))
                out.append({"role": "tool_result", "call_id": block.tool_use_id, "content": content, "is_error": bool(block.is_error)})
            elif isinstance(block, TextBlock):
                out.append({"role": "user", "text": block.text})
        return out
    return []


class StreamRelay:
    """Which model calls of the run the CLI holds streamed text of: the turn.step hook reports each
    request (its context-assemble call, before the request) and the first text chunk it holds of
    the response (``model-text``); the k-th request is model call k (0-based, as the double counts
    them) while queries run one at a time and the CLI retries nothing (``CLAUDE_CODE_MAX_RETRIES=0``);
    a cancel's wait on it is bounded either way."""

    def __init__(self) -> None:
        self.requests = 0
        self.texts: dict[int, anyio.Event] = {}

    def _event(self, index: int) -> anyio.Event:
        return self.texts.setdefault(index, anyio.Event())

    def request(self) -> None:
        self.requests += 1

    def text(self) -> None:
        if self.requests:
            self._event(self.requests - 1).set()

    async def text_of(self, index: int) -> None:
        await self._event(index).wait()


# --------------------------------------------------------------------------- the adapter


class ClaudeAgentSDKAdapter:
    info = AdapterInfo(
        name="claude-agent-sdk",
        version=_version(),
        homepage="https://docs.claude.com/en/api/agent-sdk/python",
        profiles=["kernel"],
        capabilities=["max_cost_usd"],
        mechanisms=MECHANISMS,
        dialects=["anthropic"],
    )

    async def run(self, scenario: Scenario, doubles: Doubles) -> RunResult:
        served = getattr(doubles, "http_model", None)
        if served is None:
            raise AdapterBug("the harness served no HTTP model (doubles.http_model): Claude Code can only call a model over HTTP")
        current: dict[str, Any] = {}
        name_bridge(doubles, current)
        clients: dict[str, Any] = {}
        trap = Trap()
        traces = OtlpTraces()
        bridge = current["bridge"] = HookBridge()
        current["relay"] = bridge.relay
        with tempfile.TemporaryDirectory(prefix="akc-claude-") as scratch:
            async with anyio.create_task_group() as tg:
                await tg.start(trap.serve)
                await tg.start(traces.serve)
                await tg.start(bridge.serve)
                try:
                    result = await self._run(scenario, doubles, served, scratch, trap, traces, clients, current)
                finally:
                    with anyio.CancelScope(shield=True):
                        for client in clients.values():
                            await close(client)
                    tg.cancel_scope.cancel()
        if bridge.refused:
            raise AdapterBug("the adapter's hooks module made calls its endpoint refused: " + "; ".join(bridge.refused))
        outside = outside_requests(doubles, trap)
        if outside:
            raise LeftLoopback("the Claude Code CLI made requests beyond the served model's /v1/messages: " + "; ".join(outside))
        return result

    async def _run(self, scenario: Scenario, doubles: Doubles, served: Any, scratch: str, trap: Trap, traces: OtlpTraces,
                   clients: dict[str, Any], current: dict[str, Any]) -> RunResult:
        from claude_agent_sdk import ClaudeSDKClient, ResultMessage

        async def run_one(run: Run, session: Session, index: int, text: str) -> Outcome:
            turn = run.turn(session, index)
            current["turn"] = turn
            client = clients.get(session.id)
            if client is None:
                client = ClaudeSDKClient(self._options(scenario, doubles, served, scratch, trap, traces, current))
                await client.connect()
                clients[session.id] = client
            interrupted = answered = False

            async def interrupt() -> None:
                where = scenario.cancel
                if where is not None and where.at == "model_call":
                    # a user presses stop on text the CLI holds: the double cannot see the CLI
                    # read its socket, the turn.step hook reports the first text chunk it holds
                    with anyio.move_on_after(RELAY_WAIT_S):
                        await current["relay"].text_of(where.index)
                await client.interrupt()

            def cancel() -> None:
                nonlocal interrupted
                interrupted = True
                if not answered:  # a cancel after the result has nothing left to interrupt
                    tg_cancel.start_soon(interrupt)

            result = None
            async with anyio.create_task_group() as tg_cancel:
                doubles.register_canceller(index, cancel)
                session.messages.append({"role": "user", "text": text})
                await client.query(text)
                async for message in client.receive_response():
                    if isinstance(message, ResultMessage):
                        result = message
                    else:
                        session.messages.extend(journal_entries(message))
                answered = True
            if result is None:
                raise RuntimeError("the CLI's response ended with no ResultMessage")
            subtype = result.subtype
            await current["end_of_query"](turn)  # when Stop did not fire
            if interrupted or (result.terminal_reason or "").startswith("aborted"):
                return Outcome(message=index, session_id=session.id, status="cancelled", subtype="cancelled", reply=result.result)
            status = "completed" if subtype == "success" and not result.is_error else "error"
            if subtype.startswith("error_max"):
                status = "completed"
            return Outcome(message=index, session_id=session.id, status=status, subtype=subtype, reply=result.result,
                           error="; ".join(result.errors or []) or None)

        result = await run_messages(scenario, doubles, run_one)
        # the CLI exports a prompt's spans in batches after it: wait (bounded) for every prompt's root
        with anyio.move_on_after(SPAN_WAIT_S):
            while traces.roots() < sum(1 for o in result.outcomes if o.status != "cancelled"):
                await traces.arrived.wait()
        result.spans = traces.take()
        return result

    def _options(self, scenario: Scenario, doubles: Doubles, served: Any, scratch: str, trap: Trap, traces: OtlpTraces,
                 current: dict[str, Any]) -> Any:
        from claude_agent_sdk import ClaudeAgentOptions, HookMatcher, PermissionResultAllow, PermissionResultDeny

        hooks = Hooks(scenario, doubles)
        tools = {t.name: t for t in scenario.tools}
        ids = CallIds()

        async def turn_step(point: str, payload: dict[str, Any]) -> tuple[Any, bool]:
            # context-assemble's replacement goes nowhere (turn.step may change only model and
            # effort); post-model-response's is what the hook yields (HookBridge)
            return await hooks.chain(point, payload, turn())

        current["bridge"].chain = turn_step

        def turn() -> dict[str, Any]:
            return current["turn"]

        def call_of(data: dict[str, Any]) -> dict[str, Any]:
            return {"id": data.get("tool_use_id"), "name": str(data.get("tool_name", "")).removeprefix(PREFIX), "args": data.get("tool_input")}

        async def pre_tool_use(data: Any, tool_use_id: Any, context: Any) -> Any:
            call = call_of(data)
            new, replaced = await hooks.chain("pre-tool-call", call, turn())
            if replaced and isinstance(new, dict) and isinstance(new.get("args"), dict):
                ids.expect(call["name"], call["id"], new["args"])
                return {"hookSpecificOutput": {"hookEventName": "PreToolUse", "updatedInput": new["args"]}}
            ids.expect(call["name"], call["id"], call["args"])
            return {}

        async def post_tool_batch(data: Any, tool_use_id: Any, context: Any) -> Any:
            """Once per response with tool calls, after every call ended: post-tool-call per call in
            order, then post-apply (not after a terminal tool, whose turn ends at its result)."""
            calls = [call_of(c) for c in data.get("tool_calls") or [] if isinstance(c, dict)]
            for raw, call in zip(data.get("tool_calls") or [], calls):
                response = raw.get("tool_response")
                with mapping("the tool response"):
                    blocks = response if isinstance(response, list) else (response or {}).get("content", []) if isinstance(response, dict) else []
                    content = "".join(b.get("text", "") for b in blocks if isinstance(b, dict)) if blocks else str(response or "")
                    is_error = bool(isinstance(response, dict) and (response.get("is_error") or response.get("isError")))
                await hooks.chain("post-tool-call", {"call": call, "result": {"content": content, "is_error": is_error}}, turn())
            if not any(getattr(tools.get(c["name"]), "terminates_turn", False) for c in calls):
                plan = {"items": [{"call_id": c["id"], "name": c["name"], "args": c["args"], "vetoed": False, "reason": None}
                                  for c in calls if getattr(tools.get(c["name"]), "kind", None) == "resource"]}
                await hooks.chain("post-apply", plan, turn())
            return {}

        async def user_prompt_submit(data: Any, tool_use_id: Any, context: Any) -> Any:
            await hooks.chain("session-start", {"session_id": turn()["session_id"]}, turn())
            return {}

        async def stop(data: Any, tool_use_id: Any, context: Any) -> Any:
            current.setdefault("ended", set()).add(turn()["turn_id"])
            await hooks.chain("session-end", {"session_id": turn()["session_id"]}, turn())
            return {}

        async def end_of_query(turn_info: Any) -> None:
            # the Stop hook is built only on the end-of-turn path (claude@345545922): an interrupted
            # query takes the abort path (claude@351486907), a failed one its error path, and each
            # ends with the CLI's own end-of-run report, its ResultMessage: session-end there, once
            if turn_info["turn_id"] in current.setdefault("ended", set()):
                return
            current["ended"].add(turn_info["turn_id"])
            with anyio.CancelScope(shield=True):
                await hooks.chain("session-end", {"session_id": turn_info["session_id"]}, turn_info)

        current["end_of_query"] = end_of_query

        async def can_use_tool(name: str, args: dict[str, Any], context: Any) -> Any:
            call = {"id": context.tool_use_id, "name": name.removeprefix(PREFIX), "args": args}
            tool = tools.get(call["name"])
            if tool is not None and tool.kind in ("data_source", "interactive"):
                verdict = await doubles.policy_precheck(call, turn())
                if not verdict.get("allow", True):
                    ids.drop(call["id"])
                    return PermissionResultDeny(message=f"denied by policy: {verdict.get('reason')}")
            return PermissionResultAllow()

        async def run_tool(tool: ToolDef, args: dict[str, Any]) -> tuple[str, bool]:
            call = {"id": ids.take(tool.name, args), "name": tool.name, "args": parse_args(args)}
            try:
                out = await doubles.invoke_tool(call, turn())
                return str(out.get("content", "")), bool(out.get("is_error"))
            except ToolFailed as exc:
                return str(exc), True

        server = tool_server(scenario, run_tool)
        home = os.path.join(scratch, "home")
        work = os.path.join(scratch, "work")
        os.makedirs(home, exist_ok=True)
        os.makedirs(work, exist_ok=True)
        trap_url = f"http://127.0.0.1:{trap.port}"
        env = {
            "HOME": home,
            "ANTHROPIC_BASE_URL": served.base_url("anthropic"),
            "ANTHROPIC_API_KEY": served.api_key,
            "CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC": "1",
            "DISABLE_TELEMETRY": "1",
            "DISABLE_ERROR_REPORTING": "1",
            "DISABLE_AUTOUPDATER": "1",
            "CLAUDE_CODE_MAX_RETRIES": "0",
            "HTTPS_PROXY": trap_url, "HTTP_PROXY": trap_url, "https_proxy": trap_url, "http_proxy": trap_url,
            "NO_PROXY": "127.0.0.1", "no_proxy": "127.0.0.1",
            # its spans, to the adapter's OTLP receiver (logs and metrics off)
            "CLAUDE_CODE_ENABLE_TELEMETRY": "1", "CLAUDE_CODE_ENHANCED_TELEMETRY_BETA": "1",
            "OTEL_TRACES_EXPORTER": "otlp", "OTEL_LOGS_EXPORTER": "none", "OTEL_METRICS_EXPORTER": "none",
            "OTEL_EXPORTER_OTLP_TRACES_PROTOCOL": "http/json",
            "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT": f"http://127.0.0.1:{traces.port}/v1/traces",
            "OTEL_BSP_SCHEDULE_DELAY": "50", "OTEL_TRACES_EXPORT_INTERVAL": "50",
        }
        bounds = scenario.bounds
        return ClaudeAgentOptions(
            tools=[],
            mcp_servers={SERVER: server},
            strict_mcp_config=True,
            system_prompt=scenario.system_prompt or None,
            model=scenario.model.name,
            max_turns=bounds.max_turns,
            max_budget_usd=bounds.max_cost_usd,
            cwd=work,
            env=env,
            setting_sources=[],
            plugins=[{"type": "local", "path": hooks_plugin(scratch, current["bridge"].endpoint)}],
            can_use_tool=can_use_tool,
            hooks={
                "PreToolUse": [HookMatcher(matcher=None, hooks=[pre_tool_use])],
                "PostToolBatch": [HookMatcher(matcher=None, hooks=[post_tool_batch])],  # type: ignore[dict-item]
                "UserPromptSubmit": [HookMatcher(matcher=None, hooks=[user_prompt_submit])],
                "Stop": [HookMatcher(matcher=None, hooks=[stop])],
            },
        )


def factory() -> ClaudeAgentSDKAdapter:
    return ClaudeAgentSDKAdapter()
