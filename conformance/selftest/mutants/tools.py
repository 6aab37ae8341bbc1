"""Mutants of 003's tool scheduling and gating (CONC-*, GATE-*), result order and done detection."""

from __future__ import annotations

import json
from typing import Any

from conformance.selftest.registry import mutant
from reference_kernel.adapter import ReferenceAdapter
from reference_kernel.concurrency import concurrency_key
from reference_kernel.kernel import Kernel


@mutant("CONC-001")
class DataSourcesOneByOne(Kernel):
    """All data-source calls run one after the other."""

    async def _execute_data_source(self, run: Any, calls: list[Any]) -> None:
        for c in calls:
            await self._run_keyed(run, [c])


@mutant("CONC-002")
class KeyFieldsIgnored(Kernel):
    """A safe operation's key-field values are not part of its key: equal keys run together."""

    def _tool_key(self, c: Any) -> Any:
        key = super()._tool_key(c)
        return ("call", c.id) if key[0] == "key" else key


@mutant("CONC-003", also_expected=("CONC-004",))
class DeclaredUnsafeRunsFree(Kernel):
    """An operation declared safe: false gets a key per call, so its calls overlap."""

    def _tool_key(self, c: Any) -> Any:
        spec = c.entry.spec.concurrency
        return ("call", c.id) if spec is not None and not spec.safe else super()._tool_key(c)


@mutant("CONC-004")
class LockPerOperation(Kernel):
    """Unsafe and undeclared operations lock per operation instead of provider-wide."""

    def _tool_key(self, c: Any) -> Any:
        key = super()._tool_key(c)
        return (*key, c.name) if key[0] == "provider" else key


@mutant("CONC-005")
class PlanAppliedOneByOne(Kernel):
    """Approved resource calls are applied one after the other."""

    async def _apply_plan(self, run: Any, plan: dict[str, Any], resources: list[Any]) -> None:
        self._one_by_one = True
        try:
            await super()._apply_plan(run, plan, resources)
        finally:
            self._one_by_one = False

    async def _run_keyed(self, run: Any, calls: list[Any]) -> None:
        if getattr(self, "_one_by_one", False):
            for c in calls:
                await super()._run_keyed(run, [c])
        else:
            await super()._run_keyed(run, calls)


@mutant("CONC-006")
class OneGlobalLock(Kernel):
    """Unsafe and undeclared operations of every provider share one global lock."""

    def _tool_key(self, c: Any) -> Any:
        key = super()._tool_key(c)
        return ("provider", "*") if key[0] == "provider" else key


@mutant("CONC-007")
class InteractiveInParallel(Kernel):
    """Interactive calls of a turn run in parallel."""

    def _tool_key(self, c: Any) -> Any:
        return ("call", c.id) if c.entry.spec.kind == "interactive" else super()._tool_key(c)

    async def _execute_interactive(self, run: Any, calls: list[Any]) -> None:
        if calls:
            await self._run_keyed(run, await self._policy_precheck(run, calls))


@mutant("CONC-010")
class SafeResourceSkipsPlan(Kernel):
    """A resource call declared safe: true is run like a data source, outside the plan."""

    @staticmethod
    def _split_by_kind(calls: list[Any]) -> tuple[list[Any], list[Any], list[Any]]:
        data, resources, interactive = Kernel._split_by_kind(calls)
        safe = [c for c in resources if c.entry.spec.concurrency is not None and c.entry.spec.concurrency.safe]
        return data + safe, [c for c in resources if c not in safe], interactive


@mutant("GATE-001")
class DataSourcesNotPrechecked(Kernel):
    """Data-source calls skip the policy precheck."""

    async def _execute_data_sources(self, run: Any, calls: list[Any]) -> None:
        if calls:
            await self._execute_data_source(run, calls)


@mutant("GATE-001")
class DataSourcesPrecheckedAfterwards(Kernel):
    """Data-source calls run first; the precheck is consulted afterwards (audit only)."""

    async def _execute_data_sources(self, run: Any, calls: list[Any]) -> None:
        if calls:
            await self._execute_data_source(run, calls)
            await self._policy_precheck(run, calls)


@mutant("GATE-002")
class InteractiveNotPrechecked(Kernel):
    """Interactive calls skip the policy precheck."""

    async def _policy_precheck(self, run: Any, calls: list[Any]) -> list[Any]:
        if calls and calls[0].entry.spec.kind == "interactive":
            return calls
        return await super()._policy_precheck(run, calls)


@mutant("GATE-004")
class PlanHoldsDataSources(Kernel):
    """The plan handed to plan-ready also lists the turn's data-source calls."""

    async def _execute_data_sources(self, run: Any, calls: list[Any]) -> None:
        self._data_calls = calls
        await super()._execute_data_sources(run, calls)

    def _build_plan(self, resources: list[Any]) -> dict[str, Any]:  # type: ignore[override]
        return Kernel._build_plan(list(getattr(self, "_data_calls", [])) + resources)


@mutant("GATE-005", also_expected=("GATE-006",))
class ResourcesRunBeforePlanReady(Kernel):
    """Resource calls run as soon as the plan is built, before the plan-ready chain."""

    def _build_plan(self, resources: list[Any]) -> dict[str, Any]:  # type: ignore[override]
        self._resources = resources
        return Kernel._build_plan(resources)

    async def _plan_ready(self, run: Any, plan: dict[str, Any]) -> dict[str, Any]:
        await self._run_keyed(run, self._resources)
        return await super()._plan_ready(run, plan)

    async def _apply_plan(self, run: Any, plan: dict[str, Any], resources: list[Any]) -> None:
        return None


@mutant("GATE-006")
class VetoIgnored(Kernel):
    """A vetoed plan item is applied anyway."""

    async def _apply_plan(self, run: Any, plan: dict[str, Any], resources: list[Any]) -> None:
        await self._run_keyed(run, resources)


@mutant("TOOL-003", profile="kernel")
class ResultsInFinishingOrder(Kernel):
    """Tool results go back in the order the calls finished."""

    async def _execute(self, c: Any, ctx: Any, parent_span: str | None) -> None:
        await super()._execute(c, ctx, parent_span)
        self.__dict__.setdefault("_finished", []).append(id(c))

    def _order_results(self, calls: list[Any]) -> list[Any]:
        done = self.__dict__.get("_finished", [])
        return sorted(calls, key=lambda c: done.index(id(c)) if id(c) in done else -1)


@mutant("DONE-001")
class WaitsForTerminalTool(Kernel):
    """With a terminal tool registered, a plain answer is not final: the model is asked once more."""

    def _done_check(self, tool_calls: list[dict[str, Any]]) -> bool:  # type: ignore[override]
        if tool_calls or not any(e.spec.terminates_turn for e in self._tools.values()):
            return not tool_calls
        self._asked = getattr(self, "_asked", 0) + 1
        return self._asked > 1


@mutant("DONE-002")
class TerminalToolIgnored(Kernel):
    """terminates_turn is ignored: the loop goes on after a terminal tool."""

    async def _post_tool_calls(self, run: Any, calls: list[Any]) -> bool:
        await super()._post_tool_calls(run, calls)
        return False


@mutant("DONE-003")
class TerminalEndsBeforeItsPostToolCall(Kernel):
    """A terminal tool ends the turn before its own post-tool-call is dispatched."""

    async def _post_tool_calls(self, run: Any, calls: list[Any]) -> bool:
        for c in calls:
            if c.entry is not None and c.entry.spec.terminates_turn:
                return True
            await self._dispatch(
                "post-tool-call", {"call": c.call, "result": {"content": c.content, "is_error": c.is_error}}, run.turn, run.turn_span
            )
        return False


@mutant("DONE-004")
class TerminalOnlyWhenAlone(Kernel):
    """A terminal tool ends the loop only when it was the only call of the message."""

    async def _post_tool_calls(self, run: Any, calls: list[Any]) -> bool:
        return await super()._post_tool_calls(run, calls) and len(calls) == 1


# ---------------------------------------------------------------- the blind round's survivors


@mutant("CONC-005", also_expected=("CONC-001",))
class KeyFirstFieldOnly(Kernel):
    """Blind round survivor k_key_first_field_only: the concurrency key uses the first key field
    only, so calls differing only in a later key field run one after the other. No scenario had a
    ConcurrencySpec with two key_fields."""

    def _tool_key(self, c: Any) -> Any:
        spec = c.entry.spec
        if spec.concurrency is not None and spec.concurrency.safe and len(spec.concurrency.key_fields) > 1:
            declared = spec.concurrency.model_copy(update={"key_fields": spec.concurrency.key_fields[:1]})
            return concurrency_key(spec.provider, spec.name, spec.kind, declared, c.args, c.id)
        return super()._tool_key(c)


@mutant("DONE-001")
class EmptyAnswerNotDone(Kernel):
    """Blind round survivor k_empty_text_not_done: a response with no tool calls and empty text
    does not end the loop (the kernel asks again). No scenario had an empty final answer."""

    async def _post_model_response(self, run: Any, message: dict[str, Any]) -> dict[str, Any]:
        message = await super()._post_model_response(run, message)
        self.__dict__["_text"] = message.get("text")
        return message

    def _done_check(self, tool_calls: list[dict[str, Any]]) -> bool:  # type: ignore[override]
        return not tool_calls and bool(self.__dict__.get("_text"))


@mutant("CONC-008", profile="kernel")
class InteractiveSpecHonoured(ReferenceAdapter):
    """Accepts a ConcurrencySpec declared on an interactive tool and schedules its calls by it (as a
    data source), so two interactive calls run at once. Refusing the declaration or ignoring it are
    both legal (reading interactive-concurrency-spec); honouring it is not."""

    async def run(self, scenario: Any, doubles: Any) -> Any:
        scenario = scenario.model_copy(deep=True)
        for tool in scenario.tools:
            if tool.kind == "interactive" and tool.concurrency is not None:
                tool.kind = "data_source"
        return await super().run(scenario, doubles)


@mutant("DONE-001")
class NoImplicitDoneWithTerminalTool(Kernel):
    """With a terminal tool registered, implicit done detection is off: plain answers never end the
    loop, the model is asked again until its script runs out (issue 21: this was reported
    incomplete, not fail)."""

    def _done_check(self, tool_calls: list[dict[str, Any]]) -> bool:  # type: ignore[override]
        if any(e.spec.terminates_turn for e in self._tools.values()):
            return False
        return not tool_calls


# ---------------------------------------------------------------- several of a kind (issue 21)


@mutant("CONC-001")
class KeyWithoutToolName(Kernel):
    """The concurrency key of a safe operation is (provider, key-field values), without the tool:
    two tools of one provider called with equal key values run one after the other."""

    def _tool_key(self, c: Any) -> Any:
        key = super()._tool_key(c)
        return (key[0], key[1], *key[3:]) if key[0] == "key" else key


@mutant("CONC-006")
class UndeclaredDataSourcesShareOneLock(Kernel):
    """Every undeclared data-source operation, whatever its provider, gets one and the same lock."""

    def _tool_key(self, c: Any) -> Any:
        spec = c.entry.spec
        if spec.concurrency is None and spec.kind == "data_source":
            return ("undeclared-data-source",)
        return super()._tool_key(c)


@mutant("GATE-001")
class PrecheckOncePerIdenticalCall(Kernel):
    """The policy precheck is asked once per distinct (tool, arguments): identical calls of one
    response share the first one's decision."""

    async def _policy_precheck(self, run: Any, calls: list[Any]) -> list[Any]:
        seen: dict[str, bool] = {}
        allowed = []
        for c in calls:
            key = f"{c.name}:{json.dumps(c.args, sort_keys=True)}"
            if key not in seen:
                seen[key] = bool(await super()._policy_precheck(run, [c]))
            if seen[key]:
                allowed.append(c)
            else:
                c.fail("Denied by policy: denied")
        return allowed


@mutant("GATE-004")
class PlanMergesIdenticalCalls(Kernel):
    """Identical resource calls of one response become one plan item (the first); the others
    are applied without ever being in the plan."""

    @staticmethod
    def _build_plan(resources: list[Any]) -> dict[str, Any]:
        plan = Kernel._build_plan(resources)
        seen: set[str] = set()
        items = []
        for item in plan["items"]:
            key = f"{item['name']}:{json.dumps(item['args'], sort_keys=True)}"
            if key not in seen:
                seen.add(key)
                items.append(item)
        return {"items": items}

    async def _apply_plan(self, run: Any, plan: dict[str, Any], resources: list[Any]) -> None:
        planned = {i["call_id"] for i in plan.get("items", [])}
        await super()._apply_plan(run, plan, [c for c in resources if c.id in planned])
        unplanned = [c for c in resources if c.id not in planned]
        await self._run_keyed(run, unplanned)
