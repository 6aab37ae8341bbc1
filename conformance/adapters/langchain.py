"""langchain ``create_agent`` (a langgraph ``StateGraph``) as a ``kernel``-profile kernel. Extra:
``langchain`` (pinned in ``scripts/requirements/langchain.txt``; mapping read against langchain
1.5.2, langchain-core and langgraph 1.2.24).

One user message is one ``await agent.ainvoke({"messages": [HumanMessage(text)]}, config)`` with
``config = {"configurable": {"thread_id": <session id>}, "callbacks": [tracer]}``; the messages of
one scenario session share the graph's ``InMemorySaver`` checkpointer thread (its checkpointed
``messages`` are the journal reported, also after a cancellation). The model is a
``BaseChatModel`` subclass whose ``_agenerate`` sends the request to the harness's scripted model
(``Doubles.model_stream``) and returns one ``AIMessage``. Every scenario tool is a
``StructuredTool`` (the scenario's JSON schema as ``args_schema``) whose coroutine calls
``Doubles.invoke_tool``; a scripted failure is a ``ToolException`` with ``handle_tool_error=True``
(langchain's own error ``ToolMessage``, ``status="error"``).

What maps to what (all through ``AgentMiddleware``, langchain's hook mechanism):

* ``session-start`` → ``before_agent``; ``session-end`` → ``after_agent``, a node the graph does
  not reach when it raises or is cancelled: then the end of the root graph run, which langgraph
  reports to the run's callbacks on every exit (``on_chain_error``, awaited shielded,
  ``langgraph/pregel/main.py:3612-3614``), and session-end is dispatched as the cancel or the error
  leaves ``ainvoke`` (or the host's plan decision between two graph runs).
* ``context-assemble`` and ``pre-model-call`` → ``awrap_model_call``: both chains run before the
  handler; a replaced history / request is passed on with ``ModelRequest.override`` and is what the
  model gets (the handler calls the model with the request's messages, system message and tools:
  ``factory.py:1554-1568``). The budget is the graph's own count and bound: the node's superstep
  ``langgraph_step`` and ``recursion_limit`` from ``langgraph.config.get_config()``
  (``langgraph/pregel/_algo.py:656``, ``langgraph/runtime.py:131-135``), and
  ``ModelCallLimitMiddleware``'s ``run_model_call_count`` as ``turns_used`` when a turn bound is set.
* ``post-model-response`` → the same ``awrap_model_call`` after the handler: a replaced message is
  returned as the ``ModelResponse``, so it is what is stored and routed on.
* ``pre-tool-call`` → ``aafter_model``, which sees the response before any of its calls is sent
  to the tools node (``middleware/types.py:481-500``; the place langchain's own
  ``HumanInTheLoopMiddleware`` reviews every call, ``middleware/human_in_the_loop.py:764, 867``):
  dispatched for every call of the response in order. Each call of a response is its own ``Send``
  task (``factory.py:2032``), all in one superstep. ``post-tool-call`` and ``post-apply`` → the
  point after that superstep: the loop's next ``before_model`` (``tools_to_model``,
  ``factory.py:2072-2110``) or ``after_agent``, for each ``ToolMessage`` answering the last
  response (observe-only there: the results are stored).
* ``plan-ready`` → langgraph's human-in-the-loop ``interrupt()``, raised in ``awrap_tool_call`` for
  each resource call: those tasks pause while the superstep's other calls run to their end; the
  run returns the interrupts (the plan), the veto chain decides, and
  ``ainvoke(Command(resume={interrupt id: decision}))`` re-runs only the paused calls (a vetoed one
  returns an error ``ToolMessage`` "Vetoed: <reason>" without the tool). A turn without resource
  calls gets plan-ready with an empty plan at the point after its tools.
* Tool kinds → a plain tool (data-source), an ``interrupt()`` question (interactive) and an
  ``interrupt()`` plan item (resource). An interactive call is langgraph's documented way to ask
  the user (``langgraph/types.py:913-925``): after its precheck it pauses at ``interrupt()`` in
  ``awrap_tool_call``; the superstep's data-source calls run to their end (a ``GraphInterrupt``
  stops no sibling task, ``pregel/_runner.py:625-650``), the run returns, and the host answers the
  questions one at a time in the response's call order, then decides the plan over the held
  resource calls, and resumes them all with one ``Command(resume={interrupt id: answer or
  decision})``; the answered call returns the answer as its ``ToolMessage``. langgraph re-runs a
  resumed task from the start of its node, so a call's precheck verdict is kept by call id (the
  node is made idempotent before its ``interrupt()``, as langgraph's docs ask).
* The policy precheck → the same ``awrap_tool_call``: a denied data-source or interactive call
  returns an error ``ToolMessage`` without calling the handler (the documented short-circuit).
* ``terminates_turn`` → ``StructuredTool(return_direct=True)`` (the loop ends after the tools node
  when every executed call was return_direct, ``factory.py:2086-2099``), and langchain's documented
  early exit for the rest: ``before_model`` with ``@hook_config(can_jump_to=["end"])`` returns
  ``{"jump_to": "end"}`` once a terminal tool's result is in (``middleware/types.py:881-911``).
* ``max_turns`` → ``ModelCallLimitMiddleware(run_limit=N)`` (default ``exit_behavior="end"``):
  before call N+1 it jumps to the end with its own ``AIMessage`` "Model call limits exceeded: ..."
  (``middleware/model_call_limit.py:131, 185-208``): the N-th turn's tools run (BOUND-002 passes), no
  exception (BOUND-008 passes), no final model call (BOUND-010 fails). That message is langchain's report of the bound;
  the outcome's subtype is ``error_max_turns`` when the run ended on it. ``recursion_limit``
  (set to 9 999 by ``create_agent``, ``factory.py:1900-1902``) is left at langchain's default.
* Spans → a ``BaseTracer`` on the run's callbacks (the LangSmith run tree): ``llm``/``chat_model``
  runs are model-call spans, ``tool`` runs tool spans, the root graph run the session; the
  graph's node runs are ``other``.
* Cancellation → the host cancels the task awaiting ``ainvoke``.
* Tool concurrency: langgraph's default, every ``Send`` of the superstep at once (the run
  config's ``max_concurrency`` is left unset); interactive calls are answered one at a time by the
  host between two graph runs.

What does not exist in langchain/langgraph, so is absent: a span for the plan decision (the veto
chain runs between two graph runs), concurrency keys (ToolNode runs every call of a response as a
concurrent ``Send``), a final tool-less turn when a bound fires, a doom-loop detector, a cost or
wall-clock bound (``Pregel.step_timeout`` bounds one superstep, not a run), cost from a model's
pricing (``AIMessage.usage_metadata`` has tokens only), TurnInfo and tags. Sub-agents are not
wired (an agent can be wrapped as a tool; the adapter does not map child agents onto it).
"""

from __future__ import annotations

import asyncio
import contextvars
import uuid
from importlib import metadata
from typing import Any

import anyio

from conformance.adapters._common import Hooks, Run, Session, mapping, mapping_code, parse_args, run_messages, tool_spec
from conformance.boundary.adapter import AdapterInfo, Doubles, Mechanism, Outcome, RunResult, Span, ToolFailed
from conformance.boundary.scenario import Scenario, ToolDef

_turn: contextvars.ContextVar[dict[str, Any]] = contextvars.ContextVar("akc_lc_turn")
#: The id of the call being run: set in awrap_tool_call, read by the tool (a JSON-schema tool
#: has no injected-argument slot for it).
_call_id: contextvars.ContextVar[str | None] = contextvars.ContextVar("akc_lc_call", default=None)
#: Per user message: what langchain has signalled (the root graph run ended, after_agent ran).
_state: contextvars.ContextVar[dict[str, Any]] = contextvars.ContextVar("akc_lc_state")

#: The text ModelCallLimitMiddleware ends a run with (middleware/model_call_limit.py:55, 206).
LIMIT_MESSAGE = "Model call limits exceeded"


def _version() -> str:
    try:
        return f"langchain {metadata.version('langchain')}, langgraph {metadata.version('langgraph')}"
    except metadata.PackageNotFoundError:
        return "not installed"


# --------------------------------------------------------------------------- messages


def _text(content: Any) -> str:
    if isinstance(content, str):
        return content
    parts = []
    for block in content or []:
        if isinstance(block, str):
            parts.append(block)
        elif isinstance(block, dict) and block.get("type") == "text":
            parts.append(str(block.get("text", "")))
    return "".join(parts)


@mapping_code
def to_canonical(messages: list[Any]) -> list[dict[str, Any]]:
    """langchain messages → the boundary's message JSON."""
    from langchain_core.messages import AIMessage, HumanMessage, SystemMessage, ToolMessage

    out: list[dict[str, Any]] = []
    for msg in messages:
        if isinstance(msg, SystemMessage):
            out.append({"role": "system", "text": _text(msg.content)})
        elif isinstance(msg, HumanMessage):
            out.append({"role": "user", "text": _text(msg.content)})
        elif isinstance(msg, AIMessage):
            out.append(ai_to_canonical(msg))
        elif isinstance(msg, ToolMessage):
            out.append({"role": "tool_result", "call_id": msg.tool_call_id, "content": _text(msg.content), "is_error": msg.status == "error"})
    return out


@mapping_code
def ai_to_canonical(msg: Any) -> dict[str, Any]:
    out: dict[str, Any] = {"role": "assistant"}
    text = _text(msg.content)
    if text:
        out["text"] = text
    calls = [{"id": c["id"], "name": c["name"], "args": c.get("args")} for c in msg.tool_calls]
    calls += [{"id": c.get("id"), "name": c.get("name"), "args": parse_args(c.get("args"))} for c in msg.invalid_tool_calls]
    if calls:
        out["tool_calls"] = calls
    return out


@mapping_code
def canonical_to_ai(msg: Any) -> Any:
    from langchain_core.messages import AIMessage

    msg = msg if isinstance(msg, dict) else {}
    calls = [{"id": c["id"], "name": c["name"], "args": c.get("args") or {}, "type": "tool_call"} for c in msg.get("tool_calls") or []]
    return AIMessage(content=str(msg.get("text") or ""), tool_calls=calls)


@mapping_code
def from_canonical(history: Any) -> list[Any]:
    """The boundary's messages → langchain messages."""
    from langchain_core.messages import HumanMessage, SystemMessage, ToolMessage

    out: list[Any] = []
    for msg in history if isinstance(history, list) else []:
        role = msg.get("role") if isinstance(msg, dict) else None
        if role == "system":
            out.append(SystemMessage(content=str(msg.get("text", ""))))
        elif role == "user":
            out.append(HumanMessage(content=str(msg.get("text", ""))))
        elif role == "assistant":
            out.append(canonical_to_ai(msg))
        elif role == "tool_result":
            out.append(ToolMessage(content=str(msg.get("content", "")), tool_call_id=str(msg.get("call_id")),
                                   status="error" if msg.get("is_error") else "success"))
    return out


@mapping_code
def ai_from_chunks(chunks: list[dict[str, Any]]) -> Any:
    """The scripted model's stream chunks → one AIMessage (text, tool calls, token usage)."""
    from langchain_core.messages import AIMessage

    text = "".join(c.get("text", "") for c in chunks if c.get("type") == "text")
    calls, invalid = [], []
    for c in chunks:
        if c.get("type") != "tool_use":
            continue
        args = parse_args(c.get("input_json") or "{}")
        if isinstance(args, dict):
            calls.append({"id": c["id"], "name": c["name"], "args": args, "type": "tool_call"})
        else:
            invalid.append({"id": c["id"], "name": c["name"], "args": c.get("input_json"), "error": "not a JSON object", "type": "invalid_tool_call"})
    usage = next((c for c in reversed(chunks) if c.get("type") == "usage"), None)
    meta = None
    if usage is not None:
        i, o, cached = int(usage.get("input_tokens", 0)), int(usage.get("output_tokens", 0)), int(usage.get("cached_input_tokens", 0))
        meta = {"input_tokens": i + cached, "output_tokens": o, "total_tokens": i + cached + o, "input_token_details": {"cache_read": cached}}
    return AIMessage(content=text, tool_calls=calls, invalid_tool_calls=invalid, usage_metadata=meta)


@mapping_code
def specs_of(tools: list[Any]) -> list[dict[str, Any]]:
    """Bound tools (BaseTools or OpenAI-format dicts) → the boundary's tool specs."""
    from langchain_core.utils.function_calling import convert_to_openai_tool

    out = []
    for tool in tools:
        fn = convert_to_openai_tool(tool).get("function", {})
        out.append(tool_spec(fn.get("name", ""), fn.get("description"), fn.get("parameters")))
    return out


# --------------------------------------------------------------------------- tracing


def _tracer_class() -> Any:
    from langchain_core.tracers.base import BaseTracer

    class Collector(BaseTracer):
        """Keeps every finished root run tree (one per ainvoke) and flattens it into spans."""

        run_inline = True

        def __init__(self) -> None:
            super().__init__()
            self.roots: list[Any] = []

        def _persist_run(self, run: Any) -> None:
            self.roots.append(run)

        def spans(self) -> list[Span]:
            out: list[Span] = []

            def walk(run: Any, root: bool) -> None:
                kind = "session" if root else {"llm": "model_call", "chat_model": "model_call", "tool": "tool"}.get(run.run_type, "other")
                out.append(Span(
                    span_id=str(run.id), parent_id=str(run.parent_run_id) if run.parent_run_id else None, name=str(run.name), kind=kind,
                    start=run.start_time.timestamp() if run.start_time else None, end=run.end_time.timestamp() if run.end_time else None,
                    attributes={"run_type": run.run_type},
                ))
                for child in run.child_runs:
                    walk(child, False)

            for root in self.roots:
                walk(root, True)
            return out

    return Collector


# --------------------------------------------------------------------------- the adapter


def _m(kind: str, via: str | None = None, note: str | None = None) -> Mechanism:
    return Mechanism(kind=kind, via=via, note=note)  # type: ignore[arg-type]


#: How each hook point, capability and observation maps onto langchain 1.5 / langgraph 1.2
#: (anything not named is absent).
MECHANISMS: dict[str, Mechanism] = {
    "session-start": _m("native", "AgentMiddleware.before_agent"),
    "context-assemble": _m("native", "AgentMiddleware.awrap_model_call (ModelRequest.override(messages=))",
                           "budget.turns_used is ModelCallLimitMiddleware's run_model_call_count, present only with a turn bound"),
    "pre-model-call": _m("native", "AgentMiddleware.awrap_model_call (ModelRequest.override)"),
    "post-model-response": _m("native", "AgentMiddleware.awrap_model_call (the returned ModelResponse)"),
    "pre-tool-call": _m("native", "AgentMiddleware.aafter_model (every tool call of the response, before any is sent)"),
    "post-tool-call": _m("observe-only", "AgentMiddleware.abefore_model / aafter_agent after the tools node's superstep"),
    "session-end": _m("native", "AgentMiddleware.after_agent; on a cancel or a raise, the root run's on_chain_error"),
    "plan-ready": _m("native", "langgraph.types.interrupt() in awrap_tool_call for resource calls; Command(resume=) per call"),
    "post-apply": _m("observe-only", "AgentMiddleware.abefore_model / aafter_agent after the post-tool-calls"),
    "policy_precheck": _m("native", "AgentMiddleware.awrap_tool_call returning an error ToolMessage without calling the handler"),
    "tool_kinds": _m("native", "plain tool / interrupt() question answered by the host / interrupt() plan item",
                      "interactive and resource calls pause at langgraph.types.interrupt() in awrap_tool_call; one Command(resume=) answers and decides them"),
    "concurrency_keys": _m("absent", note="no per-key or per-provider serialisation in ToolNode; the config's max_concurrency (langgraph/pregel/_executor.py:143-146) caps every task alike"),
    "terminal_tool": _m("native", "BaseTool.return_direct", "ends the loop only when every executed call of the response is return_direct (factory.py:2086-2099)"),
    "max_turns": _m("native", "ModelCallLimitMiddleware(run_limit=), exit_behavior='end'"),
    "final_turn": _m("absent", note="ModelCallLimitMiddleware jumps to the end with its own AIMessage; no model call without tools"),
    "doom_loop": _m("absent"),
    "usage": _m("absent", note="AIMessage.usage_metadata carries tokens only; no cost from a model's pricing"),
    "spans": _m("native", "langchain_core BaseTracer run tree (chain, chat_model and tool runs)"),
    "journal": _m("native", "langgraph InMemorySaver checkpoint of the thread's messages"),
    "cancellation": _m("native", "cancelling the task that awaits CompiledStateGraph.ainvoke (asyncio)"),
    "subagents": _m("not-wired", "an agent wrapped as a tool, or a subgraph", "the adapter does not map child agents onto it"),
}


class LangChainAdapter:
    info = AdapterInfo(
        name="langchain",
        version=_version(),
        homepage="https://docs.langchain.com/oss/python/langchain/agents",
        profiles=["kernel"],
        capabilities=[],
        mechanisms=MECHANISMS,
    )

    async def run(self, scenario: Scenario, doubles: Doubles) -> RunResult:
        from langchain_core.messages import AIMessage, HumanMessage

        from langchain_core.callbacks import AsyncCallbackHandler
        from langgraph.types import Command

        tracer = _tracer_class()()
        agent, hooks, plans = self._build(scenario, doubles)

        class RootRunEnds(AsyncCallbackHandler):
            """The end of the root graph run, which langgraph reports to the run's callbacks on
            every exit: ``on_chain_end``, or ``on_chain_error`` for an error or a cancellation,
            awaited shielded (langgraph/pregel/main.py:3612-3614). A run ending there never
            reached after_agent: its session-end is dispatched from here."""

            async def on_chain_end(self, outputs: Any, *, run_id: Any, parent_run_id: Any = None, **kw: Any) -> None:
                if parent_run_id is None and (state := _state.get(None)) is not None:
                    state["run_ended"] = True  # returned: done, or holding the plan's calls

            async def on_chain_error(self, error: BaseException, *, run_id: Any, parent_run_id: Any = None, **kw: Any) -> None:
                state = _state.get(None)
                if parent_run_id is None and state is not None and not state.get("session_end"):
                    state["session_end"] = True
                    subtype = "cancelled" if isinstance(error, asyncio.CancelledError) else "error"
                    await hooks.chain("session-end", {"session_id": _turn.get()["session_id"], "subtype": subtype}, _turn.get())

        ends = RootRunEnds()

        async def run_one(run: Run, session: Session, index: int, text: str) -> Outcome:
            turn = run.turn(session, index)
            _turn.set(turn)
            state: dict[str, Any] = {"run_ended": False}
            _state.set(state)
            config: dict[str, Any] = {"configurable": {"thread_id": session.id}, "callbacks": [tracer, ends]}
            try:
                result = await agent.ainvoke({"messages": [HumanMessage(content=text)]}, config)
                while pending := await _interrupts(agent, config):
                    # the interactive and resource calls paused at interrupt() while the superstep's
                    # other calls ran to their end (a GraphInterrupt stops no sibling task,
                    # pregel/_runner.py:625-650): the questions first, one at a time in call order
                    resume: dict[str, Any] = {}
                    for i in pending:
                        if "akc_question" in i.value:
                            resume[i.id] = await _answer(doubles, i.value["akc_question"], turn)
                    items = [i for i in pending if "akc_plan_item" in i.value]
                    if items:  # then plan-ready over the held resource calls
                        plan = await hooks.plan_ready({"items": [{**i.value["akc_plan_item"], "vetoed": False, "reason": None} for i in items]}, turn)
                        plans[session.id] = plan
                        decided = Hooks.decisions(plan)
                        await anyio.lowlevel.checkpoint()  # a cancel during the decision lands here, between two graph runs
                        resume |= {i.id: decided.get(i.value["akc_plan_item"]["call_id"], "removed from the plan") for i in items}
                    state["run_ended"] = False
                    result = await agent.ainvoke(Command(resume=resume), config)
            except BaseException as exc:
                # between two graph runs (the host deciding the plan): the last one had ended
                if state["run_ended"] and not state.get("session_end"):
                    state["session_end"] = True
                    subtype = "cancelled" if isinstance(exc, anyio.get_cancelled_exc_class()) else "error"
                    with anyio.CancelScope(shield=True):
                        await hooks.chain("session-end", {"session_id": turn["session_id"], "subtype": subtype}, turn)
                raise
            finally:
                # what the checkpointer holds, also after a cancellation or an error
                with anyio.CancelScope(shield=True):
                    state = await agent.aget_state({"configurable": {"thread_id": session.id}})
                    session.messages = to_canonical(list((state.values or {}).get("messages", [])))
            last = (result.get("messages") or [None])[-1]
            reply = _text(last.content) if last is not None else ""
            subtype = "success"
            if isinstance(last, AIMessage) and scenario.bounds.max_turns is not None and reply.startswith(LIMIT_MESSAGE):
                subtype = "error_max_turns"  # langchain's own report that the bound fired
            return Outcome(message=index, session_id=session.id, status="completed", subtype=subtype, reply=reply)

        result = await run_messages(scenario, doubles, run_one)
        result.spans = tracer.spans()
        return result

    def _build(self, scenario: Scenario, doubles: Doubles) -> tuple[Any, Hooks, dict[str, Any]]:
        from langchain.agents import create_agent
        from langchain.agents.middleware import AgentMiddleware, ModelCallLimitMiddleware
        from langchain.agents.middleware.types import ModelResponse
        from langchain_core.language_models.chat_models import BaseChatModel
        from langchain_core.messages import SystemMessage, ToolMessage
        from langchain_core.outputs import ChatGeneration, ChatResult
        from langchain_core.utils.function_calling import convert_to_openai_tool
        from langchain.agents.middleware import hook_config
        from langgraph.checkpoint.memory import InMemorySaver
        from langgraph.config import get_config
        from langgraph.types import interrupt

        hooks = Hooks(scenario, doubles)

        class ScriptedChatModel(BaseChatModel):
            """The harness's scripted model behind langchain's chat-model interface."""

            @property
            def _llm_type(self) -> str:
                return "akc-scripted"

            def bind_tools(self, tools: Any, *, tool_choice: Any = None, **kwargs: Any) -> Any:
                return self.bind(tools=[convert_to_openai_tool(t) for t in tools], **kwargs)

            def _generate(self, *args: Any, **kwargs: Any) -> Any:
                raise NotImplementedError("the agent is run with ainvoke")

            async def _agenerate(self, messages: list[Any], stop: Any = None, run_manager: Any = None, **kwargs: Any) -> Any:
                with mapping("the model request"):
                    tools = kwargs.pop("tools", None) or []
                    request = {"messages": to_canonical(messages), "tools": specs_of(tools),
                               "params": {k: v for k, v in kwargs.items() if isinstance(v, (str, int, float, bool))}}
                chunks = [chunk async for chunk in doubles.model_stream(request, _turn.get())]
                return ChatResult(generations=[ChatGeneration(message=ai_from_chunks(chunks))])

        def history_of(request: Any) -> list[dict[str, Any]]:
            system = [request.system_message] if request.system_message is not None else []
            return to_canonical(system + list(request.messages))

        @mapping_code
        def with_history(request: Any, history: Any) -> Any:
            messages = from_canonical(history)
            system = next((m for m in messages if isinstance(m, SystemMessage)), None)
            return request.override(messages=[m for m in messages if not isinstance(m, SystemMessage)], system_message=system)

        def tool_call_of(request: Any) -> dict[str, Any]:
            call = request.tool_call
            return {"id": call.get("id"), "name": call.get("name"), "args": call.get("args")}

        kinds = {t.name: t.kind for t in scenario.tools}
        terminal = {t.name for t in scenario.tools if t.terminates_turn}
        #: per session: the plan the veto chain left for the turn in progress, and the call ids
        #: whose post-tool-call was dispatched (a thread's messages carry over between runs)
        plans: dict[str, Any] = {}
        posted: dict[str, set[str]] = {}
        #: call id → the precheck verdict of an interactive call paused at interrupt(): the resumed
        #: task re-runs from the start of its node (langgraph/types.py:925), and is not prechecked twice
        prechecked: dict[str, Any] = {}

        class ScenarioHooks(AgentMiddleware):
            """The scenario's hook points on langchain's middleware hooks."""

            name = "akc_hooks"

            async def abefore_agent(self, state: Any, runtime: Any) -> None:
                await hooks.chain("session-start", {"session_id": _turn.get()["session_id"]}, _turn.get())
                return None

            async def _after_tools(self, state: Any) -> bool:
                """post-tool-call for each call of the last response, then post-apply with the plan
                the veto chain left, once the tools node's superstep has ended: the loop goes back
                to before_model from there (factory.py:2072-2110, 1728-1731), or to after_agent when
                the run ends after the tools. A turn without resource calls had no interrupt, so its
                plan-ready (an empty plan) is dispatched here first. True when a terminal tool ran."""
                turn = _turn.get()
                messages = list(state.get("messages") or [])
                last = next((i for i in range(len(messages) - 1, -1, -1) if getattr(messages[i], "tool_calls", None)), None)
                if last is None:
                    return False
                results = {m.tool_call_id: m for m in messages[last + 1:] if isinstance(m, ToolMessage)}
                done = posted.setdefault(turn["session_id"], set())
                calls = [c for c in messages[last].tool_calls if c.get("id") in results and c.get("id") not in done]
                if not calls:
                    return False
                if not any(kinds.get(c["name"]) == "resource" for c in calls):
                    plans[turn["session_id"]] = await hooks.plan_ready({"items": []}, turn)
                for c in calls:
                    done.add(c["id"])
                    m = results[c["id"]]
                    result = {"content": _text(m.content), "is_error": m.status == "error"}
                    await hooks.chain("post-tool-call", {"call": {"id": c["id"], "name": c["name"], "args": c.get("args")}, "result": result}, turn)
                await hooks.chain("post-apply", plans.pop(turn["session_id"], None) or {"items": []}, turn)
                return any(c["name"] in terminal for c in calls)

            @hook_config(can_jump_to=["end"])
            async def abefore_model(self, state: Any, runtime: Any) -> Any:
                if await self._after_tools(state):
                    return {"jump_to": "end"}  # langchain's documented early exit (middleware/types.py:881-911)
                return None

            async def aafter_agent(self, state: Any, runtime: Any) -> None:
                await self._after_tools(state)
                _state.get()["session_end"] = True
                await hooks.chain("session-end", {"session_id": _turn.get()["session_id"], "subtype": "success"}, _turn.get())
                return None

            async def awrap_model_call(self, request: Any, handler: Any) -> Any:
                turn = _turn.get()
                config = get_config()  # the graph's own superstep count and bound (langgraph/runtime.py:131-135)
                budget = {"steps_used": (config.get("metadata") or {}).get("langgraph_step"), "recursion_limit": config.get("recursion_limit")}
                if "run_model_call_count" in request.state:
                    budget["turns_used"] = request.state["run_model_call_count"]
                assembled, replaced = await hooks.chain("context-assemble", {"history": history_of(request), "budget": budget}, turn)
                if replaced and isinstance(assembled, dict):
                    request = with_history(request, assembled.get("history"))
                payload = {"payload": assembled, "tool_specs": specs_of(request.tools), "params": dict(request.model_settings)}
                out, replaced = await hooks.chain("pre-model-call", payload, turn)
                if replaced and isinstance(out, dict):
                    with mapping("the replaced request"):
                        inner = out.get("payload") if isinstance(out.get("payload"), dict) else {}
                        if isinstance(inner.get("history"), list):
                            request = with_history(request, inner["history"])
                        if isinstance(out.get("tool_specs"), list):
                            request = request.override(tools=[
                                {"type": "function", "function": {"name": s["name"], "description": s.get("description", ""), "parameters": s.get("input_schema") or {"type": "object"}}}
                                for s in out["tool_specs"]
                            ])
                        if isinstance(out.get("params"), dict):
                            request = request.override(model_settings=dict(out["params"]))
                response = await handler(request)
                messages = list(response.result)
                with mapping("the model response"):
                    index = next((i for i, m in enumerate(messages) if m.type == "ai"), None)
                    message = ai_to_canonical(messages[index]) if index is not None else {"role": "assistant"}
                out, replaced = await hooks.chain("post-model-response", message, turn)
                if replaced and index is not None:
                    with mapping("the replaced response"):
                        original = messages[index]
                        new = canonical_to_ai(out)
                        new.id, new.usage_metadata = original.id, original.usage_metadata
                        messages[index] = new
                        return ModelResponse(result=messages, structured_response=response.structured_response)
                return response

            async def aafter_model(self, state: Any, runtime: Any) -> None:
                last = state["messages"][-1] if state.get("messages") else None
                for c in getattr(last, "tool_calls", None) or []:
                    await hooks.chain("pre-tool-call", {"id": c.get("id"), "name": c.get("name"), "args": c.get("args")}, _turn.get())
                return None

            async def awrap_tool_call(self, request: Any, handler: Any) -> Any:
                turn = _turn.get()
                call = tool_call_of(request)
                if kinds.get(call["name"]) == "resource":
                    # held for the plan-ready chain; resumed with None (apply) or the veto's reason
                    vetoed = interrupt({"akc_plan_item": {"call_id": call["id"], "name": call["name"], "args": call["args"]}})
                    if vetoed is not None:
                        return ToolMessage(content=f"Vetoed: {vetoed}", tool_call_id=call["id"], name=call["name"], status="error")
                if kinds.get(call["name"]) in ("data_source", "interactive"):
                    verdict = prechecked.pop(call["id"], None)  # given before this task's interrupt()
                    if verdict is None:
                        verdict = await doubles.policy_precheck(call, turn)
                    if not verdict.get("allow", True):
                        return ToolMessage(content=f"denied by policy: {verdict.get('reason')}", tool_call_id=call["id"], name=call["name"], status="error")
                if kinds.get(call["name"]) == "interactive":
                    # a question for the user: paused here, answered by the host once the run returns
                    prechecked[call["id"]] = verdict  # the resumed task re-runs from the start of its node
                    answer = interrupt({"akc_question": call})
                    del prechecked[call["id"]]
                    return ToolMessage(content=answer["content"], tool_call_id=call["id"], name=call["name"],
                                       status="error" if answer["is_error"] else "success")
                _call_id.set(call["id"])
                return await handler(request)

        tools = [self._tool(t, doubles) for t in scenario.tools]
        middleware: list[Any] = []
        if scenario.bounds.max_turns is not None:
            middleware.append(ModelCallLimitMiddleware(run_limit=scenario.bounds.max_turns))
        middleware.append(ScenarioHooks())
        agent = create_agent(
            ScriptedChatModel(), tools=tools, system_prompt=scenario.system_prompt or None,
            middleware=middleware, checkpointer=InMemorySaver(), name="akc",
        )
        return agent, hooks, plans

    @staticmethod
    def _tool(tool: ToolDef, doubles: Doubles) -> Any:
        from langchain_core.tools import StructuredTool, ToolException

        async def invoke(**args: Any) -> str:
            try:
                out = await doubles.invoke_tool({"id": _call_id.get(), "name": tool.name, "args": args}, _turn.get())
            except ToolFailed as exc:  # a scripted failure: langchain's own error ToolMessage
                raise ToolException(str(exc)) from None
            if out.get("is_error"):
                raise ToolException(str(out.get("content", "")))
            return str(out.get("content", ""))

        return StructuredTool(
            name=tool.name, description=tool.description or tool.name, args_schema=tool.input_schema,
            coroutine=invoke, handle_tool_error=True, return_direct=tool.terminates_turn,
        )


async def _interrupts(agent: Any, config: dict[str, Any]) -> list[Any]:
    """The interrupts a graph run left pending (one per held question or resource call), in the
    order of the calls in the response that made them."""
    snapshot = await agent.aget_state(config)
    pending = [i for i in snapshot.interrupts or () if isinstance(i.value, dict) and ("akc_question" in i.value or "akc_plan_item" in i.value)]
    messages = list((snapshot.values or {}).get("messages") or [])
    calls = next((m.tool_calls for m in reversed(messages) if getattr(m, "tool_calls", None)), [])
    order = {c.get("id"): n for n, c in enumerate(calls)}

    def call_id(i: Any) -> Any:
        return i.value["akc_question"]["id"] if "akc_question" in i.value else i.value["akc_plan_item"]["call_id"]

    return sorted(pending, key=lambda i: order.get(call_id(i), len(order)))


async def _answer(doubles: Doubles, call: dict[str, Any], turn: dict[str, Any]) -> dict[str, Any]:
    """The host's answer to an interactive call (the scenario's tool, run by the host)."""
    try:
        out = await doubles.invoke_tool(call, turn)
    except ToolFailed as exc:
        return {"content": str(exc), "is_error": True}
    return {"content": str(out.get("content", "")), "is_error": bool(out.get("is_error"))}


def factory() -> LangChainAdapter:
    return LangChainAdapter()
