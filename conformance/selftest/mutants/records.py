"""Mutants of 001's records: identity (IDENT-*), sessions (SESS-*), stored messages (MSG-*),
tags (TAG-*), child turns (CHILD-*) and the journal (JOURNAL-*), on the agent face."""

from __future__ import annotations

import contextlib
import json
import uuid
from collections.abc import Callable, Iterator
from typing import Any

import reference_kernel.tags as tags_module
from conformance.boundary.adapter import Doubles, RunResult
from conformance.boundary.scenario import Scenario
from conformance.selftest.registry import flag, mutant
from reference_kernel.adapter import ReferenceAdapter
from reference_kernel.agent import CommonAgent
from reference_kernel.ids import _build
from reference_kernel.journal import MemoryJournal

CA = "commonagent"


class _WithTurn:
    """A run context seen through another TurnInfo (for what tools receive)."""

    def __init__(self, ctx: Any, turn: Any) -> None:
        self._ctx, self.turn = ctx, turn

    def __getattr__(self, name: str) -> Any:
        return getattr(self._ctx, name)


class _FirstTurn(CommonAgent):
    """Base: remembers the first TurnInfo of each session (a stale-identity cache)."""

    def first(self, turn: Any) -> Any:
        return self.__dict__.setdefault("_first", {}).setdefault(turn.session_id, turn)


# ------------------------------------------------------------------ identity


@mutant("IDENT-001", cache_turns=False)
class HooksSeeDefaultProfile(CommonAgent):
    """Hooks receive a TurnInfo built for the default profile, not the running one."""

    async def _dispatch(self, point: str, payload: Any, turn: Any, parent_span: Any, on_outcome: Any = None) -> Any:
        turn = turn.model_copy(update={"profile_id": "default"})
        return await super()._dispatch(point, payload, turn, parent_span, on_outcome)


@mutant("IDENT-002", cache_turns=False)
class ToolsSeeDefaultProfile(CommonAgent):
    """Tools receive a TurnInfo built for the default profile, not the running one."""

    async def _execute(self, c: Any, ctx: Any, parent_span: str | None) -> None:
        await super()._execute(c, _WithTurn(ctx, ctx.turn.model_copy(update={"profile_id": "default"})), parent_span)


@mutant("IDENT-001")
class HooksSeeFirstTurn(_FirstTurn):
    """Hooks receive the TurnInfo of the session's first turn (cached), not the running one."""

    async def _dispatch(self, point: str, payload: Any, turn: Any, parent_span: Any, on_outcome: Any = None) -> Any:
        return await super()._dispatch(point, payload, self.first(turn), parent_span, on_outcome)


@mutant("IDENT-002")
class ToolsSeeFirstTurn(_FirstTurn):
    """Tools receive the TurnInfo of the session's first turn (cached), not the running one."""

    async def _execute(self, c: Any, ctx: Any, parent_span: str | None) -> None:
        await super()._execute(c, _WithTurn(ctx, self.first(ctx.turn)), parent_span)


class _JournalEdit:
    """A journal that changes what the agent hands it (one method per mutant)."""

    def __init__(self, inner: Any) -> None:
        self._inner = inner

    def session(self, s: Any) -> Any:
        return s

    def message(self, turn: Any, m: dict[str, Any]) -> tuple[Any, dict[str, Any] | None]:
        return turn, m

    def record(self, turn: Any, r: Any) -> tuple[Any, Any]:
        return turn, r

    def started(self, turn: Any) -> Any:
        return turn

    def finished(self, turn: Any, status: str) -> bool:
        return True

    async def create_session(self, s: Any) -> str:
        return await self._inner.create_session(self.session(s))

    async def append_message(self, turn: Any, m: dict[str, Any]) -> None:
        turn, m2 = self.message(turn, m)
        if m2 is not None:
            await self._inner.append_message(turn, m2)

    async def record_tool_call(self, turn: Any, r: Any) -> None:
        turn, r = self.record(turn, r)
        if r is not None:
            await self._inner.record_tool_call(turn, r)

    async def start_turn(self, turn: Any) -> None:
        await self._inner.start_turn(self.started(turn))

    async def finish_turn(self, turn: Any, status: Any) -> None:
        if self.finished(turn, status):
            await self._inner.finish_turn(turn, status)

    def __getattr__(self, name: str) -> Any:
        return getattr(self._inner, name)


def journal_mutant(name: str, breaks: str, description: str, edit: type[_JournalEdit], **kw: Any) -> None:
    flag("mutant", name, __name__, description, breaks=breaks, profile=CA,
         journal_factory=lambda ids: edit(MemoryJournal(ids)), **kw)


class _StaleJournalTurn(_JournalEdit):
    def message(self, turn: Any, m: dict[str, Any]) -> tuple[Any, dict[str, Any] | None]:
        first = self.__dict__.setdefault("_first", {}).setdefault(turn.session_id, turn)
        return first, m


journal_mutant("journal_records_first_turn", "IDENT-003", "Messages are journaled under the session's first turn.", _StaleJournalTurn)


@mutant("IDENT-004")
class TopLevelParentIsSession(CommonAgent):
    """A top-level turn's parent_turn_id is its session id."""

    async def _turn(self, turn: Any, text: str, token: Any, is_new: bool, parent_span: str | None = None) -> Any:
        if turn.depth == 0:
            turn = turn.model_copy(update={"parent_turn_id": turn.session_id})
        return await super()._turn(turn, text, token, is_new, parent_span)


def _uuid4(clock: Callable[[], float]) -> Callable[[], str]:
    return lambda: str(uuid.uuid4())


def _v7_descending(clock: Callable[[], float]) -> Callable[[], str]:
    """The timestamp field counts down as the clock goes on (a sign slip): an id made in a later
    millisecond sorts first. (Within one millisecond any order is legal: uuid7-same-millisecond.)"""
    counter = iter(range(0xFFF, 0, -1))
    return lambda: str(_build((1 << 48) - 1 - int(clock() * 1000), next(counter), uuid.uuid4().int))


flag("mutant", "uuid_v4_ids", __name__, "Session and turn ids are UUID v4.", breaks="IDENT-005", profile=CA,
     also_expected=("IDENT-006",), ids_factory=_uuid4)
flag("mutant", "v7_ids_counting_down", __name__, "UUID v7 ids whose timestamp runs down, so ids made later sort first.",
     breaks="IDENT-006", profile=CA, ids_factory=_v7_descending)


@mutant("IDENT-007")
class TurnIdPerSession(_FirstTurn):
    """Every turn of a session reuses the first turn's turn_id."""

    async def _turn(self, turn: Any, text: str, token: Any, is_new: bool, parent_span: str | None = None) -> Any:
        first = self.first(turn)
        if first is not turn:
            turn = turn.model_copy(update={"turn_id": first.turn_id})
            self.journal = _SkipRestart(self.journal)
        return await super()._turn(turn, text, token, is_new, parent_span)


class _SkipRestart(_JournalEdit):
    async def start_turn(self, turn: Any) -> None:
        with contextlib.suppress(ValueError):
            await self._inner.start_turn(turn)


# ------------------------------------------------------------------ sessions


class _OtherProfile(_JournalEdit):
    def session(self, s: Any) -> Any:
        return s.model_copy(update={"profile_id": "default"})


journal_mutant("session_stored_with_default_profile", "SESS-001", "Sessions are stored under the profile id `default`.", _OtherProfile)


@mutant("SESS-002")
class SessionPerMessage(CommonAgent):
    """Each message starts a new session, even one sent to an existing session."""

    async def run_turn(self, session_id: str | None, user_message: str, **kwargs: Any) -> Any:
        if session_id is not None and session_id not in self._fresh:
            session_id = await self.new_session(user_message, self._session_tags.get(session_id, []))
        return await super().run_turn(session_id, user_message, **kwargs)


class _NoSessionTags(_JournalEdit):
    def session(self, s: Any) -> Any:
        return s.model_copy(update={"tags": []})


journal_mutant("session_stored_without_tags", "SESS-003", "Sessions are stored without their tags.", _NoSessionTags)


@mutant("SESS-004")
class ChildSessionWithoutParent(CommonAgent):
    """A sub-agent's session is stored without its parent session."""

    async def new_session(self, first_message: str, tags: Any = (), **kwargs: Any) -> str:
        kwargs.pop("parent_session_id", None)
        return await super().new_session(first_message, tags, **kwargs)


# ------------------------------------------------------------------ stored messages


class _ToolRole(_JournalEdit):
    def message(self, turn: Any, m: dict[str, Any]) -> tuple[Any, dict[str, Any] | None]:
        return turn, ({**m, "role": "tool"} if m.get("role") == "tool_result" else m)


journal_mutant("tool_results_stored_as_role_tool", "MSG-001", "Tool results are stored with role `tool`.", _ToolRole,
               also_expected=("MSG-004", "MSG-006", "JOURNAL-003"))


class _PrefixedUser(_JournalEdit):
    def message(self, turn: Any, m: dict[str, Any]) -> tuple[Any, dict[str, Any] | None]:
        return turn, ({**m, "text": "User: " + str(m.get("text"))} if m.get("role") == "user" else m)


journal_mutant("user_text_prefixed", "MSG-002", "The stored user text is prefixed with `User: `.", _PrefixedUser)


class _ArgsAsString(_JournalEdit):
    def message(self, turn: Any, m: dict[str, Any]) -> tuple[Any, dict[str, Any] | None]:
        if m.get("tool_calls"):
            m = {**m, "tool_calls": [{**c, "args": json.dumps(c.get("args"))} for c in m["tool_calls"]]}
        return turn, m


journal_mutant("tool_args_stored_as_string", "MSG-003", "A stored tool call's args is a JSON string, not an object.", _ArgsAsString)


class _NoErrorFlag(_JournalEdit):
    def message(self, turn: Any, m: dict[str, Any]) -> tuple[Any, dict[str, Any] | None]:
        return turn, ({k: v for k, v in m.items() if k != "is_error"} if m.get("role") == "tool_result" else m)


journal_mutant("tool_result_stored_without_error_flag", "MSG-004", "Tool results are stored without is_error.", _NoErrorFlag)


class _Preview(_JournalEdit):
    def message(self, turn: Any, m: dict[str, Any]) -> tuple[Any, dict[str, Any] | None]:
        if m.get("role") == "assistant" and not m.get("tool_calls") and isinstance(m.get("text"), str):
            m = {**m, "text": m["text"][:16]}
        return turn, m


journal_mutant("final_answer_stored_truncated", "MSG-005", "A final answer is stored cut to 16 characters.", _Preview)


@mutant("MSG-006")
class AssistantStoredAfterResults(CommonAgent):
    """An assistant message asking for tools is stored after its tool results."""

    async def _store(self, t: Any, message: dict[str, Any]) -> None:
        if message.get("role") == "assistant" and message.get("tool_calls"):
            t.history.append(message)
            self.__dict__.setdefault("_held", {})[t.turn.turn_id] = message
            return
        await super()._store(t, message)

    async def _iteration(self, t: Any, span: str) -> bool:
        done = await super()._iteration(t, span)
        held = self.__dict__.get("_held", {}).pop(t.turn.turn_id, None)
        if held is not None:
            await self.journal.append_message(t.turn, held)
        return done


# ------------------------------------------------------------------ tags


class _TagRule(ReferenceAdapter):
    """An adapter whose tag check is swapped for the duration of a run."""

    @staticmethod
    def rule(tag: str, check: Callable[[str], str]) -> str:
        return check(tag)

    @contextlib.contextmanager
    def _patched(self) -> Iterator[None]:
        original = tags_module.validate_tag
        tags_module.validate_tag = lambda tag: self.rule(tag, original)  # type: ignore[assignment]
        try:
            yield
        finally:
            tags_module.validate_tag = original  # type: ignore[assignment]

    async def run(self, scenario: Scenario, doubles: Doubles) -> RunResult:
        with self._patched():
            return await super().run(scenario, doubles)


@mutant("TAG-001", profile=CA)
class TagsLowercased(_TagRule):
    """Valid tags are lower-cased."""

    @staticmethod
    def rule(tag: str, check: Callable[[str], str]) -> str:
        return check(tag).lower()


@mutant("TAG-002", profile=CA)
class UpperCaseKeyAccepted(_TagRule):
    """Upper case in a tag key is accepted."""

    @staticmethod
    def rule(tag: str, check: Callable[[str], str]) -> str:
        key, sep, value = str(tag).partition(":")
        check(key.lower() + sep + value)
        return tag


@mutant("TAG-003", profile=CA)
class AnyValueAccepted(_TagRule):
    """Any non-space characters are accepted in a tag value."""

    @staticmethod
    def rule(tag: str, check: Callable[[str], str]) -> str:
        key, sep, value = str(tag).partition(":")
        check(key + sep + ("x" if value and " " not in value and ":" not in value else value))
        return tag


@mutant("TAG-004", profile=CA)
class TwoColonsAccepted(_TagRule):
    """A tag is split at its first colon, so `a:b:c` is accepted."""

    @staticmethod
    def rule(tag: str, check: Callable[[str], str]) -> str:
        key, sep, value = str(tag).partition(":")
        check(key + sep + value.replace(":", "-"))
        return tag


@mutant("TAG-005", profile=CA)
class SpaceAccepted(_TagRule):
    """A space in a tag is accepted."""

    @staticmethod
    def rule(tag: str, check: Callable[[str], str]) -> str:
        check(str(tag).replace(" ", "_"))
        return tag


@mutant("TAG-006", cache_turns=False)
class ToolsSeeSessionTagsOnly(CommonAgent):
    """Tools receive the session's own tags, without the profile's (hooks get them right)."""

    async def _execute(self, c: Any, ctx: Any, parent_span: str | None) -> None:
        own = self._session_tags.get(ctx.turn.session_id, [])
        await super()._execute(c, _WithTurn(ctx, ctx.turn.model_copy(update={"tags": list(own)})), parent_span)


@mutant("TAG-006", cache_turns=False)
class ToolsSeeUnsortedTags(CommonAgent):
    """Tools receive the turn's tags in reverse order (hooks get them right)."""

    async def _execute(self, c: Any, ctx: Any, parent_span: str | None) -> None:
        turn = ctx.turn.model_copy(update={"tags": list(reversed(ctx.turn.tags))})
        await super()._execute(c, _WithTurn(ctx, turn), parent_span)


@mutant("TAG-008")
class TagsNotSorted(CommonAgent):
    """A turn's tags are the profile's then the session's, unsorted."""

    async def _turn_tags(self, session_id: str) -> list[str]:
        await super()._turn_tags(session_id)
        return list(dict.fromkeys([*self.profile.tags, *self._session_tags.get(session_id, [])]))


@mutant("TAG-008")
class TagsNotDeduplicated(CommonAgent):
    """A turn's tags are sorted but keep duplicates."""

    async def _turn_tags(self, session_id: str) -> list[str]:
        await super()._turn_tags(session_id)
        return sorted([*self.profile.tags, *self._session_tags.get(session_id, [])])


class _NoMessageTags(ReferenceAdapter):
    async def run(self, scenario: Scenario, doubles: Doubles) -> RunResult:
        messages = [m.model_copy(update={"tags": []}) for m in scenario.user_messages]
        return await super().run(scenario.model_copy(update={"user_messages": messages}), doubles)


@mutant("TAG-009", profile=CA)
class MessageTagsIgnored(_NoMessageTags):
    """Tags brought by the message that starts a session are dropped."""


# ------------------------------------------------------------------ child turns


class _Child(CommonAgent):
    change: dict[str, Any] = {}

    async def _turn(self, turn: Any, text: str, token: Any, is_new: bool, parent_span: str | None = None) -> Any:
        if turn.depth > 0:
            turn = turn.model_copy(update=self.changed(turn))
        return await super()._turn(turn, text, token, is_new, parent_span)

    def changed(self, turn: Any) -> dict[str, Any]:
        return dict(self.change)


@mutant("CHILD-001", cache_turns=False)
class ChildOwnProfile(_Child):
    """A child turn runs under the profile id `subagent`."""

    change = {"profile_id": "subagent"}


@mutant("CHILD-002")
class ChildWithoutTags(_Child):
    """A child turn carries no tags."""

    change = {"tags": []}


@mutant("CHILD-003")
class ChildInParentSession(CommonAgent):
    """A child turn runs in its parent's session."""

    async def new_session(self, first_message: str, tags: Any = (), **kwargs: Any) -> str:
        if kwargs.get("source") == "subagent" and kwargs.get("parent_session_id"):
            return kwargs["parent_session_id"]
        return await super().new_session(first_message, tags, **kwargs)


@mutant("CHILD-004")
class ChildWithoutParentTurn(_Child):
    """A child turn has no parent_turn_id."""

    change = {"parent_turn_id": None}


@mutant("CHILD-005")
class ChildDepthNotIncreased(_Child):
    """A child turn keeps its parent's depth."""

    def changed(self, turn: Any) -> dict[str, Any]:
        return {"depth": turn.depth - 1}


# ------------------------------------------------------------------ journal


class _NoSource(_JournalEdit):
    def session(self, s: Any) -> Any:
        return s.model_copy(update={"source": None})


journal_mutant("session_created_without_source", "JOURNAL-001", "Sessions are created without their source.", _NoSource)


class _StartWithoutTags(_JournalEdit):
    def started(self, turn: Any) -> Any:
        return turn.model_copy(update={"tags": []})


journal_mutant("turn_started_without_tags", "JOURNAL-002", "Turns are started in the journal without their tags.", _StartWithoutTags)


class _NoToolResults(_JournalEdit):
    def message(self, turn: Any, m: dict[str, Any]) -> tuple[Any, dict[str, Any] | None]:
        return turn, (None if m.get("role") == "tool_result" else m)


journal_mutant("tool_results_not_journaled", "JOURNAL-003", "Tool results are kept in memory but never journaled.", _NoToolResults,
               also_expected=("MSG-004", "MSG-006"))


class _NoRisk(_JournalEdit):
    def record(self, turn: Any, r: Any) -> tuple[Any, Any]:
        return turn, r.model_copy(update={"risk": None})


journal_mutant("tool_call_recorded_without_risk", "JOURNAL-004", "Tool calls are recorded without their risk.", _NoRisk)


class _OnlyCompleted(_JournalEdit):
    def finished(self, turn: Any, status: str) -> bool:
        return status == "completed"


journal_mutant("only_completed_turns_finished", "JOURNAL-005", "Only completed turns are finished in the journal.", _OnlyCompleted)


@mutant("IDENT-007")
class MadeUpSessionId(CommonAgent):
    """Turns run under a session id the kernel never created (a stale id kept in a module-level
    default): one session id throughout, so the old checks, which only compared ids with each
    other, let it through."""

    STALE = "01890000-0000-7000-8000-000000000000"

    async def _turn(self, turn: Any, text: str, token: Any, is_new: bool, parent_span: str | None = None) -> Any:
        return await super()._turn(turn.model_copy(update={"session_id": self.STALE}), text, token, is_new, parent_span)


# ------------------------------------------------------------------ wrong types (issue 21)


@mutant("TOOL-017", profile=CA)
class ApprovalStoredAsBoolean(ReferenceAdapter):
    """The journal stores a call's approval as a boolean (True for approved), not 000's decision
    string: the kernel's failure of the requirement that reads it, not an adapter error."""

    async def run(self, scenario: Scenario, doubles: Doubles) -> Any:
        data = (await super().run(scenario, doubles)).model_dump(mode="json")
        for record in data["journal"]["tool_calls"]:
            if record.get("approval") is not None:
                record["approval"] = record["approval"] == "approved"
        return data
