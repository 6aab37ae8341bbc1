"""smolagents (``ToolCallingAgent``) as a ``kernel``-profile kernel. Extra: ``smolagents``
(pinned in ``scripts/requirements/smolagents.txt``; mapping read against smolagents 1.26.0).

smolagents is synchronous: one user message is one ``agent.run(text, stream=True, reset=...,
max_steps=...)`` iterated in a worker thread (``anyio.to_thread.run_sync``), smolagents' own way to
follow a run step by step; messages of one scenario session run on the same agent with
``reset=False`` (its memory carries over). The model
is a ``Model`` subclass whose ``generate`` calls the harness's async scripted model back on the
event loop (``anyio.from_thread.run`` with the loop's token, since smolagents runs parallel tool
calls in threads of its own); every scenario tool is a ``Tool`` whose ``forward`` calls
``Doubles.invoke_tool`` the same way.

What maps to what:

* ``max_turns`` → ``max_steps``. When the steps run out smolagents itself makes one more model
  call without tools and with its ``final_answer`` prompt (``_handle_max_steps_reached`` →
  ``provide_final_answer`` in ``agents.py``) and reports the run's state ``max_steps_error``,
  reported here as subtype ``error_max_turns``; state ``success`` is ``success``. Without
  ``max_turns`` the agent's default ``max_steps`` (20) applies.
* Cancellation → ``agent.interrupt()`` (checked at the start of each step); the
  ``AgentError("Agent interrupted.")`` it then raises is reported as a cancelled outcome.
* Tool schemas → ``Tool.inputs``: each declared property with its JSON type; a schema that
  allows any keys (no ``additionalProperties: false``) also accepts undeclared keys as type
  ``any`` (the translation of the schema into smolagents' input vocabulary, not a change to its
  argument validation).
* Model messages → the boundary's messages the way smolagents' own API models convert them
  (``tool_role_conversions``): its ``tool-call`` messages are assistant text and its
  ``tool-response`` observations are user text, so no request carries structured tool results.

* The stream of ``run(stream=True)`` (the agent suspended at each yield), with
  ``stream_outputs=True`` and a ``generate_stream`` on the model (one delta per streamed chunk):
  ``post-model-response`` (observe) → the first event after a step's ``ChatMessageStreamDelta`` events
  (the model's stream has ended, ``agents.py:1292-1307``), with the message they agglomerate to;
  in the final tool-less turn of a run out of steps (a plain ``generate``, no deltas) the
  ``ActionStep`` yielded after ``_handle_max_steps_reached``, with the answer text it keeps
  (``agents.py:625-637, 606-607``). ``pre-tool-call`` (observe) → each ``ToolCall`` event, yielded
  for every call of the response in declaration order before the thread pool starts any
  (``agents.py:1375-1380, 1416-1430``). ``post-tool-call`` (observe) → at the step's
  ``ActionOutput``, yielded once every call has ended (``agents.py:1356``), one per call in the
  order asked with its ``ToolOutput`` (``agents.py:1423, 1431-1434``). A failing call aborts the
  step (``agents.py:1431-1432, 1490-1502``): no ``ActionOutput``, so no post-tool-call.
* ``session-end`` (observe) → a ``step_callbacks`` entry for ``FinalAnswerStep``, which
  ``_finalize_step`` calls once a run ends with an answer or out of steps (``agents.py:609-623``);
  a run that raises (interrupted, a model error) has no final step, so no session-end.
* ``post-apply`` (observe) → a ``step_callbacks`` entry for ``ActionStep``, which
  ``_finalize_step`` calls once a step has run every call of its response (``agents.py:597-603,
  620-623``), with the plan smolagents has no veto chain for: the step's resource calls, none
  vetoed (from the step's ``tool_calls``, ``memory.py:51-64``). Not for the step that calls
  ``final_answer``.
* Interactive tools one at a time → ``max_tool_threads=1`` (the size of the step's thread pool,
  ``agents.py:1238, 1426``) when the scenario has one; the step's other calls then run one at a
  time too (no per-call setting exists).

What does not exist in smolagents, so is left out: a point before the model call
(session-start, context-assemble, pre-model-call: ``step_callbacks`` only observe a finished
step, and the stream yields nothing before the model answers), any point that can change what it
sees, a plan / apply gate or veto chain, a policy precheck, tool kinds, ConcurrencySpec (several calls of one step run in a thread
pool, all in parallel), a terminal-tool annotation (only its own ``final_answer`` tool ends a run:
a plain text answer is not a final answer), a doom-loop detector, cost per usage event from a
model's pricing (usage is not reported), a cost or wall-clock bound, and a stored journal (the journal reported is the agent's memory as messages).

Spans: a ``turn`` span per ``ActionStep`` (its ``timing``, the tool-less turn after max_steps
included), and the spans of smolagents' own tracing (its ``telemetry`` extra,
``openinference-instrumentation-smolagents``: ``SmolagentsInstrumentor`` with an in-memory exporter),
mapped by their ``openinference.span.kind``: ``TOOL`` (``Tool.__call__``, one per call) → ``tool``,
``LLM`` → ``model_call``, the run's ``AGENT`` and each step's ``CHAIN`` → ``other``, each with the
parent the instrumentor gave it. Its LLM spans wrap the ``generate``/``generate_stream`` of the
model classes smolagents exports; the scripted model here is a class of the adapter's, which it
wraps with the instrumentor's own wrappers (``_ModelWrapper`` / ``_ModelStreamWrapper``), as a
user's exported model class is.
"""

from __future__ import annotations

import json
import threading
from importlib import metadata
from typing import Any

import anyio
import anyio.from_thread
import anyio.lowlevel
import anyio.to_thread

from conformance.boundary.adapter import AdapterInfo, Doubles, Mechanism, Outcome, RunResult, Span
from conformance.adapters._common import Hooks, mapping, mapping_code, Run, Session, parse_args, run_messages, tool_spec
from conformance.boundary.scenario import Scenario, ToolDef

_JSON_TYPES = {"string", "boolean", "integer", "number", "array", "object", "null"}


def _version() -> str:
    try:
        return metadata.version("smolagents")
    except metadata.PackageNotFoundError:
        return "not installed"


class _Inputs(dict):  # type: ignore[type-arg]
    """``Tool.inputs`` for a schema that allows undeclared keys: those are type ``any``."""

    def __contains__(self, key: object) -> bool:
        return True

    def __missing__(self, key: str) -> dict[str, Any]:
        return {"type": "any", "description": "", "nullable": True}


@mapping_code
def _inputs(schema: dict[str, Any]) -> dict[str, Any]:
    props = schema.get("properties") or {}
    declared = {
        name: {
            "type": p.get("type") if p.get("type") in _JSON_TYPES else "any",
            "description": p.get("description") or name,
            **({"nullable": True} if name not in (schema.get("required") or []) else {}),
        }
        for name, p in props.items()
    }
    return declared if schema.get("additionalProperties") is False else _Inputs(declared)


def _text(content: Any) -> str:
    if isinstance(content, str):
        return content
    return "".join(str(c.get("text", "")) for c in content or [] if isinstance(c, dict))


@mapping_code
def to_canonical(messages: list[Any]) -> list[dict[str, Any]]:
    """smolagents ChatMessages → the boundary's messages (tool-call → assistant text,
    tool-response → user text, as its API models send them)."""
    out: list[dict[str, Any]] = []
    for msg in messages:
        role = getattr(getattr(msg, "role", None), "value", getattr(msg, "role", None))
        text = _text(getattr(msg, "content", None))
        calls = getattr(msg, "tool_calls", None) or []
        if role == "system":
            out.append({"role": "system", "text": text})
        elif role in ("user", "tool-response"):
            out.append({"role": "user", "text": text})
        else:
            m: dict[str, Any] = {"role": "assistant"}
            if text:
                m["text"] = text
            if calls:
                m["tool_calls"] = [{"id": c.id, "name": c.function.name, "args": parse_args(c.function.arguments)} for c in calls]
            out.append(m)
    return out


class _CallIds:
    """smolagents hands a tool only its arguments, never the call id: recover it from the last
    model response's calls (the first unclaimed one with this name and these arguments)."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._open: list[tuple[str, str, str]] = []

    def reset(self, calls: list[Any]) -> None:
        with self._lock:
            self._open = [(c.id, c.function.name, _key(parse_args(c.function.arguments))) for c in calls]

    def claim(self, name: str, args: Any) -> str:
        key = _key(args)
        with self._lock:
            for i, (call_id, n, k) in enumerate(self._open):
                if n == name and k == key:
                    del self._open[i]
                    return call_id
        return ""


def _key(args: Any) -> str:
    return json.dumps(args, sort_keys=True, default=str)


def _m(kind: str, via: str | None = None, note: str | None = None) -> Mechanism:
    return Mechanism(kind=kind, via=via, note=note)  # type: ignore[arg-type]


#: How each hook point, capability and observation maps onto smolagents 1.26 (anything not named
#: is absent). step_callbacks see a whole finished step (model call and tools together), so no
#: 003 hook point maps onto them.
MECHANISMS: dict[str, Mechanism] = {
    **{p: _m("absent", note="step_callbacks only observe a finished step; run(stream=True) yields nothing before the model answers") for p in (
        "session-start", "context-assemble", "pre-model-call", "plan-ready")},
    "post-model-response": _m("observe-only", "run(stream=True), stream_outputs=True: the first event after the model's deltas (agents.py:1292-1307)", "out of steps, the final turn's answer text (agents.py:625-637)"),
    "pre-tool-call": _m("observe-only", "run(stream=True): each ToolCall event, all before the pool starts (agents.py:1375-1380)"),
    "post-tool-call": _m("observe-only", "run(stream=True): the ToolOutputs, at the step's ActionOutput (agents.py:1356, 1423)", "a failing call aborts the step: none then"),
    # _finalize_step runs the step callbacks on each ActionStep once its calls all ran (agents.py:597-603)
    "post-apply": _m("observe-only", "step_callbacks[ActionStep] (agents.py:597-603, 620-623)", "the plan: the step's resource calls, none vetoed (no plan-ready)"),
    # _finalize_step runs the step callbacks on the run's FinalAnswerStep (agents.py:609-623):
    # the end of a run that ends (not one that raises, e.g. when interrupted).
    "session-end": _m("observe-only", "step_callbacks[FinalAnswerStep] (agents.py:609-623)", "not called when the run raises"),
    "policy_precheck": _m("absent"),
    "tool_kinds": _m("absent"),
    "concurrency_keys": _m("absent", note="a step's calls all run in one thread pool; max_tool_threads=1 (agents.py:1238, 1426) when the scenario has an interactive tool, so all run one at a time"),
    "terminal_tool": _m("absent", note="only its own final_answer tool ends a run"),
    "max_turns": _m("native", "agent.run(max_steps=)"),
    "final_turn": _m("native", "_handle_max_steps_reached → provide_final_answer (no tools)"),
    "doom_loop": _m("absent"),
    "usage": _m("absent", note="token usage only; no cost from a model's pricing"),
    "spans": _m("native", "turn: the ActionStep of each turn in agent.memory.steps, timed from before its model call to after its tools (agents.py:566-570, 620-623; the tool-less turn after max_steps too, 625-637); tool: the TOOL span SmolagentsInstrumentor (its telemetry extra) opens around Tool.__call__ (agents.py:1488); model_call: its LLM span around a model class's generate / generate_stream", "the instrumentor wraps the model classes smolagents exports (__init__.py:77-104); the adapter's scripted model gets the same wrappers (_wrappers.py:541, 576)"),
    "journal": _m("native", "agent.memory (as messages)"),
    "cancellation": _m("native", "agent.interrupt() (checked between steps)"),
    "subagents": _m("not-wired", "managed_agents (smolagents/agents.py)", "the adapter does not map child agents onto them"),
}


class SmolagentsAdapter:
    info = AdapterInfo(
        name="smolagents",
        version=_version(),
        homepage="https://huggingface.co/docs/smolagents",
        profiles=["kernel"],
        capabilities=[],
        mechanisms=MECHANISMS,
    )

    async def run(self, scenario: Scenario, doubles: Doubles) -> RunResult:
        from openinference.instrumentation import using_session
        from smolagents.utils import AgentError

        token = anyio.lowlevel.current_token()
        agents: dict[str, Any] = {}
        turns: dict[str, dict[str, Any]] = {}
        lock = threading.Lock()

        def call_async(func: Any, *args: Any) -> Any:
            return anyio.from_thread.run(func, *args, token=token)

        spans: list[Span] = []
        traced = _Traces.get()

        async def run_one(run: Run, session: Session, index: int, text: str) -> Outcome:
            turns[session.id] = run.turn(session, index)
            built = agents.get(session.id)
            first = built is None
            if built is None:
                built = agents[session.id] = self._build(scenario, doubles, call_async, lambda: turns[session.id])
            agent, follow = built
            interrupted = threading.Event()

            def cancel() -> None:
                interrupted.set()
                agent.interrupt()

            doubles.register_canceller(index, cancel)
            kwargs: dict[str, Any] = {"reset": first, "stream": True}
            if scenario.bounds.max_turns is not None:
                kwargs["max_steps"] = scenario.bounds.max_turns

            before = 0 if first else len(agent.memory.steps)

            run_key = f"akc:{id(spans)}:{session.id}:m{index}"

            def go() -> tuple[str, Any]:
                # the instrumentor stamps every span it opens in this context with the session id
                # (get_attributes_from_context), which files them under this run
                with lock, using_session(run_key):  # one agent object is not safe for two threads at once
                    events = agent.run(text, **kwargs)
                    try:
                        return follow(events)
                    finally:
                        # closed here, in this thread: a step left suspended inside its thread pool
                        # waits for its calls, which need the event loop (a generator collected
                        # later on the loop's thread would block it for good). The instrumentor's
                        # run wrapper iterates smolagents' own stream with a plain for loop, so
                        # closing it leaves that stream suspended: close that one too.
                        inner = _wrapped_stream(events)
                        events.close()
                        if inner is not None:
                            inner.close()

            try:
                state, output = await anyio.to_thread.run_sync(go)
            except AgentError as exc:
                if interrupted.is_set():
                    return Outcome(message=index, session_id=session.id, status="cancelled", subtype="cancelled", error=str(exc))
                raise
            finally:
                session.messages = to_canonical(agent.write_memory_to_messages())
                # a turn span per ActionStep of this run, read from memory: the stream does not
                # yield the tool-less step after max_steps (agents.py:608, 636)
                spans.extend(turn_spans(agent.memory.steps[before:], f"{session.id}:m{index}"))
                spans.extend(traced.take(run_key))
            subtype = {"success": "success", "max_steps_error": "error_max_turns"}.get(state, state)
            return Outcome(message=index, session_id=session.id, status=state, subtype=subtype, reply=str(output))

        result = await run_messages(scenario, doubles, run_one)
        result.spans = spans
        return result

    def _build(self, scenario: Scenario, doubles: Doubles, call_async: Any, turn: Any) -> tuple[Any, Any]:
        """The agent of one scenario session, and the function that follows one of its runs."""
        from rich.console import Console
        from smolagents import Tool, ToolCallingAgent
        from smolagents.agents import ActionOutput, ToolOutput
        from smolagents.memory import ActionStep, FinalAnswerStep, ToolCall
        from smolagents.models import (
            ChatMessage, ChatMessageStreamDelta, ChatMessageToolCall, ChatMessageToolCallFunction, ChatMessageToolCallStreamDelta,
            MessageRole, Model, agglomerate_stream_deltas,
        )
        from smolagents.monitoring import AgentLogger, LogLevel, TokenUsage
        from smolagents.utils import AgentMaxStepsError

        call_ids = _CallIds()

        def spec(tool: Any) -> dict[str, Any]:
            props = {k: {"type": v.get("type"), "description": v.get("description")} for k, v in dict(tool.inputs).items()}
            return tool_spec(tool.name, tool.description, {"type": "object", "properties": props})

        def ask(messages: list[Any], tools_to_call_from: Any) -> list[dict[str, Any]]:
            """One call of the harness's scripted model: its streamed chunks."""
            with mapping("the model request"):
                request = {"messages": to_canonical(messages), "tools": [spec(t) for t in tools_to_call_from or []], "params": {}}

            async def stream() -> list[dict[str, Any]]:
                return [chunk async for chunk in doubles.model_stream(request, turn())]

            return call_async(stream)

        class ScriptedModel(Model):
            def generate_stream(self, messages: list[Any], stop_sequences: Any = None, response_format: Any = None, tools_to_call_from: Any = None, **kwargs: Any) -> Any:
                """The model's stream as smolagents' API models give it: one delta per chunk."""
                chunks = ask(messages, tools_to_call_from)
                with mapping("the model response"):
                    deltas, calls = [], []
                    for c in chunks:
                        if c.get("type") == "text":
                            deltas.append(ChatMessageStreamDelta(content=c.get("text", "")))
                        elif c.get("type") == "tool_use":
                            function = ChatMessageToolCallFunction(name=c["name"], arguments=c.get("input_json") or "{}")
                            deltas.append(ChatMessageStreamDelta(tool_calls=[ChatMessageToolCallStreamDelta(index=len(calls), id=c["id"], type="function", function=function)]))
                            calls.append(ChatMessageToolCall(id=c["id"], type="function", function=function))
                    usage = next((c for c in reversed(chunks) if c.get("type") == "usage"), None)
                    if usage is not None:  # the totals, once (as generate reports them)
                        tokens = TokenUsage(input_tokens=int(usage.get("input_tokens", 0)), output_tokens=int(usage.get("output_tokens", 0)))
                        deltas.append(ChatMessageStreamDelta(token_usage=tokens))
                    call_ids.reset(calls)
                yield from deltas

            def generate(self, messages: list[Any], stop_sequences: Any = None, response_format: Any = None, tools_to_call_from: Any = None, **kwargs: Any) -> Any:
                chunks = ask(messages, tools_to_call_from)
                with mapping("the model response"):
                    calls = [
                        ChatMessageToolCall(id=c["id"], type="function", function=ChatMessageToolCallFunction(name=c["name"], arguments=c.get("input_json") or "{}"))
                        for c in chunks
                        if c.get("type") == "tool_use"
                    ]
                    usage = next((c for c in reversed(chunks) if c.get("type") == "usage"), {})
                    message = ChatMessage(
                        role=MessageRole.ASSISTANT,
                        content="".join(c.get("text", "") for c in chunks if c.get("type") == "text"),
                        tool_calls=calls or None,
                        token_usage=TokenUsage(input_tokens=int(usage.get("input_tokens", 0)), output_tokens=int(usage.get("output_tokens", 0))),
                    )
                    call_ids.reset(calls)
                return message

        _Traces.get().wrap_model(ScriptedModel)

        def make_tool(tool_def: ToolDef) -> Any:
            class ScenarioTool(Tool):
                name = tool_def.name
                description = tool_def.description or tool_def.name
                inputs = _inputs(tool_def.input_schema)
                output_type = "string"
                skip_forward_signature_validation = True

                def forward(self, *args: Any, **kwargs: Any) -> str:
                    args_json = kwargs if not args else {"input": args[0]}
                    call_id = call_ids.claim(tool_def.name, args_json)
                    out = call_async(doubles.invoke_tool, {"id": call_id, "name": tool_def.name, "args": args_json}, turn())
                    return str(out.get("content", ""))

            return ScenarioTool()

        def final_answer_step(step: Any, agent: Any) -> None:
            # session-end, observed: the callbacks of the run's FinalAnswerStep (agents.py:609-623)
            # out of steps, the last memory step carries AgentMaxStepsError (agents.py:628-636)
            last = agent.memory.steps[-1] if agent.memory.steps else None
            subtype = "error_max_turns" if type(getattr(last, "error", None)).__name__ == "AgentMaxStepsError" else "success"
            call_async(hooks.chain, "session-end", {"session_id": turn()["session_id"], "subtype": subtype}, turn())

        kinds = {t.name: t.kind for t in scenario.tools}

        def action_step(step: Any, agent: Any) -> None:
            # post-apply, observed: the callbacks of an ActionStep, once its calls all ran
            if not step.tool_calls or step.is_final_answer:
                return
            plan = {"items": [
                {"call_id": c.id, "name": c.name, "args": parse_args(c.arguments), "vetoed": False, "reason": None}
                for c in step.tool_calls if kinds.get(c.name) == "resource"
            ]}
            call_async(hooks.chain, "post-apply", plan, turn())

        def follow(events: Any) -> tuple[str, Any]:
            """Iterate one run(stream=True), dispatching the points its events give (see the
            module docstring); (the run's state as run() reports it, agents.py:520-523; its answer)."""
            deltas: list[Any] = []
            asked: list[dict[str, Any]] = []
            outputs: dict[str, Any] = {}
            answer = None
            for event in events:
                if isinstance(event, ChatMessageStreamDelta):
                    deltas.append(event)
                    continue
                if deltas:  # the first event after the model's stream ended
                    with mapping("the model response"):
                        message = to_canonical([agglomerate_stream_deltas(deltas)])[0]
                    deltas = []
                    call_async(hooks.chain, "post-model-response", message, turn())
                if isinstance(event, ToolCall) and event.name != "final_answer":
                    call = {"id": event.id, "name": event.name, "args": event.arguments if isinstance(event.arguments, dict) else parse_args(event.arguments)}
                    asked.append(call)
                    call_async(hooks.chain, "pre-tool-call", call, turn())
                elif isinstance(event, ToolOutput):
                    outputs[event.id] = event
                elif isinstance(event, ActionOutput):  # every call of the step has ended
                    for call in asked:
                        if call["id"] in outputs:
                            result = {"content": str(outputs[call["id"]].output), "is_error": False}
                            call_async(hooks.chain, "post-tool-call", {"call": call, "result": result}, turn())
                    asked, outputs = [], {}
                elif isinstance(event, ActionStep) and out_of_steps(agent):
                    # the final tool-less turn's answer (_handle_max_steps_reached, agents.py:625-637)
                    call_async(hooks.chain, "post-model-response", {"role": "assistant", "text": str(agent.memory.steps[-1].action_output or "")}, turn())
                elif isinstance(event, FinalAnswerStep):
                    answer = event.output
            return ("max_steps_error" if out_of_steps(agent) else "success"), answer

        def out_of_steps(agent: Any) -> bool:
            return bool(agent.memory.steps) and isinstance(getattr(agent.memory.steps[-1], "error", None), AgentMaxStepsError)

        hooks = Hooks(scenario, doubles)
        callbacks: dict[Any, list[Any]] = {}
        if hooks.has("session-end"):
            callbacks[FinalAnswerStep] = [final_answer_step]
        if hooks.has("post-apply"):
            callbacks[ActionStep] = [action_step]
        agent = ToolCallingAgent(
            tools=[make_tool(t) for t in scenario.tools],
            model=ScriptedModel(model_id=scenario.model.name),
            instructions=scenario.system_prompt,
            # the streamed step shows its deltas on the logger's console (agents.py:1300): a quiet one
            logger=AgentLogger(level=LogLevel.OFF, console=Console(quiet=True)),
            stream_outputs=True,
            step_callbacks=callbacks or None,
            # the way smolagents keeps calls one at a time (its thread pool's size, agents.py:1426):
            # with an interactive tool in the scenario, every call of a step runs alone
            max_tool_threads=1 if any(t.kind == "interactive" for t in scenario.tools) else None,
        )
        return agent, follow


def factory() -> SmolagentsAdapter:
    return SmolagentsAdapter()


def _wrapped_stream(events: Any) -> Any:
    """The stream of ``MultiStepAgent._run_stream`` that the instrumentor's ``_RunWrapper``
    generator iterates (its ``agent_output``), if ``events`` is that wrapper."""
    frame = getattr(events, "gi_frame", None)
    inner = frame.f_locals.get("agent_output") if frame is not None else None
    return inner if hasattr(inner, "close") and inner is not events else None


#: openinference span kinds (openinference.span.kind) → the boundary's span kinds
#: (a run's AGENT span and a step's CHAIN span are "other": the turn spans come from the
#: ActionSteps, which also time the tool-less turn after max_steps, which has no step span)
_SPAN_KINDS = {"AGENT": "other", "CHAIN": "other", "LLM": "model_call", "TOOL": "tool"}


class _Traces:
    """smolagents' own tracing (its ``telemetry`` extra): ``SmolagentsInstrumentor`` patches
    ``MultiStepAgent.run``, ``_step_stream``, ``Tool.__call__`` and the ``generate``/``generate_stream``
    of the model classes smolagents exports, once per process, and exports to this in-memory
    exporter; each run takes the spans stamped with its session id."""

    _made = threading.Lock()
    _instance: _Traces | None = None

    def __init__(self) -> None:
        self._lock = threading.Lock()
        from openinference.instrumentation.smolagents import SmolagentsInstrumentor
        from opentelemetry.sdk.trace import TracerProvider
        from opentelemetry.sdk.trace.export import SimpleSpanProcessor, SpanExporter, SpanExportResult

        self._by_run: dict[str, list[Any]] = {}
        traces = self

        class _Exporter(SpanExporter):
            def export(self, spans: Any) -> Any:
                with traces._lock:
                    for s in spans:
                        key = (s.attributes or {}).get("session.id")
                        if isinstance(key, str):
                            traces._by_run.setdefault(key, []).append(s)
                return SpanExportResult.SUCCESS

        provider = TracerProvider()
        provider.add_span_processor(SimpleSpanProcessor(_Exporter()))
        self._instrumentor = SmolagentsInstrumentor()
        self._instrumentor.instrument(tracer_provider=provider)

    def wrap_model(self, cls: type) -> None:
        """Give a model class the LLM spans the instrumentor gives every model class smolagents
        exports, with its own wrappers (``__init__.py:77-104``): the harness's model is a class
        of the adapter's, which no user's exported model class is."""
        from openinference.instrumentation.smolagents._wrappers import _ModelStreamWrapper, _ModelWrapper
        from wrapt import wrap_function_wrapper

        tracer = self._instrumentor._tracer
        wrap_function_wrapper(cls, "generate", _ModelWrapper(tracer=tracer))
        wrap_function_wrapper(cls, "generate_stream", _ModelStreamWrapper(tracer=tracer))

    @classmethod
    def get(cls) -> _Traces:
        with cls._made:
            if cls._instance is None:
                cls._instance = cls()
            return cls._instance

    def take(self, run_key: str) -> list[Span]:
        """The instrumentor's finished spans of one run, mapped by their openinference kind;
        each keeps the parent the instrumentor gave it."""
        with self._lock:
            finished = self._by_run.pop(run_key, [])
        out = []
        for s in finished:
            kind = _SPAN_KINDS.get(str((s.attributes or {}).get("openinference.span.kind")))
            if kind is None:
                continue
            parent = s.parent.span_id if s.parent is not None else None
            name = (s.attributes or {}).get("tool.name") or s.name
            out.append(Span(
                span_id=f"otel:{s.context.span_id:016x}", parent_id=f"otel:{parent:016x}" if parent else None,
                name=str(name), kind=kind, start=s.start_time / 1e9 if s.start_time else None,
                end=s.end_time / 1e9 if s.end_time else None,
            ))
        return out


def turn_spans(steps: list[Any], prefix: str) -> list[Span]:
    """smolagents' timed record of each turn (an ``ActionStep``) as a turn span."""
    from smolagents.memory import ActionStep

    return [
        Span(span_id=f"{prefix}:step{s.step_number}:{i}", name=f"ActionStep {s.step_number}", kind="turn",
             start=s.timing.start_time, end=s.timing.end_time)
        for i, s in enumerate(steps) if isinstance(s, ActionStep) and s.timing is not None
    ]
