"""openai-agents (``Runner.run``) as a ``kernel``-profile kernel. Extra: ``openai-agents``
(pinned in ``scripts/requirements/openai-agents.txt``; mapping read against openai-agents 0.24.0).

One user message is one ``await Runner.run(agent, text, session=..., hooks=..., run_config=...)``;
messages of one scenario session share one in-memory ``SQLiteSession``, the SDK's own
conversation store (its items are the journal reported). The model is a ``Model`` subclass
whose ``get_response`` sends the request to the harness's scripted model
(``Doubles.model_stream``) and returns the chunks as Responses output items. Every scenario tool
is a ``FunctionTool`` (the scenario's JSON schema, ``strict_json_schema=False``) whose
``on_invoke_tool`` calls ``Doubles.invoke_tool``.

What maps to what:

* ``session-start`` → ``RunHooks.on_agent_start`` (once per user message: a run resumed after
  approvals starts the agent again); ``session-end`` → ``RunHooks.on_agent_end`` (only when the
  agent produces a final output), and on a cancelled run the end of the run's ``agent`` span, which
  the SDK finishes on every exit (``run.py:2502-2503``, in a ``finally``) and reports to the
  tracing processors: session-end is dispatched as a cancel or an exception leaves ``Runner.run``
  (or the host's approval decision between two runs).
* ``context-assemble`` → ``RunConfig.call_model_input_filter``; its budget is the run's live
  ``Usage`` (model requests so far, tokens), the object the SDK hands ``RunHooks.on_agent_start``
  and adds every response to (``run_internal/run_loop.py:2821-2825``, ``usage.py:257-268``); a
  replaced history is converted back and sent.
* ``pre-model-call`` → the same filter, after context-assemble (its payload is context-assemble's
  output): it returns the input and
  instructions the model is sent (``run_internal/turn_preparation.py:55-80``); the tool specs and
  model settings are not part of it. ``post-model-response`` → ``RunHooks.on_llm_end``,
  observe-only in the SDK (it returns nothing), so a ``replace`` outcome changes nothing.
* Tool concurrency: the SDK's default, every function call of a response started together
  (``run_config.py:143-151``). Its only cap, ``max_function_tool_concurrency``, is for all calls
  alike. Tool kinds → the SDK's human-in-the-loop pause: an interactive tool, like a resource tool,
  is ``FunctionTool(needs_approval=True)``; its call waits while the response's other calls run to
  their end (``run_internal/tool_execution.py:1914-1975``); the host then approves the interactive
  calls and resumes with that cap at 1, so they run one at a time, and only then hands the resource
  calls to plan-ready.
* ``pre-tool-call`` (observe) → ``RunHooks.on_llm_end`` (``lifecycle.py:28-36``), after
  post-model-response: it gets the whole response before any tool starts, so pre-tool-call is
  dispatched for every function call of it in order, calls the precheck then refuses included.
  ``post-tool-call`` and ``post-apply`` → ``Agent.tool_use_behavior`` as a callable, which the SDK
  calls once with every ``FunctionToolResult`` of the response after all its function tools ran,
  a refused or vetoed call's included (``agent.py:94-97``, ``run_internal/turn_resolution.py:246-247``);
  it keeps ``stop_at_tool_names``' meaning for ``terminates_turn`` tools. A tool that raises
  becomes ``default_tool_error_function``'s message, as with ``@function_tool``.
* ``plan-ready`` → the SDK's tool approvals: resource tools are ``FunctionTool(needs_approval=True)``,
  held as ``ToolApprovalItem`` while the response's other calls run
  (``run_internal/tool_execution.py:1914-1975``); the run returns them as ``result.interruptions``
  (the plan), the veto chain decides, ``RunState.approve``/``reject(rejection_message=)``
  (``run_state.py:1380-1420``) and ``Runner.run(agent, state)`` applies the approved calls. A
  turn without resource calls gets plan-ready with an empty plan from ``tool_use_behavior``.
* The policy precheck → a ``ToolInputGuardrail`` on every data-source and interactive tool
  (``tool_guardrails.py``): a denial is ``reject_content`` with the reason, so the tool does not
  run and the model gets the message.
* Spans → a ``TracingProcessor`` collecting the run's trace: ``function`` spans are tool spans,
  ``agent`` spans the session, ``turn`` spans (``tracing/span_data.py:101-117``, opened per turn
  in ``run_internal/run_loop.py:1980``) turns; anything else is ``other``.
* ``max_turns`` → ``Runner.run(max_turns=...)``, which raises ``MaxTurnsExceeded`` (reported in
  ``RunResult.raised``); no ``error_handlers`` are installed, as one would have to synthesise
  the final answer.
* ``terminates_turn`` → the ``tool_use_behavior`` callable returns
  ``ToolsToFinalOutputResult(is_final_output=True)`` when a listed tool ran, as
  ``{"stop_at_tool_names": [...]}`` would (``check_for_final_output_from_tools`` in
  ``run_internal/turn_resolution.py``).
* Cancellation → the host cancels the task running ``Runner.run``.

What does not exist in openai-agents, so is left out: ConcurrencySpec (every function
call of a response runs concurrently), a doom-loop detector, a limit-reached final turn, cost per
usage event from a model's pricing (usage is not reported), a wall-clock bound, a span for the
approval decision (the veto chain), and model-call spans from the runner itself (a model-call span
is the model provider's to emit; the adapter's model opens a ``generation`` span as the SDK's do).
"""

from __future__ import annotations

import contextvars

import anyio
import json
import uuid
from importlib import metadata
from typing import Any

from conformance.boundary.adapter import AdapterInfo, Doubles, Mechanism, Outcome, RunResult, Span
from conformance.adapters._common import mapping, mapping_code, Hooks, Run, Session, parse_args, run_messages, tool_spec
from conformance.boundary.scenario import Scenario, ToolDef

_turn: contextvars.ContextVar[dict[str, Any]] = contextvars.ContextVar("akc_oai_turn")
#: Per user message: the run's live ``Usage``, the calls of the responses by id, the plan the veto
#: chain left, and what the SDK has signalled (agent started, final output, run's agent span ended).
_state: contextvars.ContextVar[dict[str, Any]] = contextvars.ContextVar("akc_oai_state")
#: trace id → called (synchronously, by the tracing processor) when that run's agent span ends.
_agent_span_ends: dict[str, Any] = {}


def _version() -> str:
    try:
        return metadata.version("openai-agents")
    except metadata.PackageNotFoundError:
        return "not installed"


# --------------------------------------------------------------------------- items


def _plain(item: Any) -> dict[str, Any]:
    if hasattr(item, "model_dump"):
        return item.model_dump(exclude_none=True)
    return dict(item) if isinstance(item, dict) else {}


def _text_of(content: Any) -> str:
    if isinstance(content, str):
        return content
    parts = []
    for c in content or []:
        c = _plain(c)
        if "text" in c:
            parts.append(str(c["text"]))
    return "".join(parts)


@mapping_code
def to_canonical(items: list[Any]) -> list[dict[str, Any]]:
    """Responses input/output items → the boundary's messages (an assistant message and the
    function calls that follow it are one assistant message)."""
    out: list[dict[str, Any]] = []
    for raw in items:
        item = _plain(raw)
        kind = item.get("type")
        role = item.get("role")
        if kind == "function_call":
            call = {"id": item.get("call_id"), "name": item.get("name"), "args": parse_args(item.get("arguments"))}
            if out and out[-1]["role"] == "assistant":
                out[-1].setdefault("tool_calls", []).append(call)
            else:
                out.append({"role": "assistant", "tool_calls": [call]})
        elif kind == "function_call_output":
            output = item.get("output")
            out.append({"role": "tool_result", "call_id": item.get("call_id"), "content": output if isinstance(output, str) else json.dumps(output), "is_error": False})
        elif role == "assistant":
            msg: dict[str, Any] = {"role": "assistant"}
            text = _text_of(item.get("content"))
            if text:
                msg["text"] = text
            out.append(msg)
        elif role in ("system", "developer"):
            out.append({"role": "system", "text": _text_of(item.get("content"))})
        elif role == "user":
            out.append({"role": "user", "text": _text_of(item.get("content"))})
    return out


@mapping_code
def from_canonical(history: Any) -> list[dict[str, Any]]:
    """The boundary's messages → Responses input items."""
    items: list[dict[str, Any]] = []
    for msg in history if isinstance(history, list) else []:
        role = msg.get("role") if isinstance(msg, dict) else None
        if role in ("user", "system"):
            items.append({"role": role, "content": str(msg.get("text", ""))})
        elif role == "assistant":
            if msg.get("text"):
                items.append({"type": "message", "role": "assistant", "content": [{"type": "output_text", "text": msg["text"], "annotations": []}]})
            for call in msg.get("tool_calls") or []:
                items.append({"type": "function_call", "call_id": call["id"], "name": call["name"], "arguments": json.dumps(call.get("args") or {})})
        elif role == "tool_result":
            items.append({"type": "function_call_output", "call_id": msg.get("call_id"), "output": str(msg.get("content", ""))})
    return items


def response_from_chunks(chunks: list[dict[str, Any]]) -> Any:
    """The scripted model's stream chunks → one ModelResponse (a text message, then the calls)."""
    from agents import ModelResponse, Usage
    from openai.types.responses import ResponseFunctionToolCall, ResponseOutputMessage, ResponseOutputText
    from openai.types.responses.response_usage import InputTokensDetails

    text = "".join(c.get("text", "") for c in chunks if c.get("type") == "text")
    output: list[Any] = []
    if text:
        output.append(ResponseOutputMessage(
            id=f"msg_{uuid.uuid4().hex[:12]}", type="message", role="assistant", status="completed",
            content=[ResponseOutputText(text=text, type="output_text", annotations=[])],
        ))
    output += [
        ResponseFunctionToolCall(id=c["id"], call_id=c["id"], type="function_call", name=c["name"], arguments=c.get("input_json") or "{}")
        for c in chunks
        if c.get("type") == "tool_use"
    ]
    usage = next((c for c in reversed(chunks) if c.get("type") == "usage"), {})
    i, o, cached = int(usage.get("input_tokens", 0)), int(usage.get("output_tokens", 0)), int(usage.get("cached_input_tokens", 0))
    return ModelResponse(
        output=output,
        usage=Usage(
            requests=1, input_tokens=i + cached, output_tokens=o, total_tokens=i + cached + o,
            input_tokens_details=InputTokensDetails(cached_tokens=cached, cache_write_tokens=0),
        ),
        response_id=None,
    )


# --------------------------------------------------------------------------- tracing


class _Collector:
    """One process-wide TracingProcessor; spans are kept per trace id (one per run)."""

    _installed: _Collector | None = None

    def __init__(self) -> None:
        self.spans: dict[str, list[Span]] = {}

    @classmethod
    def install(cls) -> _Collector:
        if cls._installed is None:
            from agents.tracing import TracingProcessor, set_trace_processors

            collector = cls()

            class Processor(TracingProcessor):
                def on_trace_start(self, trace: Any) -> None: ...
                def on_trace_end(self, trace: Any) -> None: ...
                def on_span_start(self, span: Any) -> None: ...
                def shutdown(self) -> None: ...
                def force_flush(self) -> None: ...

                def on_span_end(self, span: Any) -> None:
                    collector.add(span)
                    ended = _agent_span_ends.get(span.trace_id) if getattr(span.span_data, "type", None) == "agent" else None
                    if ended is not None:
                        ended()

            set_trace_processors([Processor()])  # replaces the exporter to OpenAI's backend
            cls._installed = collector
        return cls._installed

    def add(self, span: Any) -> None:
        data = span.span_data
        kind = {"function": "tool", "agent": "session", "generation": "model_call", "turn": "turn"}.get(getattr(data, "type", ""), "other")
        self.spans.setdefault(span.trace_id, []).append(
            Span(
                span_id=span.span_id,
                parent_id=span.parent_id,
                name=str(getattr(data, "name", None) or getattr(data, "type", "span")),
                kind=kind,
                attributes={"sdk_type": getattr(data, "type", None)},
            )
        )

    def take(self, trace_id: str) -> list[Span]:
        return self.spans.pop(trace_id, [])


# --------------------------------------------------------------------------- the adapter


def _m(kind: str, via: str | None = None, note: str | None = None) -> Mechanism:
    return Mechanism(kind=kind, via=via, note=note)  # type: ignore[arg-type]


#: How each hook point, capability and observation maps onto openai-agents 0.24 (anything not
#: named is absent). RunHooks return nothing (agents/lifecycle.py:18-36): observe-only.
MECHANISMS: dict[str, Mechanism] = {
    "session-start": _m("observe-only", "RunHooks.on_agent_start"),
    "context-assemble": _m("native", "RunConfig.call_model_input_filter"),
    "pre-model-call": _m("native", "RunConfig.call_model_input_filter", "replaces the input and instructions; the tool specs and params it cannot"),
    "post-model-response": _m("observe-only", "RunHooks.on_llm_end"),
    "pre-tool-call": _m("observe-only", "RunHooks.on_llm_end (every function call of the response, before any tool starts)"),
    "post-tool-call": _m("observe-only", "Agent.tool_use_behavior callable (every FunctionToolResult of the response, after all ran)"),
    "session-end": _m("observe-only", "RunHooks.on_agent_end; on a cancel or a raise, the end of the run's agent span (TracingProcessor.on_span_end)"),
    "plan-ready": _m("native", "FunctionTool(needs_approval) on resource tools → RunResult.interruptions → RunState.approve/reject, resumed"),
    "post-apply": _m("observe-only", "Agent.tool_use_behavior callable (after every function tool of the response)"),
    "policy_precheck": _m("native", "ToolInputGuardrail (reject_content)"),
    "tool_kinds": _m("native", "plain tool / FunctionTool(needs_approval) interactive approved by the host / needs_approval plan item"),
    "concurrency_keys": _m("absent", note="every function call of a response runs concurrently; max_function_tool_concurrency caps them all alike"),
    "terminal_tool": _m("native", "Agent.tool_use_behavior stop_at_tool_names"),
    "max_turns": _m("native", "Runner.run(max_turns=) → MaxTurnsExceeded"),
    "final_turn": _m("absent", note="MaxTurnsExceeded is raised unless an error handler synthesises the output"),
    "doom_loop": _m("absent"),
    "usage": _m("absent", note="token usage only; no cost from a model's pricing"),
    "spans": _m("native", "agents.tracing (agent, turn, function and generation spans)"),
    "journal": _m("native", "SQLiteSession items"),
    "cancellation": _m("native", "cancelling the task that awaits Runner.run (asyncio)"),
    "subagents": _m("not-wired", "Agent.as_tool (agents/agent.py:606)", "the adapter does not map child agents onto it"),
}


class OpenAIAgentsAdapter:
    info = AdapterInfo(
        name="openai-agents",
        version=_version(),
        homepage="https://openai.github.io/openai-agents-python/",
        profiles=["kernel"],
        capabilities=[],
        mechanisms=MECHANISMS,
    )

    async def run(self, scenario: Scenario, doubles: Doubles) -> RunResult:
        from agents import RunConfig, Runner, SQLiteSession

        collector = _Collector.install()
        agent, run_hooks, input_filter, hooks = self._build(scenario, doubles)
        stores: dict[str, Any] = {}
        traces: list[str] = []

        async def run_one(run: Run, session: Session, index: int, text: str) -> Outcome:
            turn = run.turn(session, index)
            _turn.set(turn)
            state: dict[str, Any] = {"calls": {}, "posted": set()}
            _state.set(state)
            store = stores.get(session.id)
            if store is None:
                store = stores[session.id] = SQLiteSession(session.id)
            trace_id = f"trace_{uuid.uuid4().hex}"
            traces.append(trace_id)
            config = RunConfig(trace_id=trace_id, call_model_input_filter=input_filter, tracing_disabled=False)
            kwargs: dict[str, Any] = {"session": store, "hooks": run_hooks, "run_config": config}
            if scenario.bounds.max_turns is not None:
                kwargs["max_turns"] = scenario.bounds.max_turns
            _agent_span_ends[trace_id] = lambda: state.__setitem__("run_ended", True)
            try:
                state["run_ended"] = False
                result = await Runner.run(agent, text, **kwargs)
                while result.interruptions:
                    # the calls the SDK held while the others ran: the interactive ones first, then plan-ready over the resource ones
                    held = list(result.interruptions)
                    resumed = result.to_state()
                    kinds = {t.name: t.kind for t in scenario.tools}
                    pending = [i for i in held if kinds.get(getattr(i, "tool_name", None) or getattr(getattr(i, "raw_item", None), "name", None)) != "interactive"]
                    asks = [i for i in held if i not in pending]
                    if asks:  # interactive calls first, one at a time, after the data-source calls ended; the plan waits
                        from agents import ToolExecutionConfig

                        for item in asks:
                            resumed.approve(item)
                        config.tool_execution = ToolExecutionConfig(max_function_tool_concurrency=1)
                        state["run_ended"] = False
                        result = await Runner.run(agent, resumed, **kwargs)
                        config.tool_execution = None
                        continue
                    decided = {}
                    if pending:
                        plan = await hooks.plan_ready({"items": [_plan_item(i) for i in pending]}, turn)
                        state["plan"] = plan
                        decided = Hooks.decisions(plan)
                    for item in pending:
                        reason = decided.get(_plan_item(item)["call_id"], "removed from the plan")
                        if reason is None:
                            resumed.approve(item)
                        else:
                            resumed.reject(item, rejection_message=f"Vetoed: {reason}")
                    await anyio.lowlevel.checkpoint()  # a cancel during the decision lands here, between two runs
                    state["run_ended"] = False
                    result = await Runner.run(agent, resumed, **kwargs)
            except BaseException as exc:
                # a run cancelled or raising has no on_agent_end; the SDK still ended its agent span
                if state["run_ended"] and not state.get("final_output"):
                    subtype = "cancelled" if isinstance(exc, anyio.get_cancelled_exc_class()) else "error"
                    with anyio.CancelScope(shield=True):
                        await hooks.chain("session-end", {"session_id": turn["session_id"], "subtype": subtype}, turn)
                raise
            finally:
                _agent_span_ends.pop(trace_id, None)
                # read what the SDK stored even when the run was cancelled (else the journal
                # would be empty and STOP-003 would pass vacuously)
                with anyio.CancelScope(shield=True):
                    session.messages = to_canonical(await store.get_items())
            return Outcome(message=index, session_id=session.id, status="completed", subtype="success", reply=str(result.final_output))

        result = await run_messages(scenario, doubles, run_one)
        for store in stores.values():
            store.close()
        result.spans = [s for t in traces for s in collector.take(t)]
        return result

    def _build(self, scenario: Scenario, doubles: Doubles) -> tuple[Any, Any, Any, Hooks]:
        from agents import Agent, FunctionTool, ModelSettings, RunHooks, ToolGuardrailFunctionOutput, ToolInputGuardrail
        from agents.models.interface import Model
        from agents.run_config import ModelInputData

        hooks = Hooks(scenario, doubles)

        def specs(tools: list[Any]) -> list[dict[str, Any]]:
            return [tool_spec(t.name, t.description, t.params_json_schema) for t in tools if isinstance(t, FunctionTool)]

        class ScriptedModel(Model):
            async def get_response(self, system_instructions: str | None, input: Any, model_settings: Any, tools: list[Any], output_schema: Any, handoffs: Any, tracing: Any, **_: Any) -> Any:
                with mapping("the model request"):
                    messages = [{"role": "system", "text": system_instructions}] if system_instructions else []
                    messages += to_canonical([{"role": "user", "content": input}] if isinstance(input, str) else list(input))
                    params = {k: v for k, v in model_settings.to_json_dict().items() if v is not None}
                    request = {"messages": messages, "tools": specs(tools), "params": params}
                from agents.tracing import generation_span

                # What every SDK model does (models/openai_chatcompletions.py:236): the model call
                # runs inside a generation span, disabled when the run's tracing is.
                with generation_span(model=scenario.model.name, model_config=params, disabled=tracing.is_disabled()):
                    chunks = [chunk async for chunk in doubles.model_stream(request, _turn.get())]
                with mapping("the model response"):
                    return response_from_chunks(chunks)

            def stream_response(self, *args: Any, **kwargs: Any) -> Any:
                raise NotImplementedError("Runner.run uses get_response")

        async def policy_guardrail(data: Any) -> Any:
            ctx = data.context
            call = {"id": ctx.tool_call_id, "name": ctx.tool_name, "args": parse_args(ctx.tool_arguments)}
            out = await doubles.policy_precheck(call, _turn.get())
            if out.get("allow", True):
                return ToolGuardrailFunctionOutput.allow()
            return ToolGuardrailFunctionOutput.reject_content(f"denied by policy: {out.get('reason')}")

        def make_tool(tool: ToolDef) -> Any:
            async def invoke(ctx: Any, args_json: str) -> str:
                try:
                    out = await doubles.invoke_tool({"id": ctx.tool_call_id, "name": tool.name, "args": parse_args(args_json)}, _turn.get())
                except Exception as exc:  # what @function_tool does by default (tool.py:765-800, 2032-2041)
                    from agents.tool import default_tool_error_function

                    return default_tool_error_function(ctx, exc)
                return str(out.get("content", ""))

            guardrails = [ToolInputGuardrail(guardrail_function=policy_guardrail, name="policy")] if tool.kind in ("data_source", "interactive") else None
            return FunctionTool(
                name=tool.name, description=tool.description or tool.name, params_json_schema=tool.input_schema,
                on_invoke_tool=invoke, strict_json_schema=False, tool_input_guardrails=guardrails,
                needs_approval=tool.kind in ("resource", "interactive"),  # held: interactive ones run after the others, resource ones wait for the plan
            )

        class MappedHooks(RunHooks):
            async def on_agent_start(self, context: Any, agent: Any) -> None:
                state = _state.get()
                state["usage"] = context.usage  # the run's own Usage, updated after every response
                if state.get("started"):  # a run resumed after approvals: the same user message
                    return
                state["started"] = True
                await hooks.chain("session-start", {"session_id": _turn.get()["session_id"]}, _turn.get())

            async def on_agent_end(self, context: Any, agent: Any, output: Any) -> None:
                _state.get()["final_output"] = True
                await hooks.chain("session-end", {"session_id": _turn.get()["session_id"], "subtype": "success"}, _turn.get())

            async def on_llm_end(self, context: Any, agent: Any, response: Any) -> None:
                msgs = to_canonical(list(response.output))
                await hooks.chain("post-model-response", msgs[0] if msgs else {"role": "assistant"}, _turn.get())
                # the whole response, before any of its tools starts: pre-tool-call for each call in order
                for item in response.output:
                    if getattr(item, "type", None) == "function_call":
                        call = {"id": item.call_id, "name": item.name, "args": parse_args(item.arguments)}
                        _state.get()["calls"][item.call_id] = call
                        await hooks.chain("pre-tool-call", call, _turn.get())

        async def input_filter(data: Any) -> Any:
            """context-assemble, then pre-model-call: the SDK's hook that runs immediately before each
            model call and returns the input the model is sent (run_internal/turn_preparation.py:55-80)."""
            md = data.model_data
            history = to_canonical(list(md.input))
            usage = _state.get().get("usage")  # the SDK's own counters of this run
            budget = {"turns_used": usage.requests, "max_turns": scenario.bounds.max_turns, "input_tokens": usage.input_tokens, "output_tokens": usage.output_tokens} if usage is not None else {}
            assembled: dict[str, Any] = {"history": history, "budget": budget}  # context-assemble's output, handed on
            if hooks.has("context-assemble"):
                out, replaced = await hooks.chain("context-assemble", assembled, _turn.get())
                if replaced and isinstance(out, dict):
                    assembled = out
                    md = ModelInputData(input=from_canonical(out.get("history") or []), instructions=md.instructions)
            if hooks.has("pre-model-call"):
                payload = {"payload": assembled, "tool_specs": specs(list(data.agent.tools)), "params": {}}
                out, replaced = await hooks.chain("pre-model-call", payload, _turn.get())
                if replaced and isinstance(out, dict):
                    new = (out.get("payload") or {}).get("history") or []
                    system = "\n".join(m.get("text", "") for m in new if m.get("role") == "system") or md.instructions
                    md = ModelInputData(input=from_canonical([m for m in new if m.get("role") != "system"]), instructions=system)
            return md

        terminal = [t.name for t in scenario.tools if t.terminates_turn]
        resources = {t.name for t in scenario.tools if t.kind == "resource"}

        async def after_tools(context: Any, results: list[Any]) -> Any:
            """``Agent.tool_use_behavior`` as a callable (agent.py:94-97): the SDK calls it once with
            every FunctionToolResult of the response, after all its function tools ran (a resumed
            run: the approved ones too, turn_resolution.py:3090-3105). post-tool-call per result,
            then post-apply with the plan the veto chain left; a turn without resource calls got
            no approval round, so its plan-ready (an empty plan) is dispatched here first."""
            from agents.agent import ToolsToFinalOutputResult

            state, turn = _state.get(), _turn.get()
            if not any(r.tool.name in resources for r in results):
                state["plan"] = await hooks.plan_ready({"items": []}, turn)
            for r in results:
                cid = _call_id(r.run_item)
                if cid in state["posted"]:
                    continue
                state["posted"].add(cid)
                call = state["calls"].get(cid) or {"id": cid, "name": r.tool.name, "args": {}}
                await hooks.chain("post-tool-call", {"call": call, "result": {"content": str(r.output), "is_error": False}}, turn)
            await hooks.chain("post-apply", state.pop("plan", None) or {"items": []}, turn)
            for r in results:
                if r.tool.name in terminal:
                    return ToolsToFinalOutputResult(is_final_output=True, final_output=r.output)
            return ToolsToFinalOutputResult(is_final_output=False, final_output=None)

        agent = Agent(
            name="akc",
            tool_use_behavior=after_tools,
            instructions=scenario.system_prompt,
            model=ScriptedModel(),
            model_settings=ModelSettings(),
            tools=[make_tool(t) for t in scenario.tools],
        )
        return agent, MappedHooks(), input_filter, hooks


def _call_id(item: Any) -> Any:
    """The call id of a run item (a tool output or an approval item): its raw item's ``call_id``."""
    raw = getattr(item, "raw_item", None)
    return raw.get("call_id") if isinstance(raw, dict) else getattr(raw, "call_id", None)


@mapping_code
def _plan_item(item: Any) -> dict[str, Any]:
    """A ``ToolApprovalItem`` as a plan item (docs/adapter.md, plan-ready)."""
    raw = item.raw_item
    args = raw.get("arguments") if isinstance(raw, dict) else getattr(raw, "arguments", None)
    return {"call_id": _call_id(item), "name": item.tool_name, "args": parse_args(args), "vetoed": False, "reason": None}


def factory() -> OpenAIAgentsAdapter:
    try:  # the SDK's first span sets its tracing up (seconds): do it before any scenario's clock runs
        from agents.tracing import generation_span

        with generation_span(disabled=True):
            pass
        _Collector.install()
    except ImportError:  # the framework is not installed here: the matrix lists it so
        pass
    return OpenAIAgentsAdapter()
