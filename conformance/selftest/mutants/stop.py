"""Mutants of cancellation (STOP-*), on both faces: the same slip made by the kernel and by the agent."""

from __future__ import annotations

from typing import Any

import anyio

from conformance.selftest.mutants._util import Uncancelled
from conformance.selftest.registry import mutant
from reference_kernel.agent import CommonAgent
from reference_kernel.cancel import CancellationToken, Cancelled
from reference_kernel.kernel import Kernel


class _Tap:
    """A model provider that remembers the text chunks of the stream in flight."""

    def __init__(self, inner: Any, seen: list[str]) -> None:
        self._inner, self._seen = inner, seen
        self.accepts_turn = getattr(inner, "accepts_turn", False)

    async def _tap(self, stream: Any) -> Any:
        self._seen.clear()
        async for chunk in stream:
            if chunk.get("type") == "text":
                self._seen.append(chunk.get("text") or "")
            yield chunk

    def stream(self, *args: Any) -> Any:
        return self._tap(self._inner.stream(*args))


class _StoresPartial:
    """Mixin: keep what a cancelled model call had streamed, as an assistant message."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)  # type: ignore[call-arg]
        self._partial: list[str] = []
        self.provider = _Tap(self.provider, self._partial)  # type: ignore[has-type]

    async def _call_model(self, turn: Any, request: Any, token: Any, parent_span: Any, ledger_key: Any) -> Any:
        try:
            return await super()._call_model(turn, request, token, parent_span, ledger_key)  # type: ignore[misc]
        except Cancelled:
            if self._partial:
                await self.journal.append_message(turn, {"role": "assistant", "text": "".join(self._partial)})  # type: ignore[attr-defined]
            raise


class _StoresHusk:
    """Mixin: a cancelled model call leaves an empty assistant message (none of its text)."""

    async def _call_model(self, turn: Any, request: Any, token: Any, parent_span: Any, ledger_key: Any) -> Any:
        try:
            return await super()._call_model(turn, request, token, parent_span, ledger_key)  # type: ignore[misc]
        except Cancelled:
            with anyio.CancelScope(shield=True):
                await self.journal.append_message(turn, {"role": "assistant", "text": ""})  # type: ignore[attr-defined]
            raise


class _WaitsForStream:
    """Mixin: the model stream is read to its end even after a cancel."""

    async def _accumulate(self, turn: Any, request: Any, ledger_key: Any) -> Any:
        with anyio.CancelScope(shield=True):
            return await super()._accumulate(turn, request, ledger_key)  # type: ignore[misc]


# ------------------------------------------------------------------ kernel face


@mutant("STOP-001", profile="kernel")
class KernelInteractiveIgnoresCancel(Kernel):
    """Interactive calls go on one after the other after a cancel."""

    async def _execute_interactive(self, run: Any, calls: list[Any]) -> None:
        for c in await self._policy_precheck(run, calls) if calls else []:
            await self._execute(c, Uncancelled(run), run.turn_span)
        run.token.check()


@mutant("STOP-002", profile="kernel")
class KernelWaitsForStream(_WaitsForStream, Kernel):
    """A cancelled model call is read to its end."""


@mutant("STOP-003", profile="kernel")
class KernelStoresPartialOutput(_StoresPartial, Kernel):
    """A cancelled model call's partial text is stored."""


@mutant("STOP-003", profile="kernel")
class KernelStoresEmptyMessage(_StoresHusk, Kernel):
    """A cancelled model call leaves an empty assistant message in the journal."""


@mutant("STOP-006", profile="kernel")
class KernelChildNotCancelled(Kernel):
    """A sub-agent runs on its own token, shielded from its parent's cancel."""

    async def _run(self, turn: Any, text: str, token: Any, bounds: Any, parent_ledger: Any, parent_span: Any) -> Any:
        if parent_ledger is None:
            return await super()._run(turn, text, token, bounds, parent_ledger, parent_span)
        with anyio.CancelScope(shield=True):
            return await super()._run(turn, text, CancellationToken(), bounds, parent_ledger, parent_span)


# ------------------------------------------------------------------ agent face


@mutant("STOP-001", profile="commonagent")
class AgentToolsIgnoreCancel(CommonAgent):
    """One-at-a-time tool calls go on after a cancel (the token is looked at only after the last)."""

    async def _tool_calls(self, t: Any, tool_calls: list[dict[str, Any]], span: str, bad: dict[str, str]) -> list[Any]:
        calls = [self._prepare(i, call, bad, check_schema=False) for i, call in enumerate(tool_calls)]
        if not self._sequential(calls):
            return await super()._tool_calls(t, tool_calls, span, bad)
        for c in calls:
            if await self._decide(t, c, span):
                await self._execute(c, Uncancelled(t), span)
            await self._after(t, c, span)
        t.token.check()
        return calls


@mutant("STOP-002", profile="commonagent")
class AgentWaitsForStream(_WaitsForStream, CommonAgent):
    """A cancelled model call is read to its end."""


@mutant("STOP-003", profile="commonagent")
class AgentStoresPartialOutput(_StoresPartial, CommonAgent):
    """A cancelled model call's partial text is stored."""


@mutant("STOP-003", profile="commonagent")
class AgentStoresEmptyMessage(_StoresHusk, CommonAgent):
    """A cancelled model call leaves an empty assistant message in the journal."""


@mutant("STOP-004")
class CancelledStatus(CommonAgent):
    """A cancelled turn ends with status cancelled instead of interrupted."""

    async def _finish_turn(self, t: Any) -> None:
        if t.status == "interrupted":
            t.status = "cancelled"
        await super()._finish_turn(t)


@mutant("STOP-005")
class LoopStoppedAfterSessionEnd(CommonAgent):
    """agent_loop_stopped fires after on_session_end."""

    async def _finish(self, t: Any) -> None:
        if t.status == "interrupted":
            await self._finish_turn(t)
            await self._dispatch("on_session_end", {"session_id": t.turn.session_id, "status": t.status}, t.turn, t.span)
            await self._dispatch("agent_loop_stopped", {"reason": "cancelled"}, t.turn, t.span)
            return
        await super()._finish(t)


@mutant("STOP-006", profile="commonagent")
class AgentChildNotCancelled(CommonAgent):
    """A sub-agent runs on its own token, shielded from its parent's cancel."""

    async def _turn(self, turn: Any, text: str, token: Any, is_new: bool, parent_span: str | None = None) -> Any:
        if turn.depth == 0:
            return await super()._turn(turn, text, token, is_new, parent_span)
        with anyio.CancelScope(shield=True):
            return await super()._turn(turn, text, CancellationToken(), is_new, parent_span)


class _DeafInToolSteps:
    """The run's token, but its ``check`` says nothing from step 9 until step 13 (a kernel that
    looks at the token around its model call and after its tools only)."""

    def __init__(self, real: CancellationToken, kernel: Kernel) -> None:
        self._real, self._kernel = real, kernel

    def check(self) -> None:
        if not self._kernel.__dict__.get("_in_tool_steps"):
            self._real.check()

    def __getattr__(self, name: str) -> Any:
        return getattr(self._real, name)


@mutant("STOP-001", profile="kernel")
class KernelAppliesResourcesAfterCancel(Kernel):
    """A cancel arriving while data-source or interactive calls run is looked at only at step 13:
    the turn's resource calls are still applied (issue 21)."""

    async def _run_turn(self, run: Any, limit: str | None = None) -> Any:
        real = run.token
        run.token = _DeafInToolSteps(real, self)
        try:
            return await super()._run_turn(run, limit)
        finally:
            run.token = real

    async def _execute_data_sources(self, run: Any, calls: list[Any]) -> None:
        self.__dict__["_in_tool_steps"] = True
        await super()._execute_data_sources(run, calls)

    async def _apply_plan(self, run: Any, plan: dict[str, Any], resources: list[Any]) -> None:
        await super()._apply_plan(Uncancelled(run), plan, resources)

    async def _post_tool_calls(self, run: Any, calls: list[Any]) -> bool:
        self.__dict__["_in_tool_steps"] = False
        return await super()._post_tool_calls(run, calls)
