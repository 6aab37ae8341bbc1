"""Mutants of 003's bounds and limit-reached path (BOUND-*), cost roll-up (COST-*) and doom loop (DOOM-*)."""

from __future__ import annotations

import copy
import math
from typing import Any

from conformance.boundary.adapter import Doubles, RunResult
from conformance.boundary.scenario import Scenario
from conformance.selftest.registry import mutant
from reference_kernel.adapter import ReferenceAdapter
from reference_kernel.cost import CostLedger
from reference_kernel.kernel import DOOM_LOOP, MAX_BUDGET, MAX_TURNS, MAX_WALL_CLOCK, Kernel

# ------------------------------------------------------------------ when bounds are checked


@mutant("BOUND-001")
class BoundSkipsPostApply(Kernel):
    """The turn that reaches a bound skips its post-apply (bound checked too early)."""

    async def _post_apply(self, run: Any, plan: dict[str, Any]) -> None:
        run.turns_used += 1
        try:
            reached = self._check_bounds(run)
        finally:
            run.turns_used -= 1
        if reached is None:
            await super()._post_apply(run, plan)


@mutant("BOUND-002")
class MaxTurnsOffByOne(Kernel):
    """max_turns fires one turn late (> instead of >=)."""

    def _check_bounds(self, run: Any) -> str | None:
        limit = super()._check_bounds(run)
        if limit == MAX_TURNS and run.turns_used == run.bounds.max_turns:
            return None
        return limit


@mutant("BOUND-002")
class TurnCountRestartsAfterPause(Kernel):
    """The turn count starts again after a turn's calls wait on the plan gate or the approver, as a
    loop whose bound is per resumed run does (issue 22: three frameworks' did)."""

    async def _plan_ready(self, run: Any, plan: dict[str, Any]) -> dict[str, Any]:
        if plan["items"]:
            run.turns_used = 0
        return await super()._plan_ready(run, plan)

    async def _execute_interactive(self, run: Any, calls: Any) -> None:
        if calls:
            run.turns_used = 0
        await super()._execute_interactive(run, calls)


@mutant("BOUND-003")
class MaxTurnsNeedsCostBound(Kernel):
    """max_turns is honoured only when max_cost_usd is configured too."""

    def _check_bounds(self, run: Any) -> str | None:
        limit = super()._check_bounds(run)
        return None if limit == MAX_TURNS and run.bounds.max_cost_usd is None else limit


@mutant("BOUND-006")
class CostBoundOnlyWithTurns(Kernel):
    """The cost and wall-clock dimensions are checked only when max_turns is set."""

    def _check_bounds(self, run: Any) -> str | None:
        limit = super()._check_bounds(run)
        return None if limit in (MAX_BUDGET, MAX_WALL_CLOCK) and run.bounds.max_turns is None else limit


# ------------------------------------------------------------------ the limit-reached path


@mutant("BOUND-007")
class WallClockEndsAtOnce(Kernel):
    """max_wall_clock_s ends the session at once, without the final tool-less turn."""

    async def _final_turn(self, run: Any, limit: str) -> None:
        if limit == MAX_WALL_CLOCK:
            self._end(run, "limit_reached", limit)
            return
        await super()._final_turn(run, limit)


class LimitExceeded(Exception):
    pass


@mutant("BOUND-008")
class LimitRaises(Kernel):
    """A fired bound raises out of run_session instead of reporting an outcome."""

    async def run_session(self, *args: Any, **kwargs: Any) -> Any:
        result = await super().run_session(*args, **kwargs)
        if result.subtype in (MAX_TURNS, MAX_BUDGET, MAX_WALL_CLOCK):
            raise LimitExceeded(f"limit reached: {result.subtype}")
        return result


@mutant("BOUND-009")
class TwoFinalCalls(Kernel):
    """Two tool-less final turns after a bound."""

    async def _final_turn(self, run: Any, limit: str) -> None:
        await self._run_turn(run, limit)
        await super()._final_turn(run, limit)


@mutant("BOUND-010")
class FinalCallSendsToolSpecs(Kernel):
    """The final request still offers the tool specs."""

    def _build_request(self, run: Any, out: Any, limit: str | None) -> dict[str, Any]:
        request = super()._build_request(run, out, limit)
        if limit is not None:
            request["tools"] = list(self._model_tools)
        return request


@mutant("BOUND-011")
class NoSyntheticInstruction(Kernel):
    """The final request has no tools but no instruction either."""

    def _build_request(self, run: Any, out: Any, limit: str | None) -> dict[str, Any]:
        request = super()._build_request(run, out, None)
        if limit is not None:
            request["tools"] = []
        return request


@mutant("BOUND-012")
class FinalTurnRunsTools(Kernel):
    """The final turn withholds the tools but still runs the tool calls of its answer."""

    async def _final_turn(self, run: Any, limit: str) -> None:
        self._final_limit = limit
        try:
            await self._run_turn(run, None)
        finally:
            self._final_limit = None
        self._end(run, "limit_reached", limit)

    async def _pre_model_call(self, run: Any, payload: Any, limit: str | None) -> dict[str, Any]:
        return await super()._pre_model_call(run, payload, limit or getattr(self, "_final_limit", None))


@mutant("BOUND-013")
class WrongMaxTurnsSubtype(Kernel):
    """max_turns reports error_max_iterations."""

    def _check_bounds(self, run: Any) -> str | None:
        limit = super()._check_bounds(run)
        return "error_max_iterations" if limit == MAX_TURNS else limit


@mutant("BOUND-014")
class WrongBudgetSubtype(Kernel):
    """max_cost_usd reports error_max_cost."""

    def _check_bounds(self, run: Any) -> str | None:
        limit = super()._check_bounds(run)
        return "error_max_cost" if limit == MAX_BUDGET else limit


@mutant("BOUND-015")
class WrongWallClockSubtype(Kernel):
    """max_wall_clock_s reports error_timeout."""

    def _check_bounds(self, run: Any) -> str | None:
        limit = super()._check_bounds(run)
        return "error_timeout" if limit == MAX_WALL_CLOCK else limit


@mutant("BOUND-017")
class SoftByDefault(Kernel):
    """Soft mode is on even when the session did not ask for it."""

    async def _final_turn(self, run: Any, limit: str) -> None:
        run.bounds = run.bounds.model_copy(update={"soft": True})
        await super()._final_turn(run, limit)


# ------------------------------------------------------------------ cost


@mutant("COST-001")
class CostAtSessionEnd(Kernel):
    """Usage is summed and costed once at session end instead of per event."""

    async def _on_usage(self, turn: Any, chunk: dict[str, Any], ledger_key: str | None) -> dict[str, Any]:
        pending = self.__dict__.setdefault("_pending", {}).setdefault(turn.turn_id, {})
        for k in ("input_tokens", "output_tokens", "cached_input_tokens"):
            pending[k] = pending.get(k, 0) + int(chunk.get(k) or 0)
        return dict(pending)

    async def _finish_run(self, run: Any) -> None:
        pending = self.__dict__.get("_pending", {}).pop(run.turn.turn_id, None)
        if pending:
            await super()._on_usage(run.turn, {"type": "usage", **pending}, run.ledger_key)
        await super()._finish_run(run)


@mutant("COST-001")
class CachedTokensAtInputPrice(Kernel):
    """Cached input tokens are charged at the full input price."""

    async def _on_usage(self, turn: Any, chunk: dict[str, Any], ledger_key: str | None) -> dict[str, Any]:
        cached = int(chunk.get("cached_input_tokens") or 0)
        out = await super()._on_usage(turn, {**chunk, "input_tokens": int(chunk.get("input_tokens") or 0) + cached, "cached_input_tokens": 0}, ledger_key)
        self.usage[-1] = self.usage[-1].model_copy(update={"input_tokens": out["input_tokens"] - cached, "cached_input_tokens": cached})
        return out


@mutant("COST-003")
class BudgetPerEvent(Kernel):
    """The cost bound compares each event's cost with max_cost_usd, not the running sum."""

    def _check_bounds(self, run: Any) -> str | None:
        limit = super()._check_bounds(run)
        if limit != MAX_BUDGET:
            return limit
        last = next((e.cost_usd for e in reversed(self.usage) if e.turn_id == run.turn.turn_id), 0.0)
        return limit if last >= (run.bounds.max_cost_usd or math.inf) else None


@mutant("COST-004")
class BudgetStrictlyAbove(Kernel):
    """The cost bound fires only once the sum is above max_cost_usd, not equal to it."""

    def _check_bounds(self, run: Any) -> str | None:
        limit = super()._check_bounds(run)
        if limit == MAX_BUDGET and self.ledger.remaining(run.ledger_key) == 0:
            return None
        return limit


class _RootlessLedger(CostLedger):
    def open_session(self, session_id: str, parent_id: str | None = None, max_cost_usd: float | None = None) -> None:
        super().open_session(session_id, None, max_cost_usd)


@mutant("COST-005", also_expected=("COST-006", "COST-007"))
class ChildCostNotRolledUp(Kernel):
    """A sub-agent's ledger is a root of its own: its spend never reaches the parent."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.ledger = _RootlessLedger()


class _OwnBudgetLedger(CostLedger):
    def open_session(self, session_id: str, parent_id: str | None = None, max_cost_usd: float | None = None) -> None:
        super().open_session(session_id, parent_id, max_cost_usd)
        if parent_id is not None and max_cost_usd is not None:
            self._nodes[session_id].remaining = float(max_cost_usd)


@mutant("COST-006")
class ChildBudgetIsItsOwn(Kernel):
    """A child's budget is its own max_cost_usd, not min(parent's remaining, own)."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.ledger = _OwnBudgetLedger()


class _OneLevelLedger(CostLedger):
    def charge(self, session_id: str, cost_usd: float) -> list[str]:
        node = self._nodes[session_id]
        for key in (session_id, node.parent):
            if key is not None:
                self._nodes[key].remaining -= cost_usd
                self._nodes[key].spent += cost_usd
        return []


@mutant("COST-007")
class ChargesParentOnly(Kernel):
    """A charge is subtracted at the spender and its parent, not all the way to the root."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.ledger = _OneLevelLedger()


class _SelfAndRootLedger(CostLedger):
    def charge(self, session_id: str, cost_usd: float) -> list[str]:
        root = session_id
        while self._nodes[root].parent is not None:
            root = self._nodes[root].parent  # type: ignore[assignment]
        for key in {session_id, root}:
            self._nodes[key].remaining -= cost_usd
            self._nodes[key].spent += cost_usd
        return []


@mutant("COST-007", also_expected=("COST-005", "COST-006"))
class ChargesSelfAndRoot(Kernel):
    """A charge is subtracted at the spender and at the root, skipping the sessions between
    (``self.cost += c; root.cost += c``). The old COST-007 check (a grandchild's spend against the
    root's bound) let it through; the middle session's own bound now catches it."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.ledger = _SelfAndRootLedger()


@mutant("COST-001", also_expected=("COST-002", "COST-005", "COST-006", "COST-007"))
class UsageLastChunkOnly(Kernel):
    """Blind round (k_usage_last_chunk_only): only the last usage chunk of a model call is costed
    and persisted (``usage = chunk`` in the accumulate loop). Every scenario streamed one usage
    chunk per call, so no check saw it; several usage events per call now do."""

    async def _on_usage(self, turn: Any, chunk: dict[str, Any], ledger_key: str | None) -> dict[str, Any]:
        self.__dict__.setdefault("_last_usage", {})[turn.turn_id] = chunk
        return {}

    async def _accumulate(self, turn: Any, request: dict[str, Any], ledger_key: str | None) -> Any:
        message, usage, bad = await super()._accumulate(turn, request, ledger_key)
        chunk = self.__dict__.get("_last_usage", {}).pop(turn.turn_id, None)
        if chunk is not None:
            usage = await Kernel._on_usage(self, turn, chunk, ledger_key)
        return message, usage, bad


@mutant("COST-002")
class UsageCostedAtStreamEnd(Kernel):
    """Usage chunks are buffered and costed, persisted and charged once the stream has ended, not
    at receipt: a call cancelled (or failing) after its first usage chunk loses it. COST-002 was
    untestable; the cancel and failure scenarios now see it."""

    async def _on_usage(self, turn: Any, chunk: dict[str, Any], ledger_key: str | None) -> dict[str, Any]:
        self.__dict__.setdefault("_buffered", {}).setdefault(turn.turn_id, []).append(chunk)
        return {}

    async def _accumulate(self, turn: Any, request: dict[str, Any], ledger_key: str | None) -> Any:
        self.__dict__.setdefault("_buffered", {})[turn.turn_id] = []
        message, usage, bad = await super()._accumulate(turn, request, ledger_key)
        for chunk in self.__dict__["_buffered"].pop(turn.turn_id, []):
            usage = await Kernel._on_usage(self, turn, chunk, ledger_key)
        return message, usage, bad


class _UncostedJournal:
    """Wraps a journal: usage events are stored with cost_usd 0 (the cost lives in memory only)."""

    def __init__(self, inner: Any) -> None:
        self._inner = inner

    async def record_usage(self, turn: Any, event: Any) -> None:
        await self._inner.record_usage(turn, event.model_copy(update={"cost_usd": 0.0}))

    def __getattr__(self, name: str) -> Any:
        return getattr(self._inner, name)


@mutant("COST-001", also_expected=("COST-002",))
class CostNotPersisted(Kernel):
    """cost_usd is computed and reported from memory but the journal stores each usage event
    uncosted (003: "compute and persist cost_usd"). The old COST-001 check read RunResult.usage,
    the kernel's memory, and let it through; it now reads the journal."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.journal = _UncostedJournal(self.journal)


@mutant("BOUND-006", also_expected=("BOUND-005", "BOUND-007"))
class WallClockStrict(Kernel):
    """Blind round (k_wall_clock_strict): max_wall_clock_s fires only once the elapsed time is
    above the limit, so a run that has lasted exactly the limit goes on ("hitting any one of the
    three MUST terminate"). No scenario had the elapsed time equal to the limit at step 17. Blamed
    on BOUND-006 (gating: any one dimension reaching its limit fires); BOUND-005 is the SHOULD."""

    def _check_bounds(self, run: Any) -> str | None:
        limit = super()._check_bounds(run)
        b = run.bounds
        if limit == MAX_WALL_CLOCK and b.max_wall_clock_s is not None and self.clock() - run.started <= b.max_wall_clock_s:
            return None
        return limit


@mutant("BOUND-011", also_expected=("BOUND-007", "DOOM-009"))
class LimitInstructionInHistory(Kernel):
    """Blind round (k_limit_instruction_in_history): the limit-reached instruction is appended to
    the session's history and stored, like a user message. BOUND-011 looked at the final request
    only; it now requires that the instruction is never stored and never comes back later."""

    async def _final_turn(self, run: Any, limit: str) -> None:
        await self._append(run, {"role": "user", "text": self._limit_instruction(limit)})
        await super()._final_turn(run, limit)

    def _build_request(self, run: Any, out: Any, limit: str | None) -> dict[str, Any]:
        request = super()._build_request(run, out, None)
        if limit is not None:
            request["tools"] = []
        return request


@mutant("BOUND-011", also_expected=("BOUND-007", "DOOM-009"))
class LimitChurnNoInstruction(Kernel):
    """No limit-reached instruction at all, but a volatile prompt tier: the system text carries the
    current time and changes on every request. The old check took any text the previous request
    did not hold for the instruction and let it through; the new one wants new words beyond the
    earlier requests' churn."""

    def _system_messages(self) -> list[dict[str, Any]]:
        n = self.__dict__["_requests"] = self.__dict__.get("_requests", 0) + 1
        base = self.profile.system_prompt or ""
        return [{"role": "system", "text": f"{base}\nCurrent time: 2026-11-30T10:{n:02d}:00Z"}]

    def _build_request(self, run: Any, out: Any, limit: str | None) -> dict[str, Any]:
        request = super()._build_request(run, out, None)
        messages = [m for m in request["messages"] if m.get("role") != "system"]
        request["messages"] = self._system_messages() + messages
        if limit is not None:
            request["tools"] = []
        return request


# ------------------------------------------------------------------ doom loop


@mutant("DOOM-001", also_expected=("DOOM-003", "DOOM-004", "DOOM-005", "DOOM-006", "DOOM-008", "DOOM-009", "DOOM-010"))
class NoDoomDetector(Kernel):
    """No doom-loop detection at all."""

    def _check_doom(self, run: Any, calls: list[Any]) -> str | None:
        return None


class _DefaultThreshold(ReferenceAdapter):
    threshold = 6

    async def run(self, scenario: Scenario, doubles: Doubles) -> RunResult:
        if scenario.doom_loop.threshold is None:
            doom = scenario.doom_loop.model_copy(update={"threshold": self.threshold})
            scenario = scenario.model_copy(update={"doom_loop": doom})
        return await super().run(scenario, doubles)


@mutant("DOOM-003", profile="kernel")
class DefaultThresholdSix(_DefaultThreshold):
    """The default threshold is 6 (003 asks for 3 to 5)."""


@mutant("DOOM-003", profile="kernel")
class DefaultThresholdTwo(_DefaultThreshold):
    """The default threshold is 2."""

    threshold = 2


@mutant("DOOM-004")
class DoomThresholdPlusOne(Kernel):
    """The detector fires at threshold + 1 identical calls."""

    def __init__(self, profile: Any, *args: Any, **kwargs: Any) -> None:
        doom = profile.doom_loop
        doom = doom.model_copy(update={"threshold": doom.threshold + 1, "window_size": max(doom.window, doom.threshold + 1)})
        super().__init__(profile.model_copy(update={"doom_loop": doom}), *args, **kwargs)


@mutant("DOOM-005")
class DoomSkipsPostApply(Kernel):
    """The turn holding the threshold-th identical call skips its post-apply."""

    async def _post_tool_calls(self, run: Any, calls: list[Any]) -> bool:
        self._calls = calls
        return await super()._post_tool_calls(run, calls)

    async def _post_apply(self, run: Any, plan: dict[str, Any]) -> None:
        probe = copy.copy(run)
        probe.doom = copy.deepcopy(run.doom)
        if Kernel._check_doom(self, probe, self._calls) is None:
            await super()._post_apply(run, plan)


@mutant("DOOM-006")
class DoomHashKeyOrder(Kernel):
    """Calls are hashed from the arguments as given, so key order makes them different."""

    def _check_doom(self, run: Any, calls: list[Any]) -> str | None:
        for c in calls:
            if c.entry is not None and c.entry.spec.kind != "interactive":
                run.doom.record(c.name, repr(c.raw if c.raw is not None else c.call.get("args")))
        return DOOM_LOOP if run.doom.fired() else None


@mutant("DOOM-007")
class DoomCountsNonConsecutive(Kernel):
    """The detector counts repeats anywhere in the session, not in a row."""

    def _check_doom(self, run: Any, calls: list[Any]) -> str | None:
        seen = self.__dict__.setdefault("_seen", {}).setdefault(run.turn.turn_id, [])
        for c in calls:
            if c.entry is not None and c.entry.spec.kind != "interactive":
                seen.append((c.name, repr(sorted((c.call.get("args") or {}).items()))))
        return DOOM_LOOP if seen and seen.count(seen[-1]) >= run.doom.threshold else None


@mutant("DOOM-008")
class DoomCountsInteractive(Kernel):
    """Interactive calls are compared too."""

    def _check_doom(self, run: Any, calls: list[Any]) -> str | None:
        for c in calls:
            if c.entry is not None:
                run.doom.record(c.name, c.raw if c.raw is not None else c.call.get("args"))
        return DOOM_LOOP if run.doom.fired() else None


@mutant("DOOM-009")
class DoomEndsAtOnce(Kernel):
    """A fired detector ends the session at once, without the final tool-less turn."""

    async def _final_turn(self, run: Any, limit: str) -> None:
        if limit == DOOM_LOOP:
            self._end(run, "limit_reached", limit)
            return
        await super()._final_turn(run, limit)


@mutant("DOOM-009")
class DoomWrongSubtype(Kernel):
    """A fired detector reports another subtype than the one the adapter declares."""

    def _check_doom(self, run: Any, calls: list[Any]) -> str | None:
        return "error_loop" if super()._check_doom(run, calls) else None


class DoomLoop(Exception):
    pass


@mutant("DOOM-010")
class DoomRaises(Kernel):
    """A fired detector raises out of run_session."""

    async def run_session(self, *args: Any, **kwargs: Any) -> Any:
        result = await super().run_session(*args, **kwargs)
        if result.subtype == DOOM_LOOP:
            raise DoomLoop("doom loop detected")
        return result



# ------------------------------------------------------------------ doom loop: several of a kind (issue 21)


def _doom_candidates(calls: list[Any]) -> list[Any]:
    return [c for c in calls if c.entry is not None and c.entry.spec.kind != "interactive"]


def _record(run: Any, call: Any) -> None:
    run.doom.record(call.name, call.raw if call.raw is not None else call.call.get("args"))


@mutant("DOOM-004")
class DoomOneHashPerTurn(Kernel):
    """The detector records one call per turn (the first), so identical calls of one response count once."""

    def _check_doom(self, run: Any, calls: list[Any]) -> str | None:
        for c in _doom_candidates(calls)[:1]:
            _record(run, c)
        return DOOM_LOOP if run.doom.fired() else None


@mutant("DOOM-007", also_expected=("DOOM-004",))
class DoomHashesLastCallOfTurn(Kernel):
    """The detector records the last call of each turn only: a breaker earlier in a response is missed."""

    def _check_doom(self, run: Any, calls: list[Any]) -> str | None:
        for c in _doom_candidates(calls)[-1:]:
            _record(run, c)
        return DOOM_LOOP if run.doom.fired() else None


@mutant("DOOM-008")
class DoomInteractiveBreaksRun(Kernel):
    """An interactive call clears the detector's window (003's window counts resource/data-source calls only)."""

    def _check_doom(self, run: Any, calls: list[Any]) -> str | None:
        for c in calls:
            if c.entry is not None and c.entry.spec.kind == "interactive":
                run.doom.reset()
            elif c.entry is not None:
                _record(run, c)
        return DOOM_LOOP if run.doom.fired() else None


# ------------------------------------------------------------------ bounds: several of a kind (issue 21)


@mutant("BOUND-002")
class MaxTurnsCountsToolCalls(Kernel):
    """max_turns is compared with the number of tool calls run so far, not the turns."""

    async def _post_tool_calls(self, run: Any, calls: list[Any]) -> bool:
        self.__dict__["_calls_run"] = self.__dict__.get("_calls_run", 0) + len(calls)
        return await super()._post_tool_calls(run, calls)

    def _check_bounds(self, run: Any) -> str | None:
        turns = run.turns_used
        run.turns_used = max(turns, self.__dict__.get("_calls_run", 0))
        try:
            return super()._check_bounds(run)
        finally:
            run.turns_used = turns


@mutant("BOUND-017")
class CostBoundSoftByDefault(Kernel):
    """Soft mode is the default for max_cost_usd (max_turns stays hard unless asked)."""

    async def _final_turn(self, run: Any, limit: str) -> None:
        if limit == MAX_BUDGET:
            run.bounds = run.bounds.model_copy(update={"soft": True})
        await super()._final_turn(run, limit)



@mutant("COST-003")
class RunningSumOfLastEventPerCall(Kernel):
    """Every usage event is costed and persisted, but the running sum adds only the last event of
    each model call (issue 21, several usage events of a kind)."""

    async def _on_usage(self, turn: Any, chunk: dict[str, Any], ledger_key: str | None) -> dict[str, Any]:
        out = await super()._on_usage(turn, chunk, None)
        self.__dict__.setdefault("_last_cost", {})[turn.turn_id] = (ledger_key, out["cost_usd"])
        return out

    async def _accumulate(self, turn: Any, request: dict[str, Any], ledger_key: str | None) -> Any:
        result = await super()._accumulate(turn, request, ledger_key)
        key, cost = self.__dict__.get("_last_cost", {}).pop(turn.turn_id, (None, 0.0))
        if key is not None:
            self.ledger.charge(key, cost)
        return result
