"""Mutants over the input dimensions of the CommonAgent profile (issue 21 §1): each lives on one
value of a dimension the older mutants never tried (a tag's edge, an error class, the clock of an
id, the order of a stored write, a child's identity, a later turn's history)."""

from __future__ import annotations

import re
import uuid
from collections.abc import Callable
from typing import Any

from conformance.boundary.adapter import Doubles, RunResult
from conformance.boundary.scenario import Scenario
from conformance.selftest.mutants.records import CA, _Child, _TagRule
from conformance.selftest.registry import flag, mutant
from reference_kernel.adapter import ReferenceAdapter
from reference_kernel.agent import BUDGET_EXHAUSTED, ERROR, CommonAgent
from reference_kernel.cancel import Cancelled
from reference_kernel.ids import _build
from reference_kernel.journal import MemoryJournal

# ------------------------------------------------------------------ tags

#: 001's grammar as a regular expression matched with ``re.match``: ``$`` also matches before a
#: trailing newline, so ``area:x\n`` passes.
_TAG_RE = re.compile(r"^[a-z0-9_-]+:[A-Za-z0-9_.-]+$")


@mutant("TAG-003", profile=CA)
class TagRegexTrailingNewline(_TagRule):
    """Tags are checked with ``^...$`` and ``re.match``: a value ending in a newline is accepted."""

    @staticmethod
    def rule(tag: str, check: Callable[[str], str]) -> str:
        if isinstance(tag, str) and _TAG_RE.match(tag):
            return tag
        return check(tag)


@mutant("TAG-004", profile=CA)
class EmptyTagValueAccepted(_TagRule):
    """A tag with a colon and nothing after it (``area:``) is accepted."""

    @staticmethod
    def rule(tag: str, check: Callable[[str], str]) -> str:
        if isinstance(tag, str) and tag.endswith(":") and tag.count(":") == 1:
            check(tag + "x")
            return tag
        return check(tag)


@mutant("TAG-002", profile=CA)
class KeyFirstCharacterUnchecked(_TagRule):
    """The key's class is checked from its second character on (an off-by-one): ``Area:x``,
    ``.a:x`` pass."""

    @staticmethod
    def rule(tag: str, check: Callable[[str], str]) -> str:
        if isinstance(tag, str) and ":" in tag and len(tag.split(":")[0]) > 1:
            key, _, value = tag.partition(":")
            check("a" + key[1:] + ":" + value)
            return tag
        return check(tag)


# ------------------------------------------------------------------ ids: decoded, not only shaped


def _seconds_ids(clock: Callable[[], float]) -> Callable[[], str]:
    """UUID v7 ids whose 48-bit timestamp holds seconds, not milliseconds (still v7, still
    increasing from one second to the next)."""
    counter = iter(range(1 << 62))
    return lambda: str(_build(int(clock()), 0, next(counter)))


flag("mutant", "uuid7_timestamp_in_seconds", __name__, "UUID v7 ids stamped with Unix seconds instead of milliseconds.",
     breaks="IDENT-005", profile=CA, ids_factory=_seconds_ids)


@mutant("IDENT-005")
class ChildIdsUuid4(_Child):
    """A child turn gets a UUID v4 turn id (the top-level ids are v7)."""

    def changed(self, turn: Any) -> dict[str, Any]:
        return {"turn_id": str(uuid.uuid4())}


# ------------------------------------------------------------------ child turns


@mutant("CHILD-001", profile=CA, cache_turns=False)
class ChildRunsTheDefinitionsProfile(ReferenceAdapter):
    """A child turn runs with the profile its sub-agent definition names, not its parent's."""

    async def run(self, scenario: Scenario, doubles: Doubles) -> RunResult:
        named = [t.subagent.profile_id for t in scenario.tools if t.subagent is not None]
        if named:
            agent = type("DefinitionProfileChild", (_Child,), {"change": {"profile_id": named[0]}})
            self._build = {**self._build, "agent_cls": agent}
        return await super().run(scenario, doubles)


class _ParentHistory:
    """A journal whose child sessions load their parent session's messages first."""

    def __init__(self, inner: Any) -> None:
        self._inner = inner
        self._parents: dict[str, str] = {}

    async def create_session(self, s: Any) -> str:
        session_id = await self._inner.create_session(s)
        if getattr(s, "parent_session_id", None):
            self._parents[session_id] = s.parent_session_id
        return session_id

    async def load_history(self, session_id: str) -> list[dict[str, Any]]:
        own = await self._inner.load_history(session_id)
        parent = self._parents.get(session_id)
        return (await self._inner.load_history(parent) + own) if parent else own

    def __getattr__(self, name: str) -> Any:
        return getattr(self._inner, name)


flag("mutant", "child_loads_parent_history", __name__, "A child turn starts from its parent session's conversation.",
     breaks="CHILD-003", profile=CA, journal_factory=lambda ids: _ParentHistory(MemoryJournal(ids)))


@mutant("IDENT-007")
class ChildReusesParentTurnId(_Child):
    """A child turn runs under its parent's turn_id (parent_turn_id still set right)."""

    def changed(self, turn: Any) -> dict[str, Any]:
        return {"turn_id": turn.parent_turn_id}


@mutant("TURN-009")
class NoSessionStartForChild(CommonAgent):
    """on_session_start is not dispatched for a child's new session."""

    async def _turn(self, turn: Any, text: str, token: Any, is_new: bool, parent_span: str | None = None) -> Any:
        return await super()._turn(turn, text, token, is_new and turn.depth == 0, parent_span)


@mutant("TURN-020")
class NoSessionEndForChild(CommonAgent):
    """on_session_end is not dispatched at the end of a child turn."""

    async def _dispatch(self, point: str, payload: Any, turn: Any, parent_span: Any, on_outcome: Any = None) -> Any:
        if point == "on_session_end" and turn.depth > 0:
            return payload
        return await super()._dispatch(point, payload, turn, parent_span, on_outcome)


# ------------------------------------------------------------------ error classes


@mutant("TURN-014")
class FailureHooksOnlyWithStatus(CommonAgent):
    """A model failure without an HTTP status (a timeout, a broken stream) ends the turn in error
    without api_request_error or transform_api_error_classification."""

    async def _api_error(self, t: Any, exc: Any, span: str) -> None:
        if exc.status is None:
            t.status, t.error = ERROR, f"unknown: {exc.message}"
            return
        await super()._api_error(t, exc, span)


@mutant("TURN-014")
class FailureHooksOnlyForServerErrors(CommonAgent):
    """Only 5xx failures go through api_request_error and transform_api_error_classification; a
    4xx (a bad request, a refused key, a rate limit) ends the turn at once."""

    async def _api_error(self, t: Any, exc: Any, span: str) -> None:
        if exc.status is not None and exc.status < 500:
            t.status, t.error = ERROR, f"client_error: {exc.message}"
            return
        await super()._api_error(t, exc, span)


# ------------------------------------------------------------------ the order of stored writes


@mutant("TURN-004")
class UserMessageStoredAfterModelCall(CommonAgent):
    """The user message goes into the live history at once but is journaled only once the first
    model call has answered (a write batched after the request)."""

    async def _store(self, t: Any, message: dict[str, Any]) -> None:
        if message.get("role") == "user":
            t.history.append(message)
            self.__dict__.setdefault("_held_user", {})[t.turn.turn_id] = message
            return
        await super()._store(t, message)

    async def _dispatch(self, point: str, payload: Any, turn: Any, parent_span: Any, on_outcome: Any = None) -> Any:
        held = self.__dict__.get("_held_user", {}).pop(turn.turn_id, None) if point in ("post_api_request", "api_request_error") else None
        if held is not None:
            await self.journal.append_message(turn, held)
        return await super()._dispatch(point, payload, turn, parent_span, on_outcome)


@mutant("TURN-015")
class AssistantStoredBeforePostApiRequest(CommonAgent):
    """The assistant message is journaled as soon as the model answers, before post_api_request."""

    async def _dispatch(self, point: str, payload: Any, turn: Any, parent_span: Any, on_outcome: Any = None) -> Any:
        if point == "post_api_request" and isinstance(payload, dict) and isinstance(payload.get("message"), dict):
            await self.journal.append_message(turn, payload["message"])
            self.__dict__.setdefault("_early", set()).add(id(payload["message"]))
        return await super()._dispatch(point, payload, turn, parent_span, on_outcome)

    async def _store(self, t: Any, message: dict[str, Any]) -> None:
        early = self.__dict__.get("_early", set())
        if id(message) in early:
            early.discard(id(message))
            t.history.append(message)
            return
        await super()._store(t, message)


@mutant("TOOL-016")
class ToolCallStoredBeforeItsHooks(CommonAgent):
    """Each tool call is stored as soon as it has run, before post_tool_call and
    transform_tool_result (the stored record holds the untransformed result)."""

    async def _after(self, t: Any, c: Any, span: str) -> None:
        await self.journal.record_tool_call(t.turn, self._record(c))
        journal, self.journal = self.journal, _NoToolRecord(self.journal)
        try:
            await super()._after(t, c, span)
        finally:
            self.journal = journal


class _NoToolRecord:
    def __init__(self, inner: Any) -> None:
        self._inner = inner

    async def record_tool_call(self, turn: Any, record: Any) -> None:
        return None

    def __getattr__(self, name: str) -> Any:
        return getattr(self._inner, name)


@mutant("JOURNAL-005")
class StatusStoredBeforeFinalAnswer(CommonAgent):
    """The final status is stored before the final answer (the answer is journaled last)."""

    async def _store(self, t: Any, message: dict[str, Any]) -> None:
        if message.get("role") == "assistant" and not message.get("tool_calls"):
            t.history.append(message)
            self.__dict__.setdefault("_final", {})[t.turn.turn_id] = message
            return
        await super()._store(t, message)

    async def _finish_turn(self, t: Any) -> None:
        await super()._finish_turn(t)
        held = self.__dict__.get("_final", {}).pop(t.turn.turn_id, None)
        if held is not None:
            await self.journal.append_message(t.turn, held)


# ------------------------------------------------------------------ history across turns


class _Reload:
    """A journal whose ``load_history`` passes the stored messages through ``edit``."""

    def __init__(self, inner: Any, edit: Callable[[list[dict[str, Any]]], list[dict[str, Any]]]) -> None:
        self._inner, self._edit = inner, edit

    async def load_history(self, session_id: str) -> list[dict[str, Any]]:
        return self._edit(list(await self._inner.load_history(session_id)))

    def __getattr__(self, name: str) -> Any:
        return getattr(self._inner, name)


def _no_error_flags(history: list[dict[str, Any]]) -> list[dict[str, Any]]:
    return [{**m, "is_error": False} if m.get("role") == "tool_result" else m for m in history]


def _text_only(history: list[dict[str, Any]]) -> list[dict[str, Any]]:
    return [m for m in history if m.get("role") == "user" or (m.get("role") == "assistant" and not m.get("tool_calls"))]


def _window(history: list[dict[str, Any]]) -> list[dict[str, Any]]:
    return history[-64:]


flag("mutant", "history_reload_clears_error_flags", __name__,
     "Earlier turns' tool results come back from the journal with is_error false.",
     breaks="TURN-003", profile=CA, journal_factory=lambda ids: _Reload(MemoryJournal(ids), _no_error_flags))
flag("mutant", "history_reload_drops_tool_messages", __name__,
     "Earlier turns come back as their user and final messages only (tool calls and results dropped).",
     breaks="TURN-003", profile=CA, journal_factory=lambda ids: _Reload(MemoryJournal(ids), _text_only))
flag("mutant", "history_window_of_64", __name__,
     "Only the session's last 64 stored messages are loaded.",
     breaks="TURN-003", profile=CA, journal_factory=lambda ids: _Reload(MemoryJournal(ids), _window))


class _EarlyHistory:
    """A journal that serves each session's next load from a snapshot taken earlier."""

    def __init__(self, inner: Any, snapshots: dict[str, list[dict[str, Any]]]) -> None:
        self._inner, self._snapshots = inner, snapshots

    async def load_history(self, session_id: str) -> list[dict[str, Any]]:
        snapshot = self._snapshots.pop(session_id, None)
        return list(snapshot) if snapshot is not None else await self._inner.load_history(session_id)

    def __getattr__(self, name: str) -> Any:
        return getattr(self._inner, name)


@mutant("TURN-003")
class HistoryReadBeforeTheLock(CommonAgent):
    """A message reads its session's history when it arrives, before waiting on the session lock:
    a message that waited misses what the running turn stored meanwhile."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self._snapshots: dict[str, list[dict[str, Any]]] = {}
        self.journal = _EarlyHistory(self.journal, self._snapshots)

    async def run_turn(self, session_id: str | None, user_message: str, **kwargs: Any) -> Any:
        if session_id is not None:
            self._snapshots[session_id] = list(await self.journal._inner.load_history(session_id))
        return await super().run_turn(session_id, user_message, **kwargs)


@mutant("TURN-003")
class CancelSticksToTheSession(CommonAgent):
    """Once a turn of a session is cancelled, every later turn of that session starts cancelled."""

    async def run_turn(self, session_id: str | None, user_message: str, **kwargs: Any) -> Any:
        result = await super().run_turn(session_id, user_message, **kwargs)
        if result.status == "interrupted":
            self.__dict__.setdefault("_stopped", set()).add(result.session_id)
        return result

    async def _turn(self, turn: Any, text: str, token: Any, is_new: bool, parent_span: str | None = None) -> Any:
        if turn.session_id in self.__dict__.get("_stopped", set()):
            token.cancel()
        return await super()._turn(turn, text, token, is_new, parent_span)


@mutant("MSG-002", also_expected=("TURN-003",))
class UserTextStripped(CommonAgent):
    """The user's text is stripped of surrounding whitespace before it is stored and sent."""

    async def run_turn(self, session_id: str | None, user_message: str, **kwargs: Any) -> Any:
        return await super().run_turn(session_id, user_message.strip(), **kwargs)


# ------------------------------------------------------------------ several of a kind


@mutant("TOOL-017")
class OneApprovalPerResponse(CommonAgent):
    """Each call of a response that went to the approver is stored with the last decision the
    approver gave in that response (one approval slot per response)."""

    async def _decide(self, t: Any, c: Any, span: str) -> bool:
        runs = await super()._decide(t, c, span)
        if c.approval is not None:
            self.__dict__["_last_approval"] = c.approval
        return runs

    async def _after(self, t: Any, c: Any, span: str) -> None:
        if c.approval is not None:
            c.approval = self.__dict__.get("_last_approval", c.approval)
        await super()._after(t, c, span)


@mutant("TAG-008")
class TagsDeduplicatedByKey(CommonAgent):
    """A turn's tags keep one tag per key (the session's value wins): `area:work` and
    `area:home` become `area:home`."""

    async def _turn_tags(self, session_id: str) -> list[str]:
        merged = await super()._turn_tags(session_id)
        by_key = {t.split(":", 1)[0]: t for t in [*self.profile.tags, *self._session_tags.get(session_id, [])]}
        return sorted(t for t in merged if by_key.get(t.split(":", 1)[0]) == t)


def _millisecond_ids(clock: Callable[[], float]) -> Callable[[], str]:
    """UUID v7 ids whose random bits are drawn from the millisecond alone (a generator seeded
    with the time): two ids made within one millisecond are the same id."""

    def make() -> str:
        ms = int(clock() * 1000)
        return str(_build(ms, ms & 0xFFF, (ms * 2654435761) & ((1 << 62) - 1)))

    return make


flag("mutant", "same_id_within_a_millisecond", __name__,
     "Ids made within one millisecond are identical (random bits derived from the time).",
     breaks="IDENT-007", profile=CA, ids_factory=_millisecond_ids)


# ------------------------------------------------------------------ the iteration budget


@mutant("BUDGET-001")
class IterationsCountToolCalls(CommonAgent):
    """Each tool call spends an iteration (a response asking for two calls spends two)."""

    async def _tool_calls(self, t: Any, tool_calls: list[dict[str, Any]], span: str, bad: dict[str, str]) -> list[Any]:
        done = await super()._tool_calls(t, tool_calls, span, bad)
        t.iterations += max(0, len(tool_calls) - 1)
        return done


# ------------------------------------------------------------------ the session lock


@mutant("TURN-002")
class LockReleasedBeforeSessionEnd(CommonAgent):
    """The session lock is released once the status is stored; on_session_end is dispatched
    after it, while the next message of the session may already run."""

    async def run_turn(self, session_id: str | None, user_message: str, **kwargs: Any) -> Any:
        result = await super().run_turn(session_id, user_message, **kwargs)
        pending = self.__dict__.setdefault("_pending_end", {}).pop(result.turn_id, None)
        if pending is not None:
            turn, status, span = pending
            await super()._dispatch("on_session_end", {"session_id": turn.session_id, "status": status}, turn, span)
        return result

    async def _dispatch(self, point: str, payload: Any, turn: Any, parent_span: Any, on_outcome: Any = None) -> Any:
        if point == "on_session_end" and turn.depth == 0:
            self.__dict__.setdefault("_pending_end", {})[turn.turn_id] = (turn, payload.get("status"), parent_span)
            return payload
        return await super()._dispatch(point, payload, turn, parent_span, on_outcome)


def _refusals_not_errors(history: list[dict[str, Any]]) -> list[dict[str, Any]]:
    refused = ("Blocked:", "Not approved")
    return [
        {**m, "is_error": False} if m.get("role") == "tool_result" and str(m.get("content", "")).startswith(refused) else m
        for m in history
    ]


flag("mutant", "history_reload_refusals_not_errors", __name__,
     "Earlier turns' blocked and denied results come back from the journal as successful results.",
     breaks="TURN-003", profile=CA, journal_factory=lambda ids: _Reload(MemoryJournal(ids), _refusals_not_errors))


# ------------------------------------------------------------------ stopping a turn


@mutant("STOP-004", also_expected=("STOP-005",))
class CancelInToolIsAnError(CommonAgent):
    """A cancel that lands while tools run is taken for a tool failure: the turn ends with status
    error, and agent_loop_stopped does not fire."""

    async def _tool_calls(self, t: Any, tool_calls: list[dict[str, Any]], span: str, bad: dict[str, str]) -> list[Any]:
        try:
            return await super()._tool_calls(t, tool_calls, span, bad)
        except Cancelled:
            raise RuntimeError("tool execution was cancelled") from None


# ------------------------------------------------------------------ sessions


@mutant("SESS-003")
class SessionStoredWithProfileTags(CommonAgent):
    """A session is stored with the profile's tags added to its own (the turn's tags, not the
    session's); the turns' tags are unchanged."""

    async def new_session(self, first_message: str, tags: Any = (), **kwargs: Any) -> str:
        return await super().new_session(first_message, [*tags, *self.profile.tags], **kwargs)


@mutant("SESS-002")
class OnlyTheLastSessionIsContinued(CommonAgent):
    """A message to a session other than the one used last starts a new session (the kernel
    keeps one "current" session)."""

    async def run_turn(self, session_id: str | None, user_message: str, **kwargs: Any) -> Any:
        last = self.__dict__.get("_last_session")
        seen = self.__dict__.setdefault("_seen_sessions", set())
        if session_id is not None and session_id in seen and session_id != last:
            session_id = None
        result = await super().run_turn(session_id, user_message, **kwargs)
        seen.add(result.session_id)
        self.__dict__["_last_session"] = result.session_id
        return result


@mutant("TAG-008", profile=CA)
class LaterMessageTagsReplaceTheTurns(ReferenceAdapter):
    """A message to an existing session that brings tags runs its turn with those tags alone
    (the profile's and the session's dropped)."""

    async def run(self, scenario: Scenario, doubles: Doubles) -> RunResult:
        per_message = [list(m.tags) for m in scenario.user_messages]

        class Replacing(self._build["agent_cls"]):  # type: ignore[misc, name-defined]
            async def run_turn(self, session_id: str | None, user_message: str, **kwargs: Any) -> Any:
                k = self.__dict__.get("_message", 0)
                self.__dict__["_message"] = k + 1
                started = self.__dict__.setdefault("_started", set())
                self.__dict__["_only"] = per_message[k] if session_id in started and k < len(per_message) else []
                started.add(session_id)
                return await super().run_turn(session_id, user_message, **kwargs)

            async def _turn_tags(self, session_id: str) -> list[str]:
                tags = await super()._turn_tags(session_id)
                return sorted(self.__dict__.get("_only") or tags)

        original = self._build
        self._build = {**original, "agent_cls": Replacing}
        try:
            return await super().run(scenario, doubles)
        finally:
            self._build = original


class _FlatChildTurns:
    """A journal that starts child turns as top-level ones (depth 0, no parent)."""

    def __init__(self, inner: Any) -> None:
        self._inner = inner

    async def start_turn(self, turn: Any) -> None:
        if turn.depth > 0:
            turn = turn.model_copy(update={"depth": 0, "parent_turn_id": None})
        await self._inner.start_turn(turn)

    def __getattr__(self, name: str) -> Any:
        return getattr(self._inner, name)


flag("mutant", "child_turns_journaled_flat", __name__,
     "Child turns are started in the journal as top-level turns (depth 0, no parent_turn_id).",
     breaks="JOURNAL-002", profile=CA, journal_factory=lambda ids: _FlatChildTurns(MemoryJournal(ids)))


# ------------------------------------------------------------------ what is stored for each tool call


@mutant("TOOL-016")
class RefusedByTheApproverNotStored(CommonAgent):
    """A call the approver denied or let time out is not stored (it never ran)."""

    async def _after(self, t: Any, c: Any, span: str) -> None:
        if c.approval in ("denied", "timed_out"):
            journal, self.journal = self.journal, _NoToolRecord(self.journal)
            try:
                await super()._after(t, c, span)
            finally:
                self.journal = journal
            return
        await super()._after(t, c, span)


@mutant("MSG-004")
class RefusalsStoredAsSuccesses(CommonAgent):
    """The tool_result of a blocked or refused call is stored with is_error false (the model got
    it as an error)."""

    async def _store(self, t: Any, message: dict[str, Any]) -> None:
        refused = ("Blocked:", "Not approved")
        if message.get("role") == "tool_result" and str(message.get("content", "")).startswith(refused):
            t.history.append(message)
            await self.journal.append_message(t.turn, {**message, "is_error": False})
            return
        await super()._store(t, message)


@mutant("JOURNAL-004")
class ErrorResultsRecordedEmpty(CommonAgent):
    """The ToolCallRecord of a failed or refused call holds no result text."""

    def _record(self, c: Any) -> Any:
        record = super()._record(c)
        return record.model_copy(update={"result": ""}) if c.is_error else record


@mutant("BUDGET-005")
class ExhaustedBudgetCarriesOver(CommonAgent):
    """A turn that ran out of iterations leaves its count to the session's next turn (only a
    completed turn resets it)."""

    async def _iterate(self, t: Any) -> None:
        carry = self.__dict__.setdefault("_carry", {})
        t.iterations = carry.pop(t.turn.session_id, 0)
        await super()._iterate(t)
        if t.status == BUDGET_EXHAUSTED:
            carry[t.turn.session_id] = t.iterations


class _OwnTagsOnly:
    """A journal whose start_turn stores the session's own tags (the profile's dropped)."""

    def __init__(self, inner: Any) -> None:
        self._inner = inner
        self._own: dict[str, list[str]] = {}

    async def create_session(self, s: Any) -> str:
        session_id = await self._inner.create_session(s)
        self._own[session_id] = list(getattr(s, "tags", []) or [])
        return session_id

    async def start_turn(self, turn: Any) -> None:
        await self._inner.start_turn(turn.model_copy(update={"tags": sorted(self._own.get(turn.session_id, turn.tags))}))

    def __getattr__(self, name: str) -> Any:
        return getattr(self._inner, name)


flag("mutant", "turns_journaled_with_session_tags_only", __name__,
     "Turns are started in the journal with the session's own tags, not the turn's (the profile's missing).",
     breaks="JOURNAL-002", profile=CA, journal_factory=lambda ids: _OwnTagsOnly(MemoryJournal(ids)))
