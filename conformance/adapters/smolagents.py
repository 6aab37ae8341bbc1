"""smolagents (``ToolCallingAgent``) as a ``kernel``-profile kernel. Extra: ``smolagents``
(pinned in ``scripts/requirements/smolagents.txt``; mapping read against smolagents 1.26.0).

smolagents is synchronous: one user message is one ``agent.run(text, reset=..., max_steps=...,
return_full_result=True)`` in a worker thread (``anyio.to_thread.run_sync``); messages of one
scenario session run on the same agent with ``reset=False`` (its memory carries over). The model
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

What does not exist in smolagents, so is left out: the other 003 hook points (``step_callbacks``
only observe a whole finished step: model call and tools together), a plan / apply gate or veto
chain, a policy precheck, tool kinds, ConcurrencySpec (several calls of one step run in a thread
pool, all in parallel), a terminal-tool annotation (only its own ``final_answer`` tool ends a run:
a plain text answer is not a final answer), a doom-loop detector, cost per usage event from a
model's pricing (usage is not reported), a cost or wall-clock bound, spans (none are reported),
and a stored journal (the journal reported is the agent's memory as messages).
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

from conformance.boundary.adapter import AdapterInfo, Doubles, Mechanism, Outcome, RunResult
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
    **{p: _m("absent", note="step_callbacks only observe a finished step") for p in (
        "session-start", "context-assemble", "pre-model-call", "post-model-response", "pre-tool-call",
        "plan-ready", "post-tool-call")},
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
    "spans": _m("absent", note="no spans reported"),
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
        from smolagents.utils import AgentError

        token = anyio.lowlevel.current_token()
        agents: dict[str, Any] = {}
        turns: dict[str, dict[str, Any]] = {}
        lock = threading.Lock()

        def call_async(func: Any, *args: Any) -> Any:
            return anyio.from_thread.run(func, *args, token=token)

        async def run_one(run: Run, session: Session, index: int, text: str) -> Outcome:
            turns[session.id] = run.turn(session, index)
            agent = agents.get(session.id)
            first = agent is None
            if agent is None:
                agent = agents[session.id] = self._build(scenario, doubles, call_async, lambda: turns[session.id])
            interrupted = threading.Event()

            def cancel() -> None:
                interrupted.set()
                agent.interrupt()

            doubles.register_canceller(index, cancel)
            kwargs: dict[str, Any] = {"reset": first, "return_full_result": True}
            if scenario.bounds.max_turns is not None:
                kwargs["max_steps"] = scenario.bounds.max_turns

            def go() -> Any:
                with lock:  # one agent object is not safe for two threads at once
                    return agent.run(text, **kwargs)

            try:
                result = await anyio.to_thread.run_sync(go)
            except AgentError as exc:
                if interrupted.is_set():
                    return Outcome(message=index, session_id=session.id, status="cancelled", subtype="cancelled", error=str(exc))
                raise
            finally:
                session.messages = to_canonical(agent.write_memory_to_messages())
            subtype = {"success": "success", "max_steps_error": "error_max_turns"}.get(result.state, result.state)
            return Outcome(message=index, session_id=session.id, status=result.state, subtype=subtype, reply=str(result.output))

        return await run_messages(scenario, doubles, run_one)

    def _build(self, scenario: Scenario, doubles: Doubles, call_async: Any, turn: Any) -> Any:
        from smolagents import Tool, ToolCallingAgent
        from smolagents.memory import ActionStep, FinalAnswerStep
        from smolagents.models import ChatMessage, ChatMessageToolCall, ChatMessageToolCallFunction, MessageRole, Model
        from smolagents.monitoring import LogLevel, TokenUsage

        call_ids = _CallIds()

        def spec(tool: Any) -> dict[str, Any]:
            props = {k: {"type": v.get("type"), "description": v.get("description")} for k, v in dict(tool.inputs).items()}
            return tool_spec(tool.name, tool.description, {"type": "object", "properties": props})

        class ScriptedModel(Model):
            def generate(self, messages: list[Any], stop_sequences: Any = None, response_format: Any = None, tools_to_call_from: Any = None, **kwargs: Any) -> Any:
                with mapping("the model request"):
                    request = {"messages": to_canonical(messages), "tools": [spec(t) for t in tools_to_call_from or []], "params": {}}

                async def ask() -> list[dict[str, Any]]:
                    return [chunk async for chunk in doubles.model_stream(request, turn())]

                chunks = call_async(ask)
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
            verbosity_level=LogLevel.OFF,
            step_callbacks=callbacks or None,
            # the way smolagents keeps calls one at a time (its thread pool's size, agents.py:1426):
            # with an interactive tool in the scenario, every call of a step runs alone
            max_tool_threads=1 if any(t.kind == "interactive" for t in scenario.tools) else None,
        )
        return agent


def factory() -> SmolagentsAdapter:
    return SmolagentsAdapter()
