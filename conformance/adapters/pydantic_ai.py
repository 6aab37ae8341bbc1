"""pydantic-ai (``Agent.run``) as a ``kernel``-profile kernel. Extra: ``pydantic-ai``
(pinned in ``scripts/requirements/pydantic-ai.txt``; mapping read against pydantic-ai-slim 2.68.0).

One user message is one ``await agent.run(text, message_history=...)``; messages of one scenario
session carry the previous run's ``all_messages()`` over. The model is a ``FunctionModel`` whose
function sends the request to the harness's scripted model (``Doubles.model_stream``) and turns
the chunks into a ``ModelResponse``. Every scenario tool is a ``Tool.from_schema`` whose function
calls ``Doubles.invoke_tool``.

What maps to what (pydantic-ai's own mechanisms; the capability hooks of
``pydantic_ai/capabilities/abstract.py``, registered through ``capabilities.Hooks``):

* ``session-start`` → ``before_run`` (observe-only); ``session-end`` → ``after_run`` and, on an
  error or a cancellation, ``on_run_error`` (``agent/__init__.py:296-326``; observe-only).
* ``context-assemble`` → a history processor: a ``before_model_request`` hook registered first
  that does what ``ProcessHistory`` does (``capabilities/process_history.py``), payload
  ``{"history", "budget": {"turns_used": RunContext.usage.requests}}`` (the framework tracks no
  cost or time budget); a replaced history is converted back and used.
* ``pre-model-call`` → ``before_model_request``: messages (as ``payload.history``; the budget of
  context-assemble is not part of pydantic-ai's request context), tool definitions and model
  settings; a replacement is converted back into the request context.
* ``post-model-response`` → ``after_model_request``; a replaced message becomes the response.
* ``pre-tool-call`` → ``before_node_run`` on a ``CallToolsNode`` (``capabilities/abstract.py:957-964``):
  once per tool call of the response, in order, before any tool runs, unknown tools included
  (``before_tool_validate`` never runs for those: ``tool_manager.py:807-825, 977-979``); a
  replaced call's arguments are handed back by that call's ``before_tool_validate``.
  ``post-tool-call`` (observe-only) → ``after_node_run`` on the ``CallToolsNode``
  (``capabilities/abstract.py:966-979``): once every call of the response has ended, once per call
  in order with its ``ToolReturnPart`` or ``RetryPromptPart`` from the next request, refused and
  failed calls included; for a terminal output tool, ``after_output_process``
  (``capabilities/abstract.py:1543-1555``).
* ``plan-ready`` → pydantic-ai's approval gate: resource tools are ``requires_approval=True``
  (deferred as ``'unapproved'``, ``tools.py:578``), and after the response's other calls ran
  (``_tool_execution.py:575-591, 1119-1128``) the ``handle_deferred_tool_calls`` hook
  (``capabilities/abstract.py:1602-1624``, ``Hooks.deferred_tool_calls``) gets them as one batch:
  the plan goes through the veto chain and each call is approved or ``ToolDenied("Vetoed: ...")``
  (``_deferred.py:144-160``). A response with tool calls but no deferred call has an empty plan,
  dispatched from ``after_node_run``.
* ``post-apply`` → ``after_node_run`` on a ``CallToolsNode`` whose response has tool calls: it
  runs once that node has run every call of the response (``capabilities/abstract.py:966-979``,
  ``run.py:579``), with the plan the gate left. Not for a response ending the run through a
  terminal (output) tool, whose turn ends at its post-tool-call.
* The policy precheck → a ``before_tool_execute`` hook on data-source and interactive calls that
  refuses with ``ToolFailed`` (``exceptions.py:123-134``), as openai-agents' tool input guardrail.
* Tool kinds → pydantic-ai's three: a function tool (data-source), a question deferral
  (interactive: the tool raises ``CallDeferred(kind='question')``, ``exceptions.py:173-188``, and
  ``handle_deferred_tool_calls`` answers the questions one at a time, in order, before the plan's
  approvals; after the host's cancel it answers none and approves nothing, checking the run's
  token as any host's handler would) and ``requires_approval`` (resource).
* A scripted tool failure → ``ToolFailed`` (a failed tool result the model sees).
* ``ConcurrencySpec`` → pydantic-ai's per-tool ``sequential`` flag (``safe: false`` or undeclared
  on a resource tool → sequential, a barrier that runs alone); there are no concurrency keys.
* A plain answer → ``output_type=[str, None, ...]``: text ends the run, and so does an empty
  response (with ``None`` allowed it is a valid result, not a retry: ``_agent_graph.py:3906-3937``).
* ``terminates_turn`` → an output tool (``ToolOutput`` of an output function taking the tool's
  schema as a ``StructuredDict``): calling it runs the tool and ends the run with its output. As an
  output tool it gets pydantic-ai's output hooks, not the tool-execute hooks, so no
  ``pre-tool-call`` / ``post-tool-call`` is dispatched for it.
* ``max_turns`` → ``UsageLimits(request_limit=max_turns)``, which raises ``UsageLimitExceeded``
  (reported in ``RunResult.raised``); pydantic-ai has no limit-reached final turn.
  ``max_cost_usd`` → ``UsageLimits.cost_limit`` (``usage.py:557, 652-668``); ``max_wall_clock_s`` →
  ``agent.run(timeout=)`` → ``RunTimedOut`` (``agent/abstract.py:604-607``), reported as raised like
  every limit exception (never translated into a subtype: BOUND-008 judges it once). Both declared.
* Usage → pydantic-ai's own: every response is priced by genai-prices (``_genai_prices.py:164-185``,
  at ``_agent_graph.py:3736``) from the price table the user sets with
  ``genai_prices.data_snapshot.set_custom_snapshot`` (``data_snapshot.py:12-36``; ``prices.py:21-23``):
  for each run, a snapshot with one provider pricing the scenario's model (matched on its name) at
  the scenario's pricing. The model function returns the stream's usage chunks summed into the
  response's one ``RequestUsage`` (``messages.py:4928``; pydantic-ai's streams sum theirs the same
  way, ``models/__init__.py:3193-3208``), with ``input_tokens`` counting cached reads as pydantic-ai
  does (``usage.py:134, 259``), kept as reported where FunctionModel would estimate a usage of
  zeros (``models/function.py:186-190``; a provider's model class keeps what it reports). The journal's usage is each stored ``ModelResponse.usage`` (the run's
  messages through ``capture_run_messages``, a run that raised included), ``input_tokens`` less
  ``cache_read_tokens`` again; ``UsageLimits.cost_limit`` bounds pydantic-ai's sum of those costs.
  One usage figure per model call is what pydantic-ai's model API carries:
  ``model_api_cannot_carry = ["usage-events"]``.
* Spans → pydantic-ai's OpenTelemetry instrumentation (the ``Instrumentation`` capability over a
  tracer provider of the run's own; needs ``opentelemetry-sdk``): ``invoke_agent`` is the
  session span, ``chat`` a model_call span, ``execute_tool`` a tool span.
* Cancellation → pydantic-ai's ``CancellationToken`` (``_cancel.py:50-71``); ``RunCancelled``
  carries what the run completed (``exceptions.py:349-366``), reported as the journal.

What does not exist in pydantic-ai, so is left out: concurrency keys, a doom-loop detector, a limit-reached
final turn, a stored journal (the journal reported is the message history
``all_messages()`` returns), and a span per turn or for a veto chain. ``MECHANISMS`` below is the
table the report carries.
"""

from __future__ import annotations

import contextvars
import copy
import dataclasses
from importlib import metadata
from typing import Any

from conformance.boundary.adapter import AdapterInfo, Doubles, Mechanism, Outcome, RunResult, Span, ToolFailed, UsageEvent
from conformance.adapters._common import mapping, mapping_code, Hooks, Run, Session, parse_args, run_messages, tool_spec
from conformance.boundary.scenario import Scenario, ToolDef

_turn: contextvars.ContextVar[dict[str, Any]] = contextvars.ContextVar("akc_pai_turn")
#: The run's CancellationToken: the host's side of the deferred calls stops at it (``_cancel.py:65-69``).
_token: contextvars.ContextVar[Any] = contextvars.ContextVar("akc_pai_token")


def _version() -> str:
    try:
        return metadata.version("pydantic-ai-slim")
    except metadata.PackageNotFoundError:
        return "not installed"


# --------------------------------------------------------------------------- messages


@mapping_code
def to_canonical(messages: list[Any]) -> list[dict[str, Any]]:
    """pydantic-ai ModelMessages → the boundary's message JSON."""
    from pydantic_ai import messages as m

    out: list[dict[str, Any]] = []
    for msg in messages:
        if isinstance(msg, m.ModelResponse):
            out.append(response_to_canonical(msg))
            continue
        for part in getattr(msg, "parts", []):
            if isinstance(part, m.SystemPromptPart):
                out.append({"role": "system", "text": part.content})
            elif isinstance(part, m.UserPromptPart):
                content = part.content if isinstance(part.content, str) else " ".join(str(c) for c in part.content)
                out.append({"role": "user", "text": content})
            elif isinstance(part, m.ToolReturnPart):
                failed = getattr(part, "outcome", "success") != "success"  # ToolFailed / denied (messages.py:2403)
                out.append({"role": "tool_result", "call_id": part.tool_call_id, "content": part.model_response_str(), "is_error": failed})
            elif isinstance(part, m.RetryPromptPart):
                if part.tool_name:
                    out.append({"role": "tool_result", "call_id": part.tool_call_id, "content": part.model_response(), "is_error": True})
                else:
                    out.append({"role": "user", "text": part.model_response()})
    return out


@mapping_code
def response_to_canonical(response: Any) -> dict[str, Any]:
    from pydantic_ai import messages as m

    text = "".join(p.content for p in response.parts if isinstance(p, m.TextPart))
    calls = [
        {"id": p.tool_call_id, "name": p.tool_name, "args": parse_args(p.args)}
        for p in response.parts
        if isinstance(p, m.ToolCallPart)
    ]
    msg: dict[str, Any] = {"role": "assistant"}
    if text:
        msg["text"] = text
    if calls:
        msg["tool_calls"] = calls
    return msg


@mapping_code
def canonical_to_response(msg: Any) -> Any:
    from pydantic_ai import messages as m

    parts: list[Any] = []
    if isinstance(msg, dict):
        if msg.get("text"):
            parts.append(m.TextPart(content=str(msg["text"])))
        for call in msg.get("tool_calls") or []:
            parts.append(m.ToolCallPart(tool_name=call["name"], args=call.get("args") or {}, tool_call_id=call["id"]))
    return m.ModelResponse(parts=parts)


@mapping_code
def from_canonical(history: Any) -> list[Any]:
    """The boundary's messages → pydantic-ai ModelMessages (consecutive request parts merged)."""
    from pydantic_ai import messages as m

    out: list[Any] = []
    names: dict[str, str] = {}
    pending: list[Any] = []

    def flush() -> None:
        if pending:
            out.append(m.ModelRequest(parts=list(pending)))
            pending.clear()

    for msg in history if isinstance(history, list) else []:
        role = msg.get("role") if isinstance(msg, dict) else None
        if role == "assistant":
            flush()
            for call in msg.get("tool_calls") or []:
                names[call["id"]] = call["name"]
            out.append(canonical_to_response(msg))
        elif role == "system":
            pending.append(m.SystemPromptPart(content=str(msg.get("text", ""))))
        elif role == "tool_result":
            call_id = str(msg.get("call_id"))
            pending.append(m.ToolReturnPart(tool_name=names.get(call_id, ""), content=msg.get("content"), tool_call_id=call_id))
        elif role == "user":
            pending.append(m.UserPromptPart(content=str(msg.get("text", ""))))
    flush()
    return out


@mapping_code
def response_from_chunks(chunks: list[dict[str, Any]]) -> Any:
    """The scripted model's stream chunks → one pydantic-ai ModelResponse (text first) whose one
    ``RequestUsage`` is the sum of the usage chunks, ``input_tokens`` counting cached reads
    (pydantic-ai's convention, ``usage.py:134, 259``); without a usage chunk, usage omitted
    (``unmeasured_requests``, as a provider's streamed response, ``models/__init__.py:3185-3191``).
    Its cost is pydantic-ai's to compute."""
    from pydantic_ai import messages as m
    from pydantic_ai.usage import RequestUsage

    text = "".join(c.get("text", "") for c in chunks if c.get("type") == "text")
    parts: list[Any] = [m.TextPart(content=text)] if text else []
    parts += [
        m.ToolCallPart(tool_name=c["name"], args=c.get("input_json") or "{}", tool_call_id=c["id"])
        for c in chunks
        if c.get("type") == "tool_use"
    ]
    usages = [c for c in chunks if c.get("type") == "usage"]
    tokens = {k: sum(int(u.get(k) or 0) for u in usages) for k in ("input_tokens", "output_tokens", "cached_input_tokens")}
    if not usages:
        return m.ModelResponse(parts=parts, usage=RequestUsage(unmeasured_requests=1))
    return m.ModelResponse(
        parts=parts,
        usage=RequestUsage(
            input_tokens=tokens["input_tokens"] + tokens["cached_input_tokens"],
            output_tokens=tokens["output_tokens"],
            cache_read_tokens=tokens["cached_input_tokens"],
        ),
    )


def price_table(model_name: str, pricing: Any) -> Any:
    """A genai-prices snapshot pricing ``model_name`` at the scenario's ``pricing`` (USD per
    million tokens), for ``set_custom_snapshot`` (``data_snapshot.py:12-36``)."""
    from decimal import Decimal

    from genai_prices import data_snapshot, types

    price = types.ModelPrice(
        input_mtok=Decimal(str(pricing.input_usd_per_mtok)),
        output_mtok=Decimal(str(pricing.output_usd_per_mtok)),
        cache_read_mtok=Decimal(str(pricing.cached_input_usd_per_mtok)),
    )
    match = types.ClauseEquals(equals=model_name)
    model = types.ModelInfo(id=model_name, match=match, prices=price)
    provider = types.Provider(id="akc-scenario", name="the scenario's pricing", api_pattern=r"^$", model_match=match, models=[model])
    return data_snapshot.DataSnapshot(providers=[provider], from_auto_update=False)


@mapping_code
def usage_events(session: Session, index: int, messages: list[Any]) -> list[UsageEvent]:
    """One usage event per stored model response that pydantic-ai priced (``RequestUsage.cost``,
    from genai-prices, ``_genai_prices.py:164-185``), in the boundary's convention: input tokens
    less the cached reads pydantic-ai counts among them."""
    from pydantic_ai import messages as m

    out = []
    for msg in messages:
        if isinstance(msg, m.ModelResponse) and msg.usage.cost is not None:
            out.append(UsageEvent(
                session_id=session.id, turn_id=f"{session.id}:m{index}", model=msg.model_name,
                input_tokens=msg.usage.input_tokens - msg.usage.cache_read_tokens, output_tokens=msg.usage.output_tokens,
                cached_input_tokens=msg.usage.cache_read_tokens, cost_usd=float(msg.usage.cost),
            ))
    return out


# --------------------------------------------------------------------------- spans

#: pydantic-ai's span operation (``gen_ai.operation.name``) → the boundary's span kind.
SPAN_KINDS = {"invoke_agent": "session", "chat": "model_call", "execute_tool": "tool"}


def _tracing() -> tuple[Any, Any]:
    """(exporter, Instrumentation capability) over a tracer provider of this run's own, or
    (None, None) without the OpenTelemetry SDK."""
    try:
        from opentelemetry.sdk.trace import TracerProvider
        from opentelemetry.sdk.trace.export import SimpleSpanProcessor
        from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
    except ImportError:
        return None, None
    from pydantic_ai.capabilities import Instrumentation
    from pydantic_ai.models.instrumented import InstrumentationSettings

    exporter = InMemorySpanExporter()
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    return exporter, Instrumentation(settings=InstrumentationSettings(tracer_provider=provider))


@mapping_code
def spans_of(finished: Any) -> list[Span]:
    return [
        Span(
            span_id=format(s.context.span_id, "016x"),
            parent_id=format(s.parent.span_id, "016x") if s.parent is not None else None,
            name=s.name,
            kind=SPAN_KINDS.get(str((s.attributes or {}).get("gen_ai.operation.name")), "other"),
            start=s.start_time / 1e9 if s.start_time else None,
            end=s.end_time / 1e9 if s.end_time else None,
            attributes={"operation": (s.attributes or {}).get("gen_ai.operation.name")},
        )
        for s in finished
    ]


# --------------------------------------------------------------------------- the adapter


def _m(kind: str, via: str | None = None, note: str | None = None) -> Mechanism:
    return Mechanism(kind=kind, via=via, note=note)  # type: ignore[arg-type]


#: How each hook point, capability and observation maps onto pydantic-ai 2.68 (source lines in
#: the module docstring and docs/third-party-kernels.md). Anything not named here is absent.
MECHANISMS: dict[str, Mechanism] = {
    "session-start": _m("observe-only", "Hooks.before_run"),
    "context-assemble": _m("native", "Hooks.before_model_request (as ProcessHistory)"),
    "pre-model-call": _m("native", "Hooks.before_model_request"),
    "post-model-response": _m("native", "Hooks.after_model_request"),
    "pre-tool-call": _m("native", "Hooks.before_node_run (CallToolsNode) / before_tool_validate"),
    "post-tool-call": _m("observe-only", "Hooks.after_node_run (CallToolsNode) / Hooks.after_output_process"),
    "session-end": _m("observe-only", "Hooks.after_run / Hooks.on_run_error"),
    "plan-ready": _m("native", "requires_approval + Hooks.deferred_tool_calls (ToolDenied for a vetoed call)"),
    "post-apply": _m("native", "Hooks.after_node_run (CallToolsNode)", "the plan the approval gate left"),
    "policy_precheck": _m("native", "Hooks.before_tool_execute raising ToolFailed"),
    "tool_kinds": _m("native", "function tool / CallDeferred(kind='question') / requires_approval"),
    "concurrency_keys": _m("absent", note="only a per-tool sequential barrier"),
    "terminal_tool": _m("native", "ToolOutput (an output tool ends the run)"),
    "max_turns": _m("native", "UsageLimits.request_limit"),
    "final_turn": _m("absent", note="UsageLimitExceeded is raised; no final tool-less turn"),
    "max_cost_usd": _m("native", "UsageLimits.cost_limit"),
    "max_wall_clock_s": _m("native", "Agent.run(timeout=) → RunTimedOut"),
    "doom_loop": _m("absent"),
    "usage": _m("native", "ModelResponse.usage (RequestUsage.cost from genai-prices)",
                "the price table set with genai_prices.data_snapshot.set_custom_snapshot from the scenario's pricing"),
    "spans": _m("native", "Instrumentation (OpenTelemetry)"),
    "journal": _m("native", "AgentRunResult.all_messages() / RunCancelled.all_messages()"),
    "cancellation": _m("native", "CancellationToken → RunCancelled"),
    "subagents": _m("not-wired", "agent delegation: Agent.run(..., usage=ctx.usage) inside a tool (agent/abstract.py:435)",
                    "the adapter does not map child agents onto it"),
}


class PydanticAIAdapter:
    info = AdapterInfo(
        name="pydantic-ai",
        version=_version(),
        homepage="https://ai.pydantic.dev",
        profiles=["kernel"],
        # UsageLimits.cost_limit (usage.py:557) and Agent.run(timeout=) (agent/abstract.py:604-607):
        # declared, so BOUND-004/014 and BOUND-005/015 pass or fail on their merits.
        capabilities=["max_cost_usd", "max_wall_clock_s"],
        mechanisms=MECHANISMS,
        # a ModelResponse holds one RequestUsage (messages.py:4928), a stream's usage summed into
        # it (models/__init__.py:3193-3208): one usage figure per model call (docs/adapter.md)
        model_api_cannot_carry=["usage-events"],
    )

    async def run(self, scenario: Scenario, doubles: Doubles) -> RunResult:
        from genai_prices.data_snapshot import set_custom_snapshot

        exporter, instrumentation = _tracing()
        agent, limits = self._build(scenario, doubles, instrumentation)
        stored_usage: list[UsageEvent] = []

        async def run_one(run: Run, session: Session, index: int, text: str) -> Outcome:
            from pydantic_ai import CancellationToken, capture_run_messages

            _turn.set(run.turn(session, index))
            token = CancellationToken()
            _token.set(token)
            # pydantic-ai's own cancellation (_cancel.py:50-71): the run raises RunCancelled holding
            # what it completed (exceptions.py:349-366), instead of the host cancelling its task.
            doubles.register_canceller(index, token.cancel)
            earlier = {id(msg) for msg in session.state or []}
            # the run's messages after the history it was given, also when it raised
            # (capture_run_messages, _agent_graph.py:4845-4887)
            with capture_run_messages() as captured:
                try:
                    return await self._one(scenario, agent, limits, session, index, text, token)
                finally:
                    stored_usage.extend(usage_events(session, index, [msg for msg in captured if id(msg) not in earlier]))

        # pydantic-ai prices every response from genai-prices' table, which is the user's to set
        set_custom_snapshot(price_table(scenario.model.name, scenario.model.pricing))
        try:
            result = await run_messages(scenario, doubles, run_one)
        finally:
            set_custom_snapshot(None)
        result.journal.usage = stored_usage
        if exporter is not None:
            result.spans = spans_of(exporter.get_finished_spans())
        return result

    async def _one(self, scenario: Scenario, agent: Any, limits: Any, session: Session, index: int, text: str, token: Any) -> Outcome:
        """One ``agent.run`` of a user message; its messages become the session's state."""
        from pydantic_ai.exceptions import RunCancelled

        try:
            result = await agent.run(
                text, message_history=session.state, usage_limits=limits, cancellation_token=token,
                timeout=scenario.bounds.max_wall_clock_s,
            )
        except RunCancelled as exc:
            session.state = exc.all_messages()
            session.messages = to_canonical(session.state)
            if type(exc).__name__ == "RunTimedOut":
                # the wall-clock bound raised out of agent.run: reported as raised (BOUND-008's
                # subject), like every framework's limit exception (issue 22 §3: translate none)
                raise
            return Outcome(message=index, session_id=session.id, status="cancelled", subtype="cancelled", error=str(exc)[:500])
        session.state = result.all_messages()
        session.messages = to_canonical(session.state)
        return Outcome(message=index, session_id=session.id, status="completed", subtype="success", reply=str(result.output))

    def _build(self, scenario: Scenario, doubles: Doubles, instrumentation: Any = None) -> tuple[Any, Any]:
        from pydantic_ai import Agent, CallToolsNode, RunContext, Tool, ToolOutput
        from pydantic_ai.output import StructuredDict
        from pydantic_ai import messages as m
        from pydantic_ai.capabilities import Hooks as PaiHooks
        from pydantic_ai.models.function import AgentInfo, FunctionModel
        from pydantic_ai.tools import ToolDefinition
        from pydantic_ai.usage import UsageLimits

        hooks = Hooks(scenario, doubles)
        reported: dict[int, Any] = {}  # id(ModelResponse) → the usage the scripted model reported

        async def model(messages: list[Any], info: AgentInfo) -> Any:
            with mapping("the model request"):
                request = {
                    "messages": to_canonical(messages),
                    "tools": [tool_spec(t.name, t.description, t.parameters_json_schema) for t in [*info.function_tools, *info.output_tools]],
                    "params": dict(info.model_settings or {}),
                }
            chunks = [chunk async for chunk in doubles.model_stream(request, _turn.get())]
            with mapping("the model response"):
                response = response_from_chunks(chunks)
            reported[id(response)] = response.usage
            return response

        class ScriptedModel(FunctionModel):
            """FunctionModel replaces usage without a non-zero value by an estimate
            (``models/function.py:186-190``); a model that reported zero tokens reported them, and
            a provider's model class keeps what the provider reports: so is the scripted model's."""

            async def request(self, *args: Any, **kwargs: Any) -> Any:
                response = await super().request(*args, **kwargs)
                response.usage = reported.pop(id(response), response.usage)
                return response

        from pydantic_ai.exceptions import CallDeferred, ToolFailed as PaiToolFailed
        from pydantic_ai.tools import DeferredToolResults, ToolDenied

        def make_tool(tool: ToolDef) -> Any:
            async def call(ctx: Any, **args: Any) -> str:
                if tool.kind == "interactive":  # a question for the user, answered by deferred_tool_calls
                    raise CallDeferred(kind="question")
                try:
                    out = await doubles.invoke_tool({"id": ctx.tool_call_id, "name": tool.name, "args": args}, _turn.get())
                except ToolFailed as exc:  # a scripted failure: pydantic-ai's own failed-tool result (exceptions.py:123-134)
                    raise PaiToolFailed(str(exc)) from None
                if out.get("is_error"):
                    raise PaiToolFailed(str(out.get("content", "")))
                return str(out.get("content", ""))

            sequential = tool.concurrency is not None and not tool.concurrency.safe
            if tool.concurrency is None and tool.kind == "resource":
                sequential = True
            made = Tool.from_schema(call, name=tool.name, description=tool.description, json_schema=tool.input_schema, takes_ctx=True, sequential=sequential)
            made.requires_approval = tool.kind == "resource"  # deferred to the plan gate (tools.py:578)
            return made

        capabilities: list[Any] = [instrumentation] if instrumentation is not None else []
        if hooks.has("context-assemble"):

            async def assemble(ctx: Any, request_context: Any) -> Any:
                """What ``ProcessHistory`` does with a history processor, with the RunContext."""
                payload = {"history": to_canonical(request_context.messages), "budget": {"turns_used": ctx.usage.requests}}
                out, replaced = await hooks.chain("context-assemble", payload, _turn.get())
                if replaced and isinstance(out, dict):
                    messages = from_canonical(out.get("history"))
                    request_context.messages = messages.copy()
                    ctx.messages[:] = messages
                return request_context

            assemble_hooks = PaiHooks()
            assemble_hooks.on.before_model_request(assemble)
            capabilities.append(assemble_hooks)

        ph = PaiHooks()
        if hooks.has("session-start"):

            @ph.on.before_run
            async def before_run(ctx: Any) -> None:
                await hooks.chain("session-start", {"session_id": _turn.get()["session_id"]}, _turn.get())

        if hooks.has("session-end"):

            @ph.on.after_run
            async def after_run(ctx: Any, *, result: Any) -> Any:
                await hooks.chain("session-end", {"session_id": _turn.get()["session_id"], "subtype": "success"}, _turn.get())
                return result

        if hooks.has("session-end"):

            @ph.on.run_error
            async def on_run_error(ctx: Any, *, error: BaseException) -> Any:
                await hooks.chain("session-end", {"session_id": _turn.get()["session_id"], "subtype": type(error).__name__}, _turn.get())
                raise error

        if hooks.has("pre-model-call"):

            @ph.on.before_model_request
            async def before_model_request(ctx: Any, request_context: Any) -> Any:
                mrp = request_context.model_request_parameters
                payload = {
                    "payload": {"history": to_canonical(request_context.messages), "budget": {"turns_used": ctx.usage.requests}},
                    "tool_specs": [tool_spec(t.name, t.description, t.parameters_json_schema) for t in mrp.function_tools],
                    "params": dict(request_context.model_settings or {}),
                }
                out, replaced = await hooks.chain("pre-model-call", payload, _turn.get())
                if not replaced or not isinstance(out, dict):
                    return request_context
                inner = out.get("payload") if isinstance(out.get("payload"), dict) else {}
                tools = [
                    ToolDefinition(name=s["name"], description=s.get("description"), parameters_json_schema=s.get("input_schema") or {"type": "object"})
                    for s in out.get("tool_specs") or []
                ]
                return dataclasses.replace(
                    request_context,
                    messages=from_canonical(inner.get("history")),
                    model_settings=dict(out.get("params") or {}),
                    model_request_parameters=dataclasses.replace(mrp, function_tools=tools),
                )

        if hooks.has("post-model-response"):

            @ph.on.after_model_request
            async def after_model_request(ctx: Any, *, request_context: Any, response: Any) -> Any:
                out, replaced = await hooks.chain("post-model-response", response_to_canonical(response), _turn.get())
                if replaced:
                    new = canonical_to_response(out)
                    return dataclasses.replace(response, parts=new.parts)
                return response

        kinds = {t.name: t.kind for t in scenario.tools}
        terminal = {t.name for t in scenario.tools if t.terminates_turn}

        if hooks.has("pre-tool-call"):
            replaced_args: dict[str, Any] = {}

            @ph.on.before_node_run
            async def before_node_run(ctx: Any, *, node: Any) -> Any:
                """Every call of the response, in order, before any tool runs (unknown tools too)."""
                if isinstance(node, CallToolsNode):
                    for c in node.model_response.tool_calls:
                        if c.tool_name in terminal:  # an output tool: no tool hooks
                            continue
                        payload = {"id": c.tool_call_id, "name": c.tool_name, "args": parse_args(c.args)}
                        out, replaced = await hooks.chain("pre-tool-call", payload, _turn.get())
                        if replaced and isinstance(out, dict) and isinstance(out.get("args"), dict):
                            replaced_args[c.tool_call_id] = out["args"]
                return node

            @ph.on.before_tool_validate
            async def before_tool_validate(ctx: Any, *, call: Any, tool_def: Any, args: Any) -> Any:
                return replaced_args.pop(call.tool_call_id, args)

        @ph.on.before_tool_execute
        async def precheck(ctx: Any, *, call: Any, tool_def: Any, args: Any) -> Any:
            """The policy precheck of data-source and interactive calls: a ``before_tool_execute``
            hook that refuses with ``ToolFailed`` (exceptions.py:123-130: "can be raised from ...
            tool validation/execution hooks")."""
            if kinds.get(call.tool_name) in ("data_source", "interactive"):
                verdict = await doubles.policy_precheck({"id": call.tool_call_id, "name": call.tool_name, "args": parse_args(call.args)}, _turn.get())
                if not verdict.get("allow", True):
                    raise PaiToolFailed(f"denied by policy: {verdict.get('reason') or 'no reason given'}")
            return args

        if hooks.has("post-tool-call"):

            @ph.on.after_node_run
            async def post_tool_calls(ctx: Any, *, node: Any, result: Any) -> Any:
                """Once every call of the response ended: each call's result part in the next request."""
                from pydantic_ai import ModelRequestNode

                calls = node.model_response.tool_calls if isinstance(node, CallToolsNode) else []
                if calls and isinstance(result, ModelRequestNode):
                    parts = {getattr(p, "tool_call_id", None): p for p in result.request.parts}
                    for c in calls:
                        p = parts.get(c.tool_call_id)
                        if c.tool_name in terminal or p is None:
                            continue
                        with mapping("a tool result part"):
                            failed = isinstance(p, m.RetryPromptPart) or getattr(p, "outcome", "success") != "success"
                            content = p.model_response() if isinstance(p, m.RetryPromptPart) else p.model_response_str()
                        payload = {"call": {"id": c.tool_call_id, "name": c.tool_name, "args": parse_args(c.args)},
                                   "result": {"content": content, "is_error": failed}}
                        await hooks.chain("post-tool-call", payload, _turn.get())
                return result

        if hooks.has("post-tool-call"):

            @ph.on.after_output_process
            async def after_output_process(ctx: Any, *, output_context: Any, output: Any) -> Any:
                """A terminal tool is an output tool: its post-tool-call is pydantic-ai's
                after_output_process (capabilities/abstract.py:1543-1555, _output.py:315)."""
                call = output_context.tool_call
                if call is not None:
                    payload = {
                        "call": {"id": call.tool_call_id, "name": call.tool_name, "args": parse_args(call.args)},
                        "result": {"content": str(output), "is_error": False},
                    }
                    await hooks.chain("post-tool-call", payload, _turn.get())
                return output

        gate: dict[str, Any] = {}  # turn id → the plan the approval gate left for the node running now

        @ph.on.deferred_tool_calls
        async def deferred_tool_calls(ctx: Any, *, requests: Any) -> Any:
            """The questions (interactive calls) answered one at a time, in order, then the
            deferred resource calls as the plan: approved, or denied where the chain vetoed them."""
            answers: dict[str, Any] = {}
            token = _token.get(None)

            def stopped() -> bool:
                # pydantic-ai delivers a cancel at the driving task's next await (_run_context.py:
                # 1156-1170); the host answering its questions checks its own stop first
                return token is not None and token.cancelled

            for c in requests.calls:
                if stopped():
                    answers[c.tool_call_id] = PaiToolFailed("cancelled")
                    continue
                try:
                    out = await doubles.invoke_tool({"id": c.tool_call_id, "name": c.tool_name, "args": parse_args(c.args)}, _turn.get())
                    answers[c.tool_call_id] = PaiToolFailed(str(out.get("content", ""))) if out.get("is_error") else str(out.get("content", ""))
                except ToolFailed as exc:
                    answers[c.tool_call_id] = PaiToolFailed(str(exc))
            if stopped():  # no plan after the stop: nothing is approved
                return DeferredToolResults(approvals={c.tool_call_id: ToolDenied("cancelled") for c in requests.approvals}, calls=answers)
            plan = await hooks.plan_ready({"items": [
                {"call_id": c.tool_call_id, "name": c.tool_name, "args": parse_args(c.args), "vetoed": False, "reason": None}
                for c in requests.approvals
            ]}, _turn.get())
            gate[_turn.get()["turn_id"]] = plan
            decided = hooks.decisions(plan)
            approvals: dict[str, Any] = {}
            for c in requests.approvals:
                reason = decided.get(c.tool_call_id, "removed from the plan")
                approvals[c.tool_call_id] = True if c.tool_call_id in decided and reason is None else ToolDenied(f"Vetoed: {reason}")
            return DeferredToolResults(approvals=approvals, calls=answers)

        @ph.on.after_node_run
        async def after_node_run(ctx: Any, *, node: Any, result: Any) -> Any:
            """Once the CallToolsNode ran every call of the response (capabilities/abstract.py:966):
            plan-ready with an empty plan where no call was deferred, then post-apply."""
            calls = node.model_response.tool_calls if isinstance(node, CallToolsNode) else []
            plan = gate.pop(_turn.get()["turn_id"], None)
            if calls and not any(c.tool_name in terminal for c in calls):
                if plan is None:
                    plan = await hooks.plan_ready({"items": []}, _turn.get())
                await hooks.chain("post-apply", plan, _turn.get())
            return result

        def make_output(tool: ToolDef) -> Any:
            """A terminates_turn tool is an output tool whose output function is the tool."""
            # StructuredDict edits the schema it is given: hand it a copy, never the scenario's own
            args_type = StructuredDict(copy.deepcopy(tool.input_schema), name=f"{tool.name}_args")

            async def finish(ctx: RunContext, args: args_type) -> str:  # type: ignore[valid-type]
                out = await doubles.invoke_tool({"id": ctx.tool_call_id, "name": tool.name, "args": dict(args)}, _turn.get())
                return str(out.get("content", ""))

            finish.__annotations__ = {"ctx": RunContext, "args": args_type, "return": str}
            return ToolOutput(finish, name=tool.name, description=tool.description or tool.name)

        capabilities.append(ph)
        outputs = [make_output(t) for t in scenario.tools if t.terminates_turn]
        agent = Agent(
            ScriptedModel(model, model_name=scenario.model.name),
            system_prompt=scenario.system_prompt,
            tools=[make_tool(t) for t in scenario.tools if not t.terminates_turn],
            # an answer may be empty: with None among the output types an empty response is a valid
            # result, not a retry (_agent_graph.py:3906-3937; _output.py:600-606)
            output_type=[str, None, *outputs],
            capabilities=capabilities,
        )
        b = scenario.bounds
        limits = None
        if b.max_turns is not None or b.max_cost_usd is not None:
            from decimal import Decimal

            limits = UsageLimits(
                **({"request_limit": b.max_turns} if b.max_turns is not None else {}),
                cost_limit=Decimal(str(b.max_cost_usd)) if b.max_cost_usd is not None else None,
            )
        return agent, limits


def factory() -> PydanticAIAdapter:
    return PydanticAIAdapter()
