"""Legal variants of the second blind round: each makes another choice the seeds leave open (the
sentence that allows it is in its docstring) and must pass the full suite."""

from __future__ import annotations

import datetime as _dt
import random
import threading
from collections.abc import Callable
from typing import Any

import anyio

from conformance.selftest.registry import flag, variant
from reference_kernel.agent import ERROR, CommonAgent
from reference_kernel.concurrency import KeyedLocks
from reference_kernel.ids import _build
from reference_kernel.kernel import DURING_EXECUTION, SUCCESS, HookFailed, Kernel


@variant()
class KernelStartsReversed(Kernel):
    """Calls of one group are started in reverse order. 003: "Calls with distinct keys MUST execute
    concurrently" / "sharing an identical key ... MUST execute sequentially" - no start order is named."""

    async def _run_keyed(self, run: Any, calls: list[Any]) -> None:
        await super()._run_keyed(run, list(reversed(calls)))


@variant()
class AgentStartsReversed(CommonAgent):
    """Parallel tools are started last to first. 000: "Tool calls from one model response run in parallel"
    - no start order; "Results go back ... in the order the model asked" is kept."""

    async def _tool_calls(self, t: Any, tool_calls: list[dict[str, Any]], span: str, bad: dict[str, str]) -> list[Any]:
        if len(tool_calls) < 2:
            return await super()._tool_calls(t, tool_calls, span, bad)
        calls = [self._prepare(i, call, bad, check_schema=False) for i, call in enumerate(tool_calls)]
        if self._sequential(calls):
            return await super()._tool_calls(t, tool_calls, span, bad)
        with t.token.scope():
            runnable = []
            for c in calls:
                t.token.check()
                if await self._decide(t, c, span):
                    runnable.append(c)
            if runnable:
                async with anyio.create_task_group() as tg:
                    for c in reversed(runnable):
                        tg.start_soon(self._execute, c, t, span)
            for c in calls:
                await self._after(t, c, span)
        t.token.check()
        return calls


def _v7_counter_from_zero(clock: Callable[[], float]) -> Callable[[], str]:
    """UUID v7, rand_a a per-millisecond counter starting at 0 (RFC 9562 §6.2 method 1)."""
    lock, state, rng = threading.Lock(), {"ms": -1, "n": 0}, random.Random()

    def next_id() -> str:
        with lock:
            ms = max(int(clock() * 1000), state["ms"])
            if ms > state["ms"]:
                state["ms"], state["n"] = ms, 0
            else:
                state["n"] += 1
                if state["n"] > 0xFFF:
                    state["ms"], state["n"] = state["ms"] + 1, 0
            return str(_build(state["ms"], state["n"], rng.getrandbits(62)))

    return next_id


flag("variant", "ids_v7_counter_from_zero", __name__,
     "Another UUID v7 generator: a per-millisecond counter from 0 in rand_a. 001: \"IDs are UUID v7, so they sort by creation time\".",
     ids_factory=_v7_counter_from_zero)


def _v7_submillisecond(clock: Callable[[], float]) -> Callable[[], str]:
    """UUID v7 with 12 bits of sub-millisecond time in rand_a (RFC 9562 §6.2 method 3), bumped when equal."""
    lock, state, rng = threading.Lock(), {"last": -1}, random.Random()

    def next_id() -> str:
        with lock:
            now = max(0, int(clock() * 1000 * 4096))  # 1/4096 ms units
            now = max(now, state["last"] + 1)
            state["last"] = now
            return str(_build(now >> 12, now & 0xFFF, rng.getrandbits(62)))

    return next_id


flag("variant", "ids_v7_submillisecond", __name__,
     "Another UUID v7 generator: sub-millisecond precision in rand_a. 001: \"IDs are UUID v7, so they sort by creation time\".",
     ids_factory=_v7_submillisecond)


class _SpanEdit:
    def __init__(self, inner: Any, edit: Callable[[str, str, dict[str, Any]], tuple[str, dict[str, Any]]]) -> None:
        self._inner, self._edit = inner, edit

    @property
    def spans(self) -> Any:
        return self._inner.spans

    def start(self, name: str, kind: str, parent_id: str | None, attributes: dict[str, Any] | None = None) -> str:
        name, attrs = self._edit(name, kind, dict(attributes or {}))
        return self._inner.start(name, kind, parent_id, attrs)

    def end(self, span_id: str, attributes: dict[str, Any] | None = None) -> None:
        self._inner.end(span_id, attributes)


@variant()
class KernelToolSpanGenericName(Kernel):
    """Tool spans are named `tool.execute` (the tool's name kept as an attribute). 003: "MUST emit a span or
    equivalent trace event ... for tool execution" - no span name is prescribed."""

    def __init__(self, *a: Any, **k: Any) -> None:
        super().__init__(*a, **k)
        self.spans = _SpanEdit(self.spans, lambda n, kind, at: ("tool.execute", {**at, "tool": n}) if kind == "tool" else (n, at))


@variant()
class KernelExtraSpanAttributes(Kernel):
    """Every span carries extra attributes (service name, profile). 003 asks for a span per point, so that "a
    turn's execution is fully reconstructible from its trace"; more data is allowed."""

    def __init__(self, *a: Any, **k: Any) -> None:
        super().__init__(*a, **k)
        self.spans = _SpanEdit(self.spans, lambda n, kind, at: (n, {**at, "service": "variant", "profile": self.profile.profile_id}))


@variant()
class AgentOneLockForAllSessions(CommonAgent):
    """One lock for every session: turns of different sessions also wait for each other. 000: "Only one turn
    runs per session at a time. A second message to the same session waits." - stricter serialisation is not
    forbidden."""

    def _session_lock(self, session_id: str) -> anyio.Lock:
        return super()._session_lock("*")


@variant()
class KernelRecordsBeforeResults(Kernel):
    """Tool calls are recorded in the journal before the turn's messages are appended. 001's Journal trait
    names the calls, not their order within a turn."""

    async def _append_results(self, run: Any, message: dict[str, Any], calls: list[Any]) -> None:
        for c in self._order_results(calls):
            await self.journal.record_tool_call(run.turn, self._record(c))
        await self._append(run, message)
        for c in self._order_results(calls):
            await self._append(run, self._tool_result(c))


@variant()
class AgentRecordsAfterAllHooks(CommonAgent):
    """Every call's record is stored after the post_tool_call / transform_tool_result hooks of all the calls
    of the response (a batched write). 000 each call: steps 5, 6, 7 in that order - kept for every call."""

    async def _tool_calls(self, t: Any, tool_calls: list[dict[str, Any]], span: str, bad: dict[str, str]) -> list[Any]:
        self.__dict__.setdefault("_batch", {})[t.turn.turn_id] = []
        try:
            calls = await super()._tool_calls(t, tool_calls, span, bad)
        finally:
            held = self._batch.pop(t.turn.turn_id, [])
        for rec in held:
            await self.journal.record_tool_call(t.turn, rec)
        return calls

    async def _after(self, t: Any, c: Any, span: str) -> None:
        batch = self.__dict__.get("_batch", {}).get(t.turn.turn_id)
        if batch is None:
            return await super()._after(t, c, span)
        await self._dispatch(
            "post_tool_call",
            {"name": c.name, "args": c.args, "call_id": c.id, "result": c.content, "is_error": c.is_error},
            t.turn, span,
        )
        out = await self._dispatch(
            "transform_tool_result", {"name": c.name, "call_id": c.id, "result": c.content}, t.turn, span
        )
        if isinstance(out, dict):
            out = out.get("result", out.get("text", out.get("content", c.content)))
        c.content = "" if out is None else str(out)
        batch.append(self._record(c))


_OTHER_CLASSES = {429: "throttled", 401: "unauthenticated", 403: "forbidden"}


@variant()
class AgentOtherErrorClasses(CommonAgent):
    """Other names for the model-error classification. 000: "On failure: api_request_error, then
    transform_api_error_classification" - the classification's vocabulary is not given."""

    async def _api_error(self, t: Any, exc: Any, span: str) -> None:
        s = exc.status
        label = _OTHER_CLASSES.get(s) or ("client_error" if s and 400 <= s < 500 else "upstream_error" if s and s >= 500 else "transport_error")
        await self._dispatch("api_request_error", {"status": s, "message": exc.message}, t.turn, span)
        out = await self._dispatch(
            "transform_api_error_classification", {"status": s, "message": exc.message, "classification": label}, t.turn, span
        )
        classification = out.get("classification") if isinstance(out, dict) else out
        t.status, t.error = ERROR, f"model call failed ({classification}): {exc.message}"


@variant()
class KernelBudgetExtraFields(Kernel):
    """context-assemble's budget also carries the configured limits. 003 step 1: `HookDispatch("context-assemble",
    {history, budget})` - what the budget holds is not spelled out."""

    def _budget(self, run: Any) -> dict[str, Any]:
        b = run.bounds
        return {**super()._budget(run), "max_turns": b.max_turns, "max_cost_usd": b.max_cost_usd, "max_wall_clock_s": b.max_wall_clock_s}


@variant()
class KernelPrecheckInTask(Kernel):
    """Each data-source call is prechecked in its own task, right before it executes (concurrently with the
    others). 003 step 9: `execute_concurrently(PolicyPrecheck(data_source_calls))` - "every call the model makes
    passes through policy" before executing; no batch precheck is required."""

    async def _execute_data_sources(self, run: Any, calls: list[Any]) -> None:
        if not calls:
            return
        locks = KeyedLocks()

        async def one(c: Any) -> None:
            if await self._policy_precheck(run, [c]):
                async with locks.hold(self._tool_key(c)):
                    await self._execute(c, run, run.turn_span)

        with run.token.scope():
            async with anyio.create_task_group() as tg:
                for c in calls:
                    tg.start_soon(one, c)
        run.token.check()


@variant()
class AgentTimeAsRfc2822(CommonAgent):
    """The volatile tier gives the time in RFC 2822 form. 000 step 3: "volatile (the current time)" - no format."""

    def _volatile_tier(self) -> str:
        now = _dt.datetime.fromtimestamp(self.clock(), _dt.timezone.utc)
        return "It is now " + now.strftime("%a, %d %b %Y %H:%M:%S +0000") + "."


@variant()
class KernelSessionEndExtraFields(Kernel):
    """session-end's payload also carries the status and the turns used. 003: "session-end fires once after the
    loop exits" - its payload is not specified."""

    async def _session_end(self, run: Any) -> None:
        payload = {"session_id": run.turn.session_id, "subtype": run.subtype, "status": run.status, "turns_used": run.turns_used}
        try:
            await self._dispatch("session-end", payload, run.turn, run.span)
        except HookFailed as exc:
            run.status, run.error = "error", str(exc)
            if run.subtype == SUCCESS:
                run.subtype = DURING_EXECUTION


@variant()
class AgentPostToolCallExtraFields(CommonAgent):
    """post_tool_call's payload also carries the risk and the duration. 000 step 5: "Fire post_tool_call" -
    only pre_tool_call's payload is listed; more fields are allowed."""

    async def _after(self, t: Any, c: Any, span: str) -> None:
        self.__dict__.setdefault("_extra", {})[c.id] = {"risk": c.entry.spec.risk if c.entry else None, "duration_ms": c.duration_ms}
        await super()._after(t, c, span)

    async def _dispatch(self, point: str, payload: Any, turn: Any, parent_span: Any, on_outcome: Any = None) -> Any:
        if point == "post_tool_call" and isinstance(payload, dict):
            payload = {**payload, **self.__dict__.get("_extra", {}).get(payload.get("call_id"), {})}
        return await super()._dispatch(point, payload, turn, parent_span, on_outcome)


@variant()
class KernelUnknownToolWording(Kernel):
    """Another error text for a call to an unknown tool. 003/000 step 1 ("Look up the tool by name") give no
    wording for a failed look-up."""

    def _prepare(self, index: int, call: dict[str, Any], bad: dict[str, str], check_schema: bool = True) -> Any:
        c = super()._prepare(index, call, bad, check_schema)
        if c.entry is None:
            c.fail(f"There is no tool called {c.name}; available: {', '.join(sorted(self._tools))}")
        return c
