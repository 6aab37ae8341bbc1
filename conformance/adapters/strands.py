"""strands-agents (``Agent.invoke_async``) as a ``kernel``-profile kernel. Extra: ``strands-agents``
(pinned in ``scripts/requirements/strands-agents.txt``; mapping read against strands-agents 1.62.0).

One scenario session is one ``strands.Agent``; each user message is one
``await agent.invoke_async(text, limits=...)`` (and one more per resume after an interrupt) and ``agent.messages`` (strands' own conversation) is
the journal reported. The model is a ``strands.models.Model`` subclass whose ``stream`` sends the
request to the harness's scripted model (``Doubles.model_stream``) and yields strands' stream
events (``messageStart``, ``contentBlock*``, ``messageStop``, ``metadata``). Every scenario tool is a
``PythonAgentTool`` (the scenario's JSON schema) whose coroutine calls ``Doubles.invoke_tool``; a
scripted failure is a ``status: "error"`` ToolResult.

What maps to what:

* ``session-start`` → ``BeforeInvocationEvent``; ``session-end`` → ``AfterInvocationEvent`` (a hook
  event fired "regardless of success", ``hooks/events.py:70-110``).
* ``context-assemble``, ``pre-model-call`` and ``post-model-response`` → an ``InvokeModelStage``
  middleware (``Agent.add_middleware``, ``middleware/stages.py:38-112``): it runs the first two
  chains before the model, passes a replaced history / request on in the stage context (what the
  model gets; replaced params are a model with that config in ``context.model``, which the stage's
  terminal streams, ``event_loop/event_loop.py:780``), and re-yields a replaced message as the stage's ``ModelStopReason`` (what is stored
  and acted on). strands' ``BeforeModelCallEvent`` / ``AfterModelCallEvent`` could only cancel or
  retry (``hooks/events.py:343-344, 400-401``), hence the middleware. context-assemble's budget is
  what strands counts against its ``Limits`` for the invocation (its cycles and tokens, read where
  ``_check_limits`` reads them, ``event_loop/event_loop.py:70-95``), summed over the invocations
  of the user message (the first and each resume).
* ``pre-tool-call`` → ``BeforeToolsEvent``, fired once before any tool of the batch starts, with
  the assistant message holding every ``toolUse`` block in order (``hooks/events.py:149-183``,
  ``event_loop/event_loop.py:888``): one dispatch per block, in declaration order (not again when
  a held batch resumes).
* Tool kinds and ``plan-ready`` → strands' human-in-the-loop interrupts (``types/interrupt.py:82-111``):
  a ``BeforeToolCallEvent`` callback calls ``event.interrupt(...)`` on every interactive and resource
  call; strands does not run it (``tools/executors/_executor.py:210-220``), the batch's data-source
  calls finish under ``ConcurrentToolExecutor`` (the default; every call its own task), and the
  invocation stops with ``stop_reason "interrupt"`` and ``AgentResult.interrupts``
  (``event_loop/event_loop.py:804-834``). The host then answers the interactive calls one at a time
  in request order (the policy precheck, then the tool), runs the plan-ready veto chain over the
  held resource calls, and resumes with one ``interruptResponse`` each: strands skips the finished
  calls (``event_loop/event_loop.py:879-886``), an interactive call returns the host's answer, a
  vetoed one is ``cancel_tool = "Vetoed: ..."``. session-start / session-end are not dispatched
  again for the resume. A batch with no resource call gets plan-ready with an empty plan from
  ``AfterToolsEvent``.
* ``post-tool-call`` → ``AfterToolsEvent`` of the batch's last (resumed) run, fired once after
  every tool of the batch ended (``hooks/events.py:186-218``, ``event_loop/event_loop.py:957-963``):
  one dispatch per result that strands' ``AfterToolCallEvent`` handed over as each tool ended
  (``tools/executors/_executor.py:134-140``), then ``post-apply`` with the plan plan-ready left.
* The policy precheck → ``BeforeToolCallEvent.cancel_tool = "denied by policy: ..."``: strands does
  not run the tool and gives the model an error result with that message.
* ``max_turns`` → ``invoke_async(limits={"turns": N})``: checked at the top of each loop iteration,
  so the N-th turn's tools run and the loop ends with ``stop_reason="limit_turns"``
  (``types/agent.py:150-178``; ``event_loop/event_loop.py:241-251``: a stop event, no exception —
  BOUND-008 passes — and no model call — BOUND-010 fails), reported as subtype ``error_max_turns``.
  strands' caps are per invocation (``event_loop/event_loop.py:70-95``) and a resume after an
  interrupt is a new invocation: its count starts at 0 (BOUND-002 fails on a turn loop that pauses
  at the plan gate or an interactive call). The resume gets the same ``limits``: a host computing
  what is left would be the adapter's bound, not strands'.
* ``terminates_turn`` → the tool calls ``agent.cancel(after_current_tools=True)`` after it ran,
  exactly what strands' vended ``stop`` tool does (``vended_tools/stop/stop.py``): the batch's other
  tools finish, then the loop exits with ``stop_reason="cancelled"`` and no further model call
  (``agent/agent.py:647-703``, ``event_loop/event_loop.py:1030-1043``: DONE-004 passes). That
  stop is reported as ``success`` (strands' graceful completion); a host cancellation as ``cancelled``.
* Spans → strands' OpenTelemetry tracer (``telemetry/tracer.py``) exported in memory:
  ``invoke_agent`` is the session span, ``execute_event_loop_cycle`` the turn, ``chat`` the model
  call, ``execute_tool`` the tool.
* Usage → token counts from the ``metadata`` event only: strands computes no cost.
* Cancellation → ``agent.cancel()``, strands' own: the run returns with ``stop_reason="cancelled"``
  (a cancel while calls are held is issued again for the resume, strands having cleared its
  signal as the interrupted invocation ended, ``agent/agent.py:1594-1597``).

Absent in strands: concurrency keys, a final tool-less turn when a limit fires, a doom-loop detector, a cost or wall-clock bound
(``Limits`` has turns and tokens only), TurnInfo and tags. Sub-agents are not wired
(``Agent.as_tool`` / ``vended_tools.subagent`` exist; the adapter maps no child agents onto them).
"""

from __future__ import annotations

import contextvars
import dataclasses
import json
import uuid
from importlib import metadata
from typing import Any

import anyio

from conformance.adapters._common import Hooks, OtelSpans, Run, Session, mapping, mapping_code, parse_args, run_messages, tool_spec
from conformance.boundary.adapter import AdapterInfo, Doubles, Mechanism, Outcome, RunResult, ToolFailed
from conformance.boundary.scenario import Scenario, ToolDef

_turn: contextvars.ContextVar[dict[str, Any]] = contextvars.ContextVar("akc_strands_turn")
#: How often the provider looks at strands' cancel signal (a threading.Event), as Bedrock's does.
CANCEL_POLL_S = 0.01


def _version() -> str:
    try:
        return metadata.version("strands-agents")
    except metadata.PackageNotFoundError:
        return "not installed"


# --------------------------------------------------------------------------- messages


@mapping_code
def to_canonical(messages: list[Any], system: str | None = None) -> list[dict[str, Any]]:
    """strands Messages (Bedrock-style content blocks) → the boundary's message JSON."""
    out: list[dict[str, Any]] = [{"role": "system", "text": system}] if system else []
    for msg in messages:
        blocks = msg.get("content") or []
        if msg.get("role") == "assistant":
            out.append(assistant_to_canonical(msg))
            continue
        text = "".join(b["text"] for b in blocks if "text" in b)
        if text:
            out.append({"role": "user", "text": text})
        for b in blocks:
            if "toolResult" in b:
                r = b["toolResult"]
                content = "".join(c.get("text", "") if "text" in c else json.dumps(c.get("json")) for c in r.get("content") or [])
                out.append({"role": "tool_result", "call_id": r.get("toolUseId"), "content": content, "is_error": r.get("status") == "error"})
    return out


@mapping_code
def assistant_to_canonical(msg: Any) -> dict[str, Any]:
    blocks = msg.get("content") or []
    out: dict[str, Any] = {"role": "assistant"}
    text = "".join(b["text"] for b in blocks if "text" in b)
    if text:
        out["text"] = text
    calls = [{"id": b["toolUse"]["toolUseId"], "name": b["toolUse"]["name"], "args": b["toolUse"].get("input")} for b in blocks if "toolUse" in b]
    if calls:
        out["tool_calls"] = calls
    return out


@mapping_code
def assistant_from_canonical(msg: Any) -> dict[str, Any]:
    msg = msg if isinstance(msg, dict) else {}
    blocks: list[dict[str, Any]] = [{"text": str(msg["text"])}] if msg.get("text") else []
    blocks += [{"toolUse": {"toolUseId": c["id"], "name": c["name"], "input": c.get("args") or {}}} for c in msg.get("tool_calls") or []]
    return {"role": "assistant", "content": blocks}


@mapping_code
def from_canonical(history: Any) -> tuple[list[dict[str, Any]], str | None]:
    """The boundary's messages → (strands Messages, system prompt); tool results join one user message."""
    out: list[dict[str, Any]] = []
    system = None
    for msg in history if isinstance(history, list) else []:
        role = msg.get("role") if isinstance(msg, dict) else None
        if role == "system":
            system = str(msg.get("text", ""))
        elif role == "assistant":
            out.append(assistant_from_canonical(msg))
        elif role in ("user", "tool_result"):
            block = {"text": str(msg.get("text", ""))} if role == "user" else {"toolResult": {
                "toolUseId": str(msg.get("call_id")), "status": "error" if msg.get("is_error") else "success",
                "content": [{"text": str(msg.get("content", ""))}]}}
            if out and out[-1]["role"] == "user":
                out[-1]["content"].append(block)
            else:
                out.append({"role": "user", "content": [block]})
    return out, system


@mapping_code
def specs_of(tool_specs: list[Any] | None) -> list[dict[str, Any]]:
    return [tool_spec(s["name"], s.get("description"), (s.get("inputSchema") or {}).get("json")) for s in tool_specs or []]


@mapping_code
def specs_from(specs: list[Any]) -> list[dict[str, Any]]:
    return [{"name": s["name"], "description": s.get("description", ""), "inputSchema": {"json": s.get("input_schema") or {"type": "object"}}} for s in specs]


def stream_events(chunks: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The scripted model's chunks → strands StreamEvents."""
    events: list[dict[str, Any]] = [{"messageStart": {"role": "assistant"}}]
    text = "".join(c.get("text", "") for c in chunks if c.get("type") == "text")
    if text:
        events += [{"contentBlockStart": {"start": {}}}, {"contentBlockDelta": {"delta": {"text": text}}}, {"contentBlockStop": {}}]
    calls = [c for c in chunks if c.get("type") == "tool_use"]
    for c in calls:
        events += [
            {"contentBlockStart": {"start": {"toolUse": {"toolUseId": c["id"], "name": c["name"]}}}},
            {"contentBlockDelta": {"delta": {"toolUse": {"input": c.get("input_json") or "{}"}}}},
            {"contentBlockStop": {}},
        ]
    events.append({"messageStop": {"stopReason": "tool_use" if calls else "end_turn"}})
    usage = next((c for c in reversed(chunks) if c.get("type") == "usage"), None)
    if usage is not None:
        i, o, cached = int(usage.get("input_tokens", 0)), int(usage.get("output_tokens", 0)), int(usage.get("cached_input_tokens", 0))
        events.append({"metadata": {"usage": {"inputTokens": i + cached, "outputTokens": o, "totalTokens": i + cached + o, "cacheReadInputTokens": cached},
                                    "metrics": {"latencyMs": 0}}})
    return events


# --------------------------------------------------------------------------- tracing


def span_kind(name: str) -> str:
    if name.startswith("invoke_agent"):
        return "session"
    if name == "execute_event_loop_cycle":
        return "turn"
    if name == "chat":
        return "model_call"
    if name.startswith("execute_tool"):
        return "tool"
    return "other"


# --------------------------------------------------------------------------- the adapter


def _m(kind: str, via: str | None = None, note: str | None = None) -> Mechanism:
    return Mechanism(kind=kind, via=via, note=note)  # type: ignore[arg-type]


#: How each hook point, capability and observation maps onto strands-agents 1.62 (anything not
#: named is absent).
MECHANISMS: dict[str, Mechanism] = {
    "session-start": _m("native", "BeforeInvocationEvent"),
    "context-assemble": _m("native", "InvokeModelStage middleware (context.messages)", "budget: the invocation's cycles and tokens, which strands counts against its Limits"),
    "pre-model-call": _m("native", "InvokeModelStage middleware (context.messages / tool_specs / system_prompt / model)"),
    "post-model-response": _m("native", "InvokeModelStage middleware (the stage's ModelStopReason)"),
    "pre-tool-call": _m("native", "BeforeToolsEvent (one dispatch per toolUse block)"),
    "post-tool-call": _m("native", "AfterToolsEvent (one dispatch per AfterToolCallEvent result)"),
    "session-end": _m("native", "AfterInvocationEvent"),
    "plan-ready": _m("native", "BeforeToolCallEvent.interrupt() on resource calls → AgentResult.interrupts → resumed with interruptResponse", "a batch with no resource call: AfterToolsEvent, with an empty plan"),
    "post-apply": _m("native", "AfterToolsEvent (of the resumed batch)", "the plan plan-ready left"),
    "policy_precheck": _m("native", "BeforeToolCallEvent.cancel_tool"),
    "tool_kinds": _m("native", "function tool (data source) / BeforeToolCallEvent.interrupt() answered by the host (interactive)", "ConcurrentToolExecutor runs the batch's other calls; the host answers the held ones one at a time"),
    "concurrency_keys": _m("absent"),
    "terminal_tool": _m("native", "Agent.cancel(after_current_tools=True) from the tool (as vended_tools.stop)"),
    "max_turns": _m("native", "invoke_async(limits={'turns': N}) → stop_reason 'limit_turns'"),
    "final_turn": _m("absent", note="a tripped limit ends the loop at the top of the next iteration, with no model call"),
    "doom_loop": _m("absent"),
    "usage": _m("absent", note="token counts only (metadata event); no cost"),
    "spans": _m("native", "strands.telemetry.Tracer (OpenTelemetry: invoke_agent, execute_event_loop_cycle, chat, execute_tool)"),
    "journal": _m("native", "Agent.messages"),
    "cancellation": _m("native", "Agent.cancel() → stop_reason 'cancelled'"),
    "subagents": _m("not-wired", "Agent.as_tool / vended_tools.subagent", "the adapter maps no child agents onto them"),
}

#: strands' stop reasons → the kernel profile's subtypes (others are reported as they are).
SUBTYPES = {"end_turn": "success", "limit_turns": "error_max_turns", "cancelled": "cancelled"}


class StrandsAdapter:
    info = AdapterInfo(
        name="strands-agents",
        version=_version(),
        homepage="https://strandsagents.com",
        profiles=["kernel"],
        capabilities=[],
        mechanisms=MECHANISMS,
    )

    async def run(self, scenario: Scenario, doubles: Doubles) -> RunResult:
        OtelSpans.install()
        agents: dict[str, Any] = {}
        host_cancelled: set[int] = set()
        trace_ids: set[int] = set()

        async def run_one(run: Run, session: Session, index: int, text: str) -> Outcome:
            _turn.set(run.turn(session, index))
            if session.id not in agents:
                agents[session.id] = self._build(scenario, doubles)
            agent, hooks, state = agents[session.id]

            def cancel() -> None:
                host_cancelled.add(index)
                state["cancelled"] = True
                agent.cancel()

            for stale in ("plan", "results", "interrupted", "resuming", "order"):  # a cancelled message's leftovers
                state.pop(stale, None)
            state.update(first_invocation=len(agent.event_loop_metrics.agent_invocations), cancelled=False, answers={})
            doubles.register_canceller(index, cancel)
            limits = {"turns": scenario.bounds.max_turns} if scenario.bounds.max_turns is not None else None
            with OtelSpans.marker(trace_ids):
                try:
                    result = await agent.invoke_async(text, limits=limits)
                    while result.stop_reason == "interrupt":
                        # strands held the batch's interactive and resource calls at their
                        # BeforeToolCallEvent interrupts and ran the others: the host answers
                        resume = await _answer(result.interrupts, state, hooks, doubles)
                        if state["cancelled"]:  # strands clears its cancel signal as an invocation ends
                            agent.cancel()  # (agent/agent.py:1594-1597): the host's stop, for the resume
                        state["resuming"] = True
                        result = await agent.invoke_async(resume, limits=limits)
                finally:
                    session.messages = to_canonical(list(agent.messages), scenario.system_prompt or None)
            reason = str(result.stop_reason)
            subtype = SUBTYPES.get(reason, reason)
            if reason == "cancelled" and index not in host_cancelled:
                subtype = "success"  # the terminal tool's cooperative stop, strands' graceful completion
            status = "cancelled" if subtype == "cancelled" else "completed"
            reply = "".join(b.get("text", "") for b in (result.message or {}).get("content", []) if "text" in b)
            return Outcome(message=index, session_id=session.id, status=status, subtype=subtype, reply=reply)

        result = await run_messages(scenario, doubles, run_one)
        result.spans = OtelSpans.spans(trace_ids, span_kind)
        return result

    def _build(self, scenario: Scenario, doubles: Doubles) -> tuple[Any, Hooks, dict[str, Any]]:
        from strands import Agent
        from strands.hooks import (
            AfterInvocationEvent,
            AfterToolCallEvent,
            AfterToolsEvent,
            BeforeInvocationEvent,
            BeforeToolCallEvent,
            BeforeToolsEvent,
        )
        from strands.middleware import InvokeModelStage
        from strands.models import Model
        from strands.interrupt import InterruptException
        from strands.tools.executors import ConcurrentToolExecutor
        from strands.tools.tools import PythonAgentTool
        from strands.middleware import ModelStopReason

        hooks = Hooks(scenario, doubles)
        kinds = {t.name: t.kind for t in scenario.tools}
        holder: dict[str, Any] = {"answers": {}}

        class ScriptedModel(Model):
            """The harness's scripted model as a strands provider: its config holds the request's
            params; like strands' Bedrock provider it polls ``cancel_signal`` and ends the stream
            without ``messageStop`` when a call in flight is cancelled (``models/bedrock.py:139-146,
            1576-1592``; ``event_loop/streaming.py:502-511`` reports that as ``cancelled``)."""

            def __init__(self, **config: Any) -> None:
                self.config = {"model_id": scenario.model.name, **config}

            def update_config(self, **config: Any) -> None:
                self.config.update(config)

            def get_config(self) -> Any:
                return self.config

            def params(self) -> dict[str, Any]:
                return {k: v for k, v in self.config.items() if k != "model_id"}

            def structured_output(self, *args: Any, **kwargs: Any) -> Any:
                raise NotImplementedError("not used by the scenarios")

            async def stream(self, messages: Any, tool_specs: Any = None, system_prompt: str | None = None, *,
                             cancel_signal: Any = None, **kwargs: Any) -> Any:
                with mapping("the model request"):
                    request = {"messages": to_canonical(list(messages), system_prompt), "tools": specs_of(tool_specs), "params": self.params()}
                chunks: list[dict[str, Any]] = []
                done = False
                async with anyio.create_task_group() as tg:
                    async def poll() -> None:
                        while cancel_signal is not None and not cancel_signal.is_set():
                            await anyio.sleep(CANCEL_POLL_S)
                        tg.cancel_scope.cancel()

                    if cancel_signal is not None:
                        tg.start_soon(poll)
                    async for chunk in doubles.model_stream(request, _turn.get()):
                        chunks.append(chunk)
                    done = True
                    tg.cancel_scope.cancel()
                if not done:  # aborted in flight: no messageStop, as strands' own providers do
                    return
                with mapping("the model response"):
                    events = stream_events(chunks)
                for event in events:
                    yield event

        def budget_of(agent: Any) -> dict[str, Any]:
            """What strands counts against its Limits: its cycles (turns) and tokens, read where
            ``_check_limits`` reads them (event_loop/event_loop.py:70-95), summed over the user
            message's invocations (the first and each resume after an interrupt)."""
            invocations = agent.event_loop_metrics.agent_invocations[holder.get("first_invocation", 0):]
            if not invocations:
                return {}
            return {"turns_used": sum(len(i.cycles) for i in invocations),
                    "total_tokens": sum(int(i.usage.get("totalTokens", 0)) for i in invocations)}

        async def model_stage(context: Any, next_fn: Any) -> Any:
            turn = _turn.get()
            history = to_canonical(list(context.messages), context.system_prompt)
            assembled, replaced = await hooks.chain("context-assemble", {"history": history, "budget": budget_of(context.agent)}, turn)
            if replaced and isinstance(assembled, dict):
                with mapping("the replaced history"):
                    messages, system = from_canonical(assembled.get("history"))
                    context = dataclasses.replace(context, messages=messages, system_prompt=system)
            payload = {"payload": assembled, "tool_specs": specs_of(context.tool_specs), "params": context.model.params()}
            out, replaced = await hooks.chain("pre-model-call", payload, turn)
            if replaced and isinstance(out, dict):
                with mapping("the replaced request"):
                    inner = out.get("payload") if isinstance(out.get("payload"), dict) else {}
                    if isinstance(inner.get("history"), list):
                        messages, system = from_canonical(inner["history"])
                        context = dataclasses.replace(context, messages=messages, system_prompt=system)
                    if isinstance(out.get("tool_specs"), list):
                        context = dataclasses.replace(context, tool_specs=specs_from(out["tool_specs"]))
                    if isinstance(out.get("params"), dict):  # the stage calls ctx.model (event_loop.py:780)
                        context = dataclasses.replace(context, model=ScriptedModel(**out["params"]))
            async for event in next_fn(context):
                if isinstance(event, ModelStopReason):
                    with mapping("the model response"):
                        message = assistant_to_canonical(event.message)
                    new, replaced = await hooks.chain("post-model-response", message, turn)
                    if replaced:
                        with mapping("the replaced response"):
                            msg = assistant_from_canonical(new)
                            stop = "tool_use" if any("toolUse" in b for b in msg["content"]) else "end_turn"
                            event = ModelStopReason(stop_reason=stop, message=msg, usage=event.usage, metrics=event.metrics)
                yield event

        async def before_invocation(event: Any) -> None:
            if holder.get("resuming"):  # the same user message, resumed after the host's answers
                return
            await hooks.chain("session-start", {"session_id": _turn.get()["session_id"]}, _turn.get())

        async def after_invocation(event: Any) -> None:
            reason = str(getattr(event.result, "stop_reason", "")) if event.result is not None else "error"
            if reason == "interrupt":  # held for the host: the session goes on when it resumes
                return
            await hooks.chain("session-end", {"session_id": _turn.get()["session_id"], "subtype": SUBTYPES.get(reason, reason)}, _turn.get())

        def call_of(tool_use: Any) -> dict[str, Any]:
            return {"id": tool_use.get("toolUseId"), "name": tool_use.get("name"), "args": tool_use.get("input")}

        def interrupt(event: Any, name: str, call: dict[str, Any]) -> Any:
            """strands' human-in-the-loop gate: the first time it holds the call (the invocation stops
            with it in ``AgentResult.interrupts``), on the resume it returns the host's response."""
            try:
                return event.interrupt(name, reason=call)
            except InterruptException:
                holder["interrupted"] = True
                raise

        async def before_tool(event: Any) -> None:
            call = call_of(event.tool_use)  # pre-tool-call was dispatched for the batch in before_tools
            kind = kinds.get(call["name"])
            if kind == "interactive":  # answered by the host (precheck, then the tool) while held
                response = interrupt(event, INTERACTIVE, call)
                if "denied" in response:
                    event.cancel_tool = f"denied by policy: {response['denied']}"
                else:
                    holder["answers"][call["id"]] = response
            elif kind == "resource":  # held for plan-ready; the host's response is the decision
                vetoed = interrupt(event, RESOURCE, call).get("vetoed")
                if vetoed is not None:
                    event.cancel_tool = f"Vetoed: {vetoed}"
            elif kind == "data_source":
                verdict = await doubles.policy_precheck(call, _turn.get())
                if not verdict.get("allow", True):
                    event.cancel_tool = f"denied by policy: {verdict.get('reason')}"

        async def after_tool(event: Any) -> None:
            result = event.result or {}
            content = "".join(c.get("text", "") for c in result.get("content") or [])
            payload = {"call": call_of(event.tool_use), "result": {"content": content, "is_error": result.get("status") == "error"}}
            holder.setdefault("results", []).append(payload)  # dispatched in after_tools, once all ended

        async def before_tools(event: Any) -> None:
            if holder.pop("resuming", False):  # the held batch again: its pre-tool-calls were dispatched
                return
            uses = [b["toolUse"] for b in event.message.get("content") or [] if "toolUse" in b]
            holder["order"] = [u.get("toolUseId") for u in uses]  # request order, for the host's answers
            for use in uses:  # 003 step 7: every block, in declaration order, before any tool starts
                await hooks.chain("pre-tool-call", call_of(use), _turn.get())

        async def after_tools(event: Any) -> None:
            if holder.pop("interrupted", False):  # the batch goes on when the host resumes it
                return
            if "plan" not in holder and not holder.get("cancelled"):  # no resource call was held: an empty plan
                holder["plan"] = await hooks.plan_ready({"items": []}, _turn.get())
            for payload in holder.pop("results", []):  # 003 step 13: after every call of the batch ended
                await hooks.chain("post-tool-call", payload, _turn.get())
            await hooks.chain("post-apply", holder.pop("plan", {"items": []}), _turn.get())

        def make_tool(tool: ToolDef) -> Any:
            async def invoke(tool_use: Any, **_: Any) -> dict[str, Any]:
                call_id = tool_use["toolUseId"]
                answer = holder["answers"].pop(call_id, None)  # an interactive call: the host's answer
                status, content = (answer["status"], answer["content"]) if answer is not None else await _run_tool({"id": call_id, "name": tool.name, "args": tool_use.get("input") or {}}, doubles)
                if tool.terminates_turn:  # what vended_tools.stop does: finish the batch, then end the loop
                    holder["agent"].cancel(after_current_tools=True)
                return {"toolUseId": call_id, "status": status, "content": [{"text": content}]}

            spec = {"name": tool.name, "description": tool.description or tool.name, "inputSchema": {"json": tool.input_schema}}
            return PythonAgentTool(tool.name, spec, invoke)

        agent = Agent(
            model=ScriptedModel(), tools=[make_tool(t) for t in scenario.tools], system_prompt=scenario.system_prompt or None,
            callback_handler=None, tool_executor=ConcurrentToolExecutor(),
            name="akc", agent_id=f"akc_{uuid.uuid4().hex[:8]}",
        )
        holder["agent"] = agent
        agent.add_middleware(InvokeModelStage, model_stage)
        agent.hooks.add_callback(BeforeInvocationEvent, before_invocation)
        agent.hooks.add_callback(AfterInvocationEvent, after_invocation)
        agent.hooks.add_callback(BeforeToolCallEvent, before_tool)
        agent.hooks.add_callback(AfterToolCallEvent, after_tool)
        agent.hooks.add_callback(BeforeToolsEvent, before_tools)
        agent.hooks.add_callback(AfterToolsEvent, after_tools)
        return agent, hooks, holder


#: The names of the adapter's ``BeforeToolCallEvent`` interrupts (one per held call).
INTERACTIVE, RESOURCE = "akc-interactive", "akc-resource"


async def _run_tool(call: dict[str, Any], doubles: Doubles) -> tuple[str, str]:
    """The scenario's tool: (strands ToolResult status, text); a scripted failure is an error result."""
    try:
        out = await doubles.invoke_tool(call, _turn.get())
        return ("error" if out.get("is_error") else "success"), str(out.get("content", ""))
    except ToolFailed as exc:
        return "error", str(exc)


async def _answer(interrupts: Any, state: dict[str, Any], hooks: Hooks, doubles: Doubles) -> list[dict[str, Any]]:
    """The host's side of strands' human-in-the-loop (``AgentResult.interrupts``): the held
    interactive calls answered one at a time in request order (the policy precheck, then the tool)
    and resumed; then, in a round of their own, the plan-ready chain over the held resource calls;
    one ``interruptResponse`` each. A host
    cancel stops the answering; the run resumes cancelled (strands then cancels the calls still
    held before any starts, ``event_loop/event_loop.py:915-929``)."""
    turn = _turn.get()
    responses: list[dict[str, Any]] = []

    def respond(held: Any, response: Any) -> None:
        responses.append({"interruptResponse": {"interruptId": held.id, "response": response}})

    order = state.get("order") or []
    held_calls = sorted(interrupts or [], key=lambda h: order.index(h.reason["id"]) if h.reason["id"] in order else len(order))
    for held in held_calls:
        if held.name != INTERACTIVE or state["cancelled"]:
            continue
        verdict = await doubles.policy_precheck(held.reason, turn)
        if not verdict.get("allow", True):
            respond(held, {"denied": str(verdict.get("reason"))})
        else:
            status, content = await _run_tool(held.reason, doubles)
            respond(held, {"status": status, "content": content})
    if responses:
        # the interactive answers resume alone: the resource calls, left unanswered, pause again
        # (types/interrupt.py:104-111) and get their plan in the next round, so the results come
        # back grouped by kind in the steps' order (data-source, interactive, resource)
        return responses
    resources = [held for held in held_calls if held.name == RESOURCE]
    if resources and not state["cancelled"]:
        items = [{"call_id": h.reason["id"], "name": h.reason["name"], "args": h.reason["args"], "vetoed": False, "reason": None} for h in resources]
        state["plan"] = plan = await hooks.plan_ready({"items": items}, turn)
        decided = Hooks.decisions(plan)
        for held in resources:
            respond(held, {"vetoed": decided.get(held.reason["id"], "removed from the plan")})
    return responses


def factory() -> StrandsAdapter:
    try:  # set the in-memory span exporter up before strands makes its tracer
        OtelSpans.install()
    except ImportError:  # the framework's env is not this one: the matrix lists it so
        pass
    return StrandsAdapter()
