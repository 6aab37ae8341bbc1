"""google-adk (``Runner.run_async`` over an ``LlmAgent``) as a ``kernel``-profile kernel. Extra:
``google-adk`` (pinned in ``scripts/requirements/google-adk.txt``; mapping read against google-adk
2.13.0).

One user message is one ``runner.run_async(user_id, session_id, new_message, run_config)``; the
messages of one scenario session share one ``InMemorySessionService`` session, whose events are
the journal reported. The model is a ``BaseLlm`` subclass whose ``generate_content_async`` sends
the request to the harness's scripted model (``Doubles.model_stream``) and yields one
``LlmResponse``. Every scenario tool is a ``BaseTool`` subclass (the scenario's JSON schema as the
``FunctionDeclaration``'s ``parameters_json_schema``) whose ``run_async`` calls
``Doubles.invoke_tool``; a scripted failure is raised, so ADK's tool-error path answers it.

What maps to what (the ``LlmAgent`` callbacks):

* ``session-start`` → ``before_agent_callback``; ``session-end`` → ``after_agent_callback`` (also run
  when the run is cancelled, ``agents/base_agent.py:453-467``, subtype ``cancelled``) and, when
  the run raises, a plugin's ``on_run_error_callback`` (``plugins/base_plugin.py:403-419``, run
  from ``runners.py:1622-1629``), on an ``App`` with that plugin.
* ``context-assemble`` and ``pre-model-call`` → ``before_model_callback``, which may mutate the
  ``LlmRequest`` ("Callback can mutate the request", ``agents/llm_agent.py:494-507``): a replaced
  history / request is written into ``llm_request.contents`` / ``config``. The budget is
  ``{"turns_used"}``: the model calls this invocation has made so far, which ADK counts against
  ``RunConfig.max_llm_calls`` (``agents/invocation_context.py:78-94``, a private counter), read
  through the callback context's public API: this invocation's model events in
  ``callback_context.session.events`` (``agents/readonly_context.py:61-64``).
* ``post-model-response`` → ``after_model_callback``: a returned ``LlmResponse`` replaces the
  model's (``flows/llm_flows/core/_finalizer.py:300-320``: LOOP-005 passes).
* ``pre-tool-call`` → ``after_model_callback`` (``agents/llm_agent.py:509``), after
  post-model-response: it gets the whole response before any call's task is created, so
  pre-tool-call is dispatched for every call of it in order.
* ``post-tool-call`` and ``post-apply`` → a plugin's ``on_event_callback`` on the merged
  function-response event (``plugins/base_plugin.py:155-162``, run by the runner on every event
  before it is stored or the flow goes on, ``runners.py:1516-1534, 1598-1607``): it comes once
  every call of the response has ended, or, when the response had interactive calls and no
  resource call, from the client once it has answered them. post-tool-call for each call in the
  order asked, then post-apply with the plan the veto chain left (the response's resource calls);
  a terminal tool's turn ends at its own post-tool-call.
* The policy precheck → ``before_tool_callback``: returning a dict answers the call without
  running the tool (``flows/llm_flows/tools/_caller.py:505-524``). An interactive call is
  prechecked by the client, before it answers the call.
* ``terminates_turn`` → ``tool_context.actions.skip_summarization = True``: the function-response
  event is a final response and the loop stops (``events/event.py:286-296``,
  ``flows/llm_flows/base_llm_flow.py:306``: DONE-002 passes).
* ``max_turns`` → ``RunConfig.max_llm_calls``: call N+1 raises ``LlmCallsLimitExceededError``
  (``agents/invocation_context.py:78-94``), reported as raised: BOUND-008 fails. ADK's default is
  500 calls (``agents/run_config.py:39``, ``ADK_MAX_LLM_CALLS``). The count is a counter of the
  ``InvocationContext`` (``invocation_context.py:75-94, 294-296``), and a resume after a pause runs
  the same invocation id in a new context (``runners.py:2078-2084``) whose count starts at 0
  (BOUND-002 fails on a turn loop that pauses); a resume gets the same ``RunConfig``, since a host
  computing the calls left would be the adapter's bound, not ADK's.
* Spans → ADK's OpenTelemetry spans exported in memory: ``invoke_agent`` is the session span,
  ``generate_content`` the model call, ``execute_tool`` the tool; ``invocation`` and ``call_llm``
  are ``other``.
* Usage → ``LlmResponse.usage_metadata`` tokens only: ADK computes no cost.
* Tool kinds → an interactive tool is a long-running (human-in-the-loop) tool,
  ``BaseTool.is_long_running`` (``tools/base_tool.py:65-67``) whose ``run_async`` returns nothing:
  its call gets no result in the batch (``flows/llm_flows/tools/_caller.py:628-638``), the
  response's other calls run as concurrent tasks gathered to the end
  (``flows/llm_flows/tools/_batch_executor.py:262-274``), then the invocation pauses
  (``agents/llm_agent.py:638-650``). The client answers the response's interactive calls one at a
  time in the order asked (policy precheck, then the tool) and resumes with their
  ``FunctionResponse``s, as ADK's CLI does (``cli/cli.py:258-270``); with resource calls also
  waiting, the answers go in a message of their own before the confirmations, since ADK leaves a
  user event holding a confirmation out of the model's history
  (``flows/llm_flows/context/_contents.py:389-395, 838-840``). post-tool-call, plan-ready and
  post-apply wait for those answers. ADK appends the late answers after the response's other
  results (``flows/llm_flows/tools/_rearranger.py:29-97``). A resource tool asks for
  confirmation (plan-ready below).
* Cancellation → the host cancels the task iterating ``run_async``, once (as asyncio does), and
  waits for ADK's cleanup, which cancels the agent's root task and awaits it; the harness's
  canceller returns once that cleanup is over (``_common.run_messages``). A cancel while the
  client answers an interactive call stops it before the next one. A call ADK has created as a
  task still starts after the cancel (``flows/llm_flows/tools/_batch_executor.py:262-274``,
  docs/upstream/google_adk_next_tool_after_abort.py); in the suite's cancel scenarios a batch's
  other calls are resource calls, which only ask for confirmation, and interactive ones, which
  the client answers: no tool runs after the cancel.

* plan-ready → ADK's tool confirmation: a resource tool asks ``ToolContext.request_confirmation``
  (``agents/context.py:702-731``), the invocation pauses (resumable app, ``apps/_configs.py:29-46``)
  while the response's other calls run, the veto chain decides, and the run resumes with an
  ``adk_request_confirmation`` response per call (``flows/llm_flows/tools/_confirmation.py:170-215``);
  a response without resource calls gets an empty plan from ``on_event_callback`` (or from the
  client, after its interactive calls).

Absent in google-adk: concurrency keys (the calls of one response run as concurrent tasks), a
final tool-less turn when ``max_llm_calls`` fires, a doom-loop detector, a cost or wall-clock
bound, TurnInfo and tags. Sub-agents are not wired (``AgentTool`` and ``sub_agents`` exist; the
adapter maps no child agents onto them). An interactive tool that ends the turn is not mapped:
the client's answer carries no ``skip_summarization``.
"""

from __future__ import annotations

import asyncio
import contextvars
import json
import uuid
from importlib import metadata
from typing import Any

import anyio

from conformance.adapters._common import Hooks, OtelSpans, Run, Session, mapping, mapping_code, run_messages, tool_spec
from conformance.boundary.adapter import AdapterInfo, Doubles, Mechanism, Outcome, RunResult, ToolFailed
from conformance.boundary.scenario import Scenario, ToolDef

_turn: contextvars.ContextVar[dict[str, Any]] = contextvars.ContextVar("akc_adk_turn")
_gate: contextvars.ContextVar[dict[str, Any]] = contextvars.ContextVar("akc_adk_gate")  # the plan-ready gate of the running message
APP = "akc"
#: How long a cancelled run may take to clean up (ADK waits for its root task) before the host gives up.
CANCEL_CLEANUP_S = 10.0
USER = "akc-user"


def _version() -> str:
    try:
        return metadata.version("google-adk")
    except metadata.PackageNotFoundError:
        return "not installed"


# --------------------------------------------------------------------------- messages


def _result_text(response: Any) -> str:
    if isinstance(response, dict) and set(response) == {"result"}:
        return str(response["result"])
    return response if isinstance(response, str) else json.dumps(response)


@mapping_code
def to_canonical(contents: list[Any], system: str | None = None) -> list[dict[str, Any]]:
    """google-genai Contents → the boundary's message JSON."""
    out: list[dict[str, Any]] = [{"role": "system", "text": system}] if system else []
    for content in contents:
        if content is None:
            continue
        parts = content.parts or []
        if content.role == "model":
            out.append(model_to_canonical(content))
            continue
        text = "".join(p.text for p in parts if p.text)
        if text:
            out.append({"role": "user", "text": text})
        for p in parts:
            if p.function_response is not None:
                r = p.function_response
                body = r.response or {}
                out.append({"role": "tool_result", "call_id": r.id, "content": _result_text(body.get("error", body) if isinstance(body, dict) else body),
                            "is_error": isinstance(body, dict) and "error" in body})
    return out


@mapping_code
def model_to_canonical(content: Any) -> dict[str, Any]:
    parts = (content.parts if content is not None else None) or []
    out: dict[str, Any] = {"role": "assistant"}
    text = "".join(p.text for p in parts if p.text and not p.thought)
    if text:
        out["text"] = text
    calls = [{"id": p.function_call.id, "name": p.function_call.name, "args": p.function_call.args or {}} for p in parts if p.function_call is not None]
    if calls:
        out["tool_calls"] = calls
    return out


@mapping_code
def model_from_canonical(msg: Any) -> Any:
    from google.genai import types

    msg = msg if isinstance(msg, dict) else {}
    parts = [types.Part(text=str(msg["text"]))] if msg.get("text") else []
    parts += [types.Part(function_call=types.FunctionCall(id=c["id"], name=c["name"], args=c.get("args") or {})) for c in msg.get("tool_calls") or []]
    return types.Content(role="model", parts=parts)


@mapping_code
def from_canonical(history: Any) -> tuple[list[Any], str | None]:
    """The boundary's messages → (Contents, system instruction); tool results join one user Content."""
    from google.genai import types

    out: list[Any] = []
    system = None
    names: dict[str, str] = {}
    for msg in history if isinstance(history, list) else []:
        role = msg.get("role") if isinstance(msg, dict) else None
        if role == "system":
            system = str(msg.get("text", ""))
        elif role == "assistant":
            names.update({c["id"]: c["name"] for c in msg.get("tool_calls") or []})
            out.append(model_from_canonical(msg))
        elif role in ("user", "tool_result"):
            if role == "user":
                part = types.Part(text=str(msg.get("text", "")))
            else:
                key = "error" if msg.get("is_error") else "result"
                part = types.Part(function_response=types.FunctionResponse(
                    id=str(msg.get("call_id")), name=names.get(str(msg.get("call_id")), ""), response={key: str(msg.get("content", ""))}))
            if out and out[-1].role == "user":
                out[-1].parts.append(part)
            else:
                out.append(types.Content(role="user", parts=[part]))
    return out, system


@mapping_code
def specs_of(config: Any) -> list[dict[str, Any]]:
    out = []
    for tool in (config.tools if config is not None else None) or []:
        for d in getattr(tool, "function_declarations", None) or []:
            out.append(tool_spec(d.name, d.description, d.parameters_json_schema or (d.parameters.model_dump(exclude_none=True) if d.parameters else None)))
    return out


@mapping_code
def specs_to_tools(specs: list[Any]) -> list[Any]:
    from google.genai import types

    return [types.Tool(function_declarations=[
        types.FunctionDeclaration(name=s["name"], description=s.get("description", ""), parameters_json_schema=s.get("input_schema") or {"type": "object"})
        for s in specs])]


@mapping_code
def system_of(config: Any) -> str | None:
    si = config.system_instruction if config is not None else None
    if si is None or isinstance(si, str):
        return si
    parts = getattr(si, "parts", None) or []
    return "".join(p.text or "" for p in parts) or None


@mapping_code
def response_from_chunks(chunks: list[dict[str, Any]]) -> Any:
    from google.adk.models.llm_response import LlmResponse
    from google.genai import types

    from conformance.adapters._common import parse_args

    text = "".join(c.get("text", "") for c in chunks if c.get("type") == "text")
    parts = [types.Part(text=text)] if text else []
    for c in chunks:
        if c.get("type") == "tool_use":
            args = parse_args(c.get("input_json") or "{}")
            parts.append(types.Part(function_call=types.FunctionCall(id=c["id"], name=c["name"], args=args if isinstance(args, dict) else {"_raw": args})))
    usage = next((c for c in reversed(chunks) if c.get("type") == "usage"), None)
    meta = None
    if usage is not None:
        i, o, cached = int(usage.get("input_tokens", 0)), int(usage.get("output_tokens", 0)), int(usage.get("cached_input_tokens", 0))
        meta = types.GenerateContentResponseUsageMetadata(prompt_token_count=i + cached, candidates_token_count=o, total_token_count=i + cached + o, cached_content_token_count=cached)
    return LlmResponse(content=types.Content(role="model", parts=parts), usage_metadata=meta, partial=False, turn_complete=True)


#: The boundary's model params ↔ GenerateContentConfig fields.
PARAMS = {"temperature": "temperature", "top_p": "top_p", "top_k": "top_k", "max_tokens": "max_output_tokens", "seed": "seed", "stop": "stop_sequences"}


@mapping_code
def params_of(config: Any) -> dict[str, Any]:
    return {ours: getattr(config, theirs) for ours, theirs in PARAMS.items() if config is not None and getattr(config, theirs, None) is not None}


@mapping_code
def set_params(config: Any, params: dict[str, Any]) -> None:
    for ours, theirs in PARAMS.items():
        setattr(config, theirs, params.get(ours))


def span_kind(name: str) -> str:
    if name.startswith("invoke_agent"):
        return "session"
    if name.startswith("generate_content"):
        return "model_call"
    if name.startswith("execute_tool"):
        return "tool"
    return "other"


# --------------------------------------------------------------------------- the adapter


def _m(kind: str, via: str | None = None, note: str | None = None) -> Mechanism:
    return Mechanism(kind=kind, via=via, note=note)  # type: ignore[arg-type]


#: How each hook point, capability and observation maps onto google-adk 2.13 (anything not named
#: is absent).
MECHANISMS: dict[str, Mechanism] = {
    "session-start": _m("native", "LlmAgent.before_agent_callback"),
    "context-assemble": _m("native", "LlmAgent.before_model_callback (llm_request.contents)", "budget.turns_used: this invocation's model events in callback_context.session.events, the LLM calls ADK counts against RunConfig.max_llm_calls; no cost"),
    "pre-model-call": _m("native", "LlmAgent.before_model_callback (mutating the LlmRequest)"),
    "post-model-response": _m("native", "LlmAgent.after_model_callback (a returned LlmResponse replaces the model's)"),
    "pre-tool-call": _m("native", "LlmAgent.after_model_callback (every call of the response, before any task starts)"),
    "post-tool-call": _m("native", "BasePlugin.on_event_callback (the merged function-response event)"),
    "session-end": _m("native", "LlmAgent.after_agent_callback / BasePlugin.on_run_error_callback (the run raised)"),
    "plan-ready": _m("native", "ToolContext.request_confirmation on resource tools → adk_request_confirmation → resumed with ToolConfirmation"),
    "post-apply": _m("native", "BasePlugin.on_event_callback (the merged function-response event)", "the plan the plan-ready veto chain left (an empty one without resource calls)"),
    "policy_precheck": _m("native", "LlmAgent.before_tool_callback returning a response dict (the tool does not run)", "an interactive call is prechecked by the client before it answers the call"),
    "tool_kinds": _m("native", "BaseTool.is_long_running (interactive: long-running HITL tools answered by the client after the pause, one at a time) / ToolContext.request_confirmation (resource)", "a data-source call is a plain tool, run with the response's other calls as concurrent tasks"),
    "concurrency_keys": _m("absent", note="the calls of a response run as concurrent tasks"),
    "terminal_tool": _m("native", "ToolContext.actions.skip_summarization"),
    "max_turns": _m("native", "RunConfig.max_llm_calls → LlmCallsLimitExceededError"),
    "final_turn": _m("absent", note="the call over the limit raises; no model call without tools"),
    "doom_loop": _m("absent"),
    "usage": _m("absent", note="LlmResponse.usage_metadata carries tokens only; no cost"),
    "spans": _m("native", "google.adk.telemetry (OpenTelemetry: invoke_agent, generate_content, execute_tool)"),
    "journal": _m("native", "InMemorySessionService session events"),
    "cancellation": _m("native", "cancelling the task iterating Runner.run_async (asyncio)"),
    "subagents": _m("not-wired", "AgentTool / LlmAgent.sub_agents", "the adapter maps no child agents onto them"),
}


class GoogleAdkAdapter:
    info = AdapterInfo(
        name="google-adk",
        version=_version(),
        homepage="https://google.github.io/adk-docs/",
        profiles=["kernel"],
        capabilities=[],
        mechanisms=MECHANISMS,
    )

    async def run(self, scenario: Scenario, doubles: Doubles) -> RunResult:
        from google.adk.agents.run_config import RunConfig
        from google.adk.runners import Runner
        from google.adk.sessions import InMemorySessionService
        from google.genai import types

        OtelSpans.install()
        service = InMemorySessionService()
        from google.adk.apps import App

        agent, plugins = self._build(scenario, doubles)
        from google.adk.apps import ResumabilityConfig

        # a confirmation request or a long-running call pauses the invocation (apps/_configs.py:29-46)
        runner = Runner(app=App(name=APP, root_agent=agent, plugins=plugins, resumability_config=ResumabilityConfig(is_resumable=True)), session_service=service)
        trace_ids: set[int] = set()
        created: set[str] = set()

        async def run_one(run: Run, session: Session, index: int, text: str) -> Outcome:
            _turn.set(run.turn(session, index))
            abort = asyncio.Event()  # ADK's own cancellation: Runner.run_async(abort_signal=) (runners.py:1139, 1159)
            gate: dict[str, Any] = {"held": [], "awaiting": False, "abort": abort}
            _gate.set(gate)
            if session.id not in created:
                created.add(session.id)
                await service.create_session(app_name=APP, user_id=USER, session_id=session.id)
            config = RunConfig(max_llm_calls=scenario.bounds.max_turns) if scenario.bounds.max_turns is not None else RunConfig()

            async def consume_one(message: Any) -> str:
                reply = ""
                async for event in runner.run_async(user_id=USER, session_id=session.id,
                                                    new_message=message, run_config=config, abort_signal=abort):
                    if event.is_final_response() and event.content is not None:
                        reply = "".join(p.text or "" for p in event.content.parts or [] if p.text and not p.thought) or reply
                return reply

            async def consume() -> str:
                reply = await consume_one(types.Content(role="user", parts=[types.Part(text=text)]))
                answered: set[str] = set()
                while gate.get("awaiting"):
                    # the invocation paused on the response's long-running calls (interactive tools)
                    # and tool confirmations (resource tools) once its other calls had ended; the
                    # client answers them and resumes, as ADK's CLI does (cli/cli.py:258-270)
                    answers = []
                    try:
                        for call in gate.pop("interactive", []):  # step 9b: one at a time, in the order asked
                            response = types.FunctionResponse(id=call["id"], name=call["name"], response=await self._answer(call, _turn.get()))
                            gate["held"].append(response)
                            answers.append(types.Part(function_response=response))
                        stored = await service.get_session(app_name=APP, user_id=USER, session_id=session.id)
                        requests = []
                        for e in stored.events if stored else []:
                            for fc in e.get_function_calls() if e.content is not None else []:
                                if fc.name == "adk_request_confirmation" and fc.id not in answered:
                                    requests.append((fc.id, (fc.args or {}).get("originalFunctionCall") or {}))
                        # plan-ready on ADK's tool confirmation: the veto chain decides the resource calls
                        items = [{"call_id": o.get("id"), "name": o.get("name"), "args": o.get("args") or {}, "vetoed": False, "reason": None} for _, o in requests]
                        plan = await self._hooks.plan_ready({"items": items}, _turn.get())
                        if not requests:  # no resource call: every call of the turn has ended
                            gate["plan"] = plan
                            await self._release([])
                    except asyncio.CancelledError:
                        # cancelled while ADK's invocation is paused: its after_agent_callback already
                        # ran at the pause (llm_agent.py:645-650, base_agent.py:448-453), held back by
                        # the adapter while the run resumes
                        if not gate.get("ended"):
                            gate["ended"] = True
                            with anyio.CancelScope(shield=True):
                                await self._hooks.chain("session-end", {"session_id": _turn.get()["session_id"], "subtype": "cancelled"}, _turn.get())
                        raise
                    parts = answers
                    if requests:
                        if answers:
                            # on their own first: ADK leaves a user event holding a confirmation out of the
                            # model's history (flows/llm_flows/context/_contents.py:389-395, 838-840); the
                            # run resumes and pauses again on the confirmations (core/_resume.py:335-349)
                            await consume_one(types.Content(role="user", parts=answers))
                        gate["plan"] = plan
                        decided = Hooks.decisions(plan)
                        parts = []
                        for rid, o in requests:
                            answered.add(rid)
                            reason = decided.get(o.get("id"), "removed from the plan")
                            parts.append(types.Part(function_response=types.FunctionResponse(
                                id=rid, name="adk_request_confirmation", response={"confirmed": reason is None, "payload": reason})))
                    gate["awaiting"] = False
                    reply = await consume_one(types.Content(role="user", parts=parts))
                return reply

            with OtelSpans.marker(trace_ids):
                # The host's cancel reaches the task iterating run_async once, as asyncio delivers
                # it: ADK then cancels its root task and waits for it (runners.py:870-897). The
                # harness's cancel scope would cancel that wait again at every await (anyio cancels
                # until the scope ends), leaving ADK's root task running after the run returned.
                iterating = asyncio.ensure_future(consume())
                try:
                    reply = await asyncio.shield(iterating)
                except asyncio.CancelledError:
                    abort.set()  # ADK's abort first, then the cancel: an aborted run's cancel closes it early (runners.py:1630-1659)
                    iterating.cancel()
                    with anyio.move_on_after(CANCEL_CLEANUP_S, shield=True):
                        await asyncio.wait([iterating])
                    raise
                finally:
                    with anyio.CancelScope(shield=True):
                        stored = await service.get_session(app_name=APP, user_id=USER, session_id=session.id)
                        session.messages = to_canonical([e.content for e in (stored.events if stored else [])], scenario.system_prompt or None)
            return Outcome(message=index, session_id=session.id, status="completed", subtype="success", reply=reply)

        result = await run_messages(scenario, doubles, run_one)
        result.spans = OtelSpans.spans(trace_ids, span_kind)
        return result

    def _build(self, scenario: Scenario, doubles: Doubles) -> tuple[Any, list[Any]]:
        from google.adk.agents import LlmAgent
        from google.adk.models.base_llm import BaseLlm
        from google.adk.plugins.base_plugin import BasePlugin
        from google.adk.models.llm_response import LlmResponse
        from google.adk.tools.base_tool import BaseTool
        from google.genai import types

        hooks = Hooks(scenario, doubles)
        self._hooks = hooks
        kinds = {t.name: t.kind for t in scenario.tools}

        class ScriptedLlm(BaseLlm):
            async def generate_content_async(self, llm_request: Any, stream: bool = False) -> Any:
                with mapping("the model request"):
                    request = {"messages": to_canonical(list(llm_request.contents), system_of(llm_request.config)),
                               "tools": specs_of(llm_request.config), "params": params_of(llm_request.config)}
                chunks = [chunk async for chunk in doubles.model_stream(request, _turn.get())]
                yield response_from_chunks(chunks)

        class ScenarioTool(BaseTool):
            """An interactive tool is a long-running (human-in-the-loop) tool: its call gets no
            result in the batch, the invocation pauses once the response's other calls have ended
            and the client answers it (``tools/base_tool.py:65-67``, ``_caller.py:628-638``)."""

            def __init__(self, tool: ToolDef) -> None:
                super().__init__(name=tool.name, description=tool.description or tool.name, is_long_running=tool.kind == "interactive")
                self.tool = tool

            def _get_declaration(self) -> Any:
                return types.FunctionDeclaration(name=self.tool.name, description=self.description, parameters_json_schema=self.tool.input_schema)

            async def run_async(self, *, args: dict[str, Any], tool_context: Any) -> Any:
                if self.is_long_running:  # answered by the client after the pause
                    return None
                return await run_tool(self.tool, args, tool_context, _turn.get())

        async def execute(call: dict[str, Any], turn: dict[str, Any]) -> dict[str, str]:
            try:
                out = await doubles.invoke_tool(call, turn)
            except ToolFailed as exc:  # a scripted failure: ADK's error response
                out = {"content": str(exc), "is_error": True}
            return {"error": str(out.get("content", ""))} if out.get("is_error") else {"result": str(out.get("content", ""))}

        async def answer(call: dict[str, Any], turn: dict[str, Any]) -> dict[str, str]:
            """The client's answer to an interactive (long-running) call: the policy precheck, then the tool."""
            verdict = await doubles.policy_precheck(call, turn)
            if not verdict.get("allow", True):
                return {"error": f"denied by policy: {verdict.get('reason')}"}
            return await execute(call, turn)

        self._answer = answer

        async def run_tool(tool: ToolDef, args: dict[str, Any], tool_context: Any, turn: dict[str, Any]) -> dict[str, str]:
            call = {"id": tool_context.function_call_id, "name": tool.name, "args": args}
            if tool.kind == "resource":  # held for plan-ready (ADK tool confirmation)
                conf = getattr(tool_context, "tool_confirmation", None)
                if conf is None:
                    tool_context.request_confirmation(hint="plan-ready")
                    return {"result": "awaiting plan-ready"}
                if not conf.confirmed:
                    return {"error": f"Vetoed: {conf.payload}"}
            out = await execute(call, turn)
            if tool.terminates_turn:  # ADK's own "this response is final"
                tool_context.actions.skip_summarization = True
            return out

        async def before_agent(callback_context: Any) -> None:
            if _gate.get().get("started"):  # a run resumed after confirmation, same message
                return
            _gate.get()["started"] = True
            await hooks.chain("session-start", {"session_id": _turn.get()["session_id"]}, _turn.get())

        async def after_agent(callback_context: Any) -> None:
            # ADK runs after_agent_callback also when the task driving the agent is cancelled
            # (agents/base_agent.py:453-467): it reports the cancellation that task is going through,
            # shielded so that a second cancel does not cut the dispatch short
            task = asyncio.current_task()
            cancelled = (task is not None and task.cancelling()) or _gate.get()["abort"].is_set()
            if _gate.get().get("awaiting") and not cancelled:  # paused for the client's answers, the session goes on
                return
            subtype = "cancelled" if cancelled else "success"
            _gate.get()["ended"] = True
            with anyio.CancelScope(shield=True):
                await hooks.chain("session-end", {"session_id": _turn.get()["session_id"], "subtype": subtype}, _turn.get())

        async def before_model(callback_context: Any, llm_request: Any) -> None:
            turn = _turn.get()
            history = to_canonical(list(llm_request.contents), system_of(llm_request.config))
            # the LLM calls of this invocation so far, as ADK's session records them (one model event each)
            used = sum(1 for e in callback_context.session.events
                       if e.invocation_id == callback_context.invocation_id and e.content is not None and e.content.role == "model" and not e.partial)
            assembled, replaced = await hooks.chain("context-assemble", {"history": history, "budget": {"turns_used": used}}, turn)

            def put_history(h: Any) -> None:
                with mapping("the replaced history"):
                    contents, system = from_canonical(h)
                    llm_request.contents = contents
                    llm_request.config.system_instruction = system

            if replaced and isinstance(assembled, dict):
                put_history(assembled.get("history"))
            payload = {"payload": assembled, "tool_specs": specs_of(llm_request.config), "params": params_of(llm_request.config)}
            out, replaced = await hooks.chain("pre-model-call", payload, turn)
            if replaced and isinstance(out, dict):
                inner = out.get("payload") if isinstance(out.get("payload"), dict) else {}
                if isinstance(inner.get("history"), list):
                    put_history(inner["history"])
                if isinstance(out.get("tool_specs"), list):
                    llm_request.config.tools = specs_to_tools(out["tool_specs"])
                if isinstance(out.get("params"), dict):
                    set_params(llm_request.config, out["params"])
            return None

        asked: dict[str, dict[str, Any]] = {}  # call id → the call, from the response that asked it

        async def after_model(callback_context: Any, llm_response: Any) -> Any:
            with mapping("the model response"):
                message = model_to_canonical(llm_response.content)
            new, replaced = await hooks.chain("post-model-response", message, _turn.get())
            out = None
            if replaced:
                out = LlmResponse(content=model_from_canonical(new), usage_metadata=llm_response.usage_metadata, partial=False, turn_complete=True)
                with mapping("the replaced response"):
                    message = model_to_canonical(out.content)
            # the whole response, before any of its calls' tasks is created: pre-tool-call for each in order
            for call in message.get("tool_calls") or []:
                asked[call["id"]] = call
                await hooks.chain("pre-tool-call", call, _turn.get())
            # its interactive calls wait for the client's answers after the pause
            interactive = [c for c in message.get("tool_calls") or [] if kinds.get(c["name"]) == "interactive"]
            _gate.get()["interactive"] = interactive
            if interactive:  # ADK pauses the invocation once the response's other calls have ended
                _gate.get()["awaiting"] = True
            return out

        async def before_tool(tool: Any, args: dict[str, Any], tool_context: Any) -> Any:
            call = {"id": tool_context.function_call_id, "name": tool.name, "args": args}
            if kinds.get(tool.name) == "data_source":  # an interactive call is prechecked when the client answers it
                verdict = await doubles.policy_precheck(call, _turn.get())
                if not verdict.get("allow", True):
                    return {"error": f"denied by policy: {verdict.get('reason')}"}
            return None

        terminal = {t.name for t in scenario.tools if t.terminates_turn}

        class AfterTools(BasePlugin):
            """post-tool-call and post-apply on the merged function-response event: the runner
            runs on_event_callback on it once every call of the response has ended, before it is
            stored or the flow makes its next model call (runners.py:1516-1534, 1598-1607)."""

            async def on_event_callback(self, *, invocation_context: Any, event: Any) -> None:
                responses = event.get_function_responses() if event.content is not None else []
                if not responses:
                    return None
                gate = _gate.get()
                if event.actions.requested_tool_confirmations or gate.get("interactive"):
                    # resource calls wait for plan-ready, interactive ones for the client's answers
                    gate["awaiting"] = True
                    gate["held"] += [r for r in responses if r.id not in event.actions.requested_tool_confirmations]
                    return None
                await release(responses)
                return None

        async def release(responses: list[Any]) -> None:
            """post-tool-call for each call of the turn in the order asked, once all have ended, then
            post-apply with the plan the veto chain left (a terminal tool's turn ends at its own
            post-tool-call)."""
            gate = _gate.get()
            if not gate.get("held") and not any(kinds.get(r.name) == "resource" for r in responses):
                gate["plan"] = await hooks.plan_ready({"items": []}, _turn.get())
            position = {cid: i for i, cid in enumerate(asked)}
            responses = sorted(gate.pop("held", []) + list(responses), key=lambda r: position.get(r.id, len(position)))
            gate["held"] = []
            calls = []
            for r in responses:
                call = asked.get(r.id) or {"id": r.id, "name": r.name, "args": {}}
                calls.append(call)
                body = r.response if isinstance(r.response, dict) else {"result": r.response}
                result = {"content": _result_text(body.get("error", body.get("result", body))), "is_error": "error" in body}
                await hooks.chain("post-tool-call", {"call": call, "result": result}, _turn.get())
                if r.name in terminal:  # the turn ends at the terminal tool's post-tool-call
                    return
            plan = gate.pop("plan", None) or {"items": [  # the plan the veto chain left
                {"call_id": c["id"], "name": c["name"], "args": c["args"], "vetoed": False, "reason": None}
                for c in calls if kinds.get(c["name"]) == "resource"
            ]}
            await hooks.chain("post-apply", plan, _turn.get())

        self._release = release

        class SessionEndOnAbort(BasePlugin):
            """session-end from the runner's after_run_callback, which runs also on an aborted run
            (runners.py:1630-1659), when a cancel skipped after_agent_callback (it lands while
            the node runner waits for an event to be stored, outside the agent's generator)."""

            async def after_run_callback(self, *, invocation_context: Any) -> None:
                gate = _gate.get()
                if gate.get("ended") or not invocation_context.is_aborted:
                    return None
                gate["ended"] = True
                with anyio.CancelScope(shield=True):
                    await hooks.chain("session-end", {"session_id": _turn.get()["session_id"], "subtype": "cancelled"}, _turn.get())
                return None

        class SessionEndOnError(BasePlugin):
            """session-end when the run raises: ADK's plugin callback for an exception escaping the
            runner (plugins/base_plugin.py:403-419, runners.py:1622-1629), since
            after_agent_callback is not reached then; it also covers an exception raised by a
            plugin's own callback (post-tool-call's, on the function-response event)."""

            async def on_run_error_callback(self, *, invocation_context: Any, error: Exception) -> None:
                await hooks.chain("session-end", {"session_id": _turn.get()["session_id"], "subtype": "error"}, _turn.get())

        agent = LlmAgent(
            name="akc", model=ScriptedLlm(model=scenario.model.name or "akc-scripted"), instruction=scenario.system_prompt or "",
            tools=[ScenarioTool(t) for t in scenario.tools],
            before_agent_callback=before_agent, after_agent_callback=after_agent,
            before_model_callback=before_model, after_model_callback=after_model,
            before_tool_callback=before_tool,
        )
        plugins: list[Any] = [AfterTools(name="akc_after_tools"), SessionEndOnAbort(name="akc_session_end_abort")]
        if hooks.has("session-end"):
            plugins.append(SessionEndOnError(name="akc_session_end"))
        return agent, plugins


def factory() -> GoogleAdkAdapter:
    try:  # the in-memory span exporter before ADK's first span; ADK's imports take seconds: not in a scenario's clock
        OtelSpans.install()
        import google.adk.agents  # noqa: F401
        import google.adk.runners  # noqa: F401
        import google.adk.sessions  # noqa: F401
        import google.adk.tools.base_tool  # noqa: F401
    except ImportError:  # the framework's env is not this one: the matrix lists it so
        pass
    return GoogleAdkAdapter()
