"""What every third-party adapter does the same way: dispatch a hook point's chain to the
doubles, run the scenario's user messages (sessions, concurrency, cancellation) and assemble
the RunResult. Nothing here adds kernel behaviour: it only drives the framework and reports what
it returned.
"""

from __future__ import annotations

import functools
import json
import uuid
from collections.abc import Awaitable, Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any

import anyio

from conformance.boundary.adapter import (
    Doubles,
    JournalDump,
    KernelRaised,
    MessageRecord,
    Outcome,
    RunResult,
    SessionRecord,
    run_user_messages,
)
from conformance.boundary.scenario import Scenario, UserMessage

JSON = dict[str, Any]


class AdapterBug(Exception):
    """The adapter's own mapping code broke. It is raised out of ``run`` (the harness reports an
    *error*), never reported as the framework raising (which would be a *fail*)."""


@contextmanager
def mapping(what: str) -> Iterator[None]:
    """Mark a block of the adapter's own conversion code (not the framework's, not the doubles')."""
    try:
        yield
    except AdapterBug:
        raise
    except Exception as exc:
        raise AdapterBug(f"{what}: {type(exc).__name__}: {exc}") from exc


def mapping_code(func: Callable[..., Any]) -> Callable[..., Any]:
    """Decorator form of :func:`mapping` for a conversion function."""

    @functools.wraps(func)
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        with mapping(func.__name__):
            return func(*args, **kwargs)

    return wrapper


def adapter_bug(exc: BaseException) -> AdapterBug | None:
    """The AdapterBug in ``exc``'s cause/context chain (frameworks wrap what callbacks raise)."""
    seen: set[int] = set()
    current: BaseException | None = exc
    while current is not None and id(current) not in seen:
        if isinstance(current, AdapterBug):
            return current
        seen.add(id(current))
        current = current.__cause__ or current.__context__
    return None


class Hooks:
    """The scenario's hooks, grouped by point in registration order, and a chain dispatcher.

    ``chain`` hands each hook the payload the previous one returned (a ``replace`` outcome swaps
    it); a ``raise`` outcome raises out of the double into the framework, like any hook error."""

    def __init__(self, scenario: Scenario, doubles: Doubles) -> None:
        self.doubles = doubles
        self.by_point: dict[str, list[str]] = {}
        for hook in scenario.hooks:
            self.by_point.setdefault(hook.point, []).append(hook.id)

    def has(self, point: str) -> bool:
        return bool(self.by_point.get(point))

    async def chain(self, point: str, payload: Any, turn: JSON) -> tuple[Any, bool]:
        """Returns (final payload, whether any hook replaced it)."""
        replaced = False
        for hook_id in self.by_point.get(point, []):
            out = await self.doubles.dispatch_hook(hook_id, point, payload, turn)
            if isinstance(out, dict) and out.get("kind") == "replace":
                payload, replaced = out.get("payload"), True
        return payload, replaced

    async def plan_ready(self, plan: JSON, turn: JSON) -> JSON:
        """The plan-ready veto chain (docs/adapter.md): a ``veto`` marks its ``call_ids`` vetoed with
        its reason, a ``replace`` swaps the plan; each hook gets the plan the one before left."""
        for hook_id in self.by_point.get("plan-ready", []):
            out = await self.doubles.dispatch_hook(hook_id, "plan-ready", plan, turn)
            if isinstance(out, dict) and out.get("kind") == "replace" and isinstance(out.get("payload"), dict):
                plan = out["payload"]
            elif isinstance(out, dict) and out.get("kind") == "veto":
                vetoed = set(out.get("call_ids") or [])
                items = [{**i, "vetoed": True, "reason": out.get("reason")} if i.get("call_id") in vetoed else i for i in plan.get("items", [])]
                plan = {**plan, "items": items}
        return plan

    @staticmethod
    def decisions(plan: JSON) -> dict[Any, str | None]:
        """call id → None (apply it) or the reason it is not applied, for every item of a plan
        left by :meth:`plan_ready`; a call the chain removed from the plan is not applied."""
        out: dict[Any, str | None] = {}
        for item in plan.get("items") or []:
            if isinstance(item, dict):
                out[item.get("call_id")] = (item.get("reason") or "vetoed") if item.get("vetoed") else None
        return out


@mapping_code
def parse_args(raw: Any) -> Any:
    """Tool-call arguments as JSON data (raw text that is not JSON stays text)."""
    if isinstance(raw, str):
        try:
            return json.loads(raw) if raw.strip() else {}
        except ValueError:
            return raw
    return raw if raw is not None else {}


def tool_spec(name: str, description: str | None, schema: Any) -> JSON:
    return {"name": name, "description": description or "", "input_schema": schema or {"type": "object"}}


@dataclass
class Session:
    """One scenario session label: the framework's own carried-over state, plus the id we report."""

    id: str
    label: str
    state: Any = None
    messages: list[JSON] = field(default_factory=list)


@dataclass
class Run:
    """The bookkeeping of one adapter run."""

    scenario: Scenario
    doubles: Doubles
    sessions: dict[str, Session] = field(default_factory=dict)
    outcomes: list[Outcome | None] = field(default_factory=list)
    raised: list[KernelRaised] = field(default_factory=list)

    def turn(self, session: Session, index: int) -> JSON:
        """The TurnInfo handed to the doubles: one turn per user message run."""
        return {
            "profile_id": self.scenario.profile_id,
            "session_id": session.id,
            "turn_id": f"{session.id}:m{index}",
            "parent_turn_id": None,
            "tags": list(self.scenario.profile_tags) + list(self.scenario.session_tags),
            "depth": 0,
        }

    def result(self) -> RunResult:
        journal = JournalDump(
            sessions=[SessionRecord(id=s.id, profile_id=self.scenario.profile_id) for s in self.sessions.values()],
            messages=[MessageRecord(session_id=s.id, message=m) for s in self.sessions.values() for m in s.messages],
        )
        return RunResult(
            outcomes=[o for o in self.outcomes if o is not None],
            journal=journal,
            raised=self.raised[0] if self.raised else None,
        )


#: How long a cancel waits for the framework to unwind before the call it came in goes on.
CANCEL_TAKE_S = 5.0

#: ``run_one(run, session, index, text) -> Outcome``; raising means the framework raised.
RunOne = Callable[[Run, Session, int, str], Awaitable[Outcome]]


async def run_messages(scenario: Scenario, doubles: Doubles, run_one: RunOne) -> RunResult:
    """Run each user message (a ``concurrent`` one while the previous still runs), each under a
    cancel scope the harness's canceller cancels (the host cancelling the framework's task)."""
    run = Run(scenario, doubles, outcomes=[None] * len(scenario.user_messages))
    ended: dict[int, anyio.Event] = {}

    async def prepare(index: int, message: UserMessage) -> tuple[Session, anyio.CancelScope]:
        session = run.sessions.get(message.session)
        if session is None:
            session = run.sessions[message.session] = Session(id=str(uuid.uuid4()), label=message.session)
        scope = anyio.CancelScope()
        ended[index] = anyio.Event()

        async def cancel() -> None:
            # A host's stop cancels the task and awaits it: the call the cancel came in keeps
            # running until the framework has unwound (or CANCEL_TAKE_S passed), so whether the
            # next call starts is the framework's doing, not a race between its cleanup and a
            # worker thread picking up the next call as this one returns. From inside the
            # cancelled task itself (a model call, a hook) the wait ends at once, cancelled.
            scope.cancel()
            with anyio.move_on_after(CANCEL_TAKE_S):
                await ended[index].wait()

        doubles.register_canceller(index, cancel)
        return session, scope

    async def one(index: int, message: UserMessage, prepared: tuple[Session, anyio.CancelScope]) -> None:
        session, scope = prepared
        try:
            with scope:
                run.outcomes[index] = await run_one(run, session, index, message.text)
            if scope.cancelled_caught:
                run.outcomes[index] = Outcome(
                    message=index, session_id=session.id, status="cancelled", subtype="cancelled",
                    error="the host cancelled the framework's run (task cancellation)",
                )
        except Exception as exc:  # the framework raised out of its API: report it
            bug = adapter_bug(exc)
            if bug is not None:
                raise bug from exc
            run.raised.append(KernelRaised(type=type(exc).__name__, message=str(exc)[:2000]))
        finally:
            ended[index].set()

    try:
        await run_user_messages(scenario, one, prepare, doubles)
    except BaseExceptionGroup as group:  # an adapter bug in a message's task: raise it plainly
        bug = next((b for b in map(adapter_bug, group.exceptions) if b is not None), None)
        if bug is not None:
            raise bug from None
        raise
    return run.result()


class OtelSpans:
    """A framework's own OpenTelemetry spans, collected in memory per trace (one provider per
    process, set before the framework makes its tracer: strands-agents, google-adk). A run takes
    its traces' spans away, so nothing accumulates across scenarios."""

    by_trace: dict[int, list[Any]] | None = None

    @classmethod
    def install(cls) -> None:
        if cls.by_trace is None:
            from opentelemetry import trace
            from opentelemetry.sdk.trace import TracerProvider
            from opentelemetry.sdk.trace.export import SimpleSpanProcessor, SpanExporter, SpanExportResult

            by_trace: dict[int, list[Any]] = {}

            class Collect(SpanExporter):
                def export(self, spans: Any) -> Any:
                    for span in spans:
                        by_trace.setdefault(span.context.trace_id, []).append(span)
                    return SpanExportResult.SUCCESS

                def shutdown(self) -> None: ...

            provider = TracerProvider()
            provider.add_span_processor(SimpleSpanProcessor(Collect()))
            trace.set_tracer_provider(provider)
            cls.by_trace = by_trace

    @classmethod
    @contextmanager
    def marker(cls, trace_ids: set[int]) -> Iterator[None]:
        """An ``akc.message`` span around one run, only to tell its trace apart from others'."""
        from opentelemetry import trace

        with trace.get_tracer("akc").start_as_current_span("akc.message") as outer:
            trace_ids.add(outer.get_span_context().trace_id)
            yield

    @classmethod
    def spans(cls, trace_ids: set[int], kind: Callable[[str], str]) -> list[Any]:
        from conformance.boundary.adapter import Span

        finished = [s for t in trace_ids for s in (cls.by_trace or {}).pop(t, [])]
        markers = {s.context.span_id for s in finished if s.name == "akc.message"}  # the framework's root spans hang off these
        return [
            Span(span_id=f"{s.context.span_id:016x}", parent_id=f"{s.parent.span_id:016x}" if s.parent and s.parent.span_id not in markers else None,
                 name=s.name, kind=kind(s.name), start=s.start_time / 1e9 if s.start_time else None, end=s.end_time / 1e9 if s.end_time else None)
            for s in finished if s.context.span_id not in markers
        ]
