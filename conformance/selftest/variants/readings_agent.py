"""Legal variants for the open points of the CommonAgent turn, tools, ids and tags (``akc
readings``): each takes an alternative the reference kernel does not, and must pass the full suite.

Ported from the blind round (/work/blind/blind_variants, written from the seeds alone); the names
are the blind names. Each docstring says the open point, the seed's words, the reference's
reading and the variant's.
"""

from __future__ import annotations

import random
from typing import Any

from conformance.boundary.adapter import Doubles, RunResult
from conformance.boundary.scenario import Scenario
from conformance.selftest.registry import flag, variant
from reference_kernel.adapter import ReferenceAdapter
from reference_kernel.agent import ERROR, CommonAgent
from reference_kernel.errors import ConfigError
from reference_kernel.ids import _build
from reference_kernel.kernel import Call, HookFailed
from reference_kernel.tags import validate_tag

from conformance.selftest.variants.readings_kernel import _InterruptionNotice


# =========================================================================== sequential-order


@variant()
class AgentSequentialReverse(CommonAgent):
    """Reading sequential-order (TOOL-002, STOP-001). Seed 000: "Tool calls from one model response
    run in parallel, unless one of them is interactive; then they run one at a time. Results go
    back to the model in the order the model asked for them." Reference: one at a time in the order
    asked. Variant: one at a time, last asked first (each call start to finish); results still go
    back in the order asked."""

    async def _tool_calls(self, t: Any, tool_calls: list[dict[str, Any]], span: str, bad: dict[str, str]) -> list[Call]:
        calls = [self._prepare(i, call, bad, check_schema=False) for i, call in enumerate(tool_calls)]
        if not self._sequential(calls):
            return await super()._tool_calls(t, tool_calls, span, bad)
        with t.token.scope():
            for c in reversed(calls):
                t.token.check()
                if await self._decide(t, c, span):
                    await self._execute(c, t, span)
                await self._after(t, c, span)
        t.token.check()
        return calls


# =========================================================================== session-end-payload


class _SessionEndPayload(CommonAgent):
    """on_session_end with another payload, after the final status was stored (as 000 orders)."""

    def _session_end_payload(self, t: Any) -> dict[str, Any]:  # pragma: no cover - overridden
        raise NotImplementedError

    async def _finish(self, t: Any) -> None:
        if t.status == "interrupted":
            try:
                await self._dispatch("agent_loop_stopped", {"reason": "cancelled"}, t.turn, t.span)
            except HookFailed as exc:
                t.error = str(exc)
        await self._finish_turn(t)
        try:
            await self._dispatch("on_session_end", self._session_end_payload(t), t.turn, t.span)
        except HookFailed as exc:
            t.status, t.error = ERROR, str(exc)
            await self._finish_turn(t)


@variant()
class AgentSessionEndNoStatus(_SessionEndPayload):
    """Reading session-end-payload (TURN-020). Seed 000: "The final status is stored, then
    on_session_end fires." No payload is given. Reference: ``{session_id, status}``. Variant:
    ``{session_id}`` only (hooks read the status from the journal, where it was just stored)."""

    def _session_end_payload(self, t: Any) -> dict[str, Any]:
        return {"session_id": t.turn.session_id}


@variant()
class AgentSessionEndExtraFields(_SessionEndPayload):
    """Reading session-end-payload (TURN-020). Variant: ``{session_id, turn_id, status, reply,
    error}``."""

    def _session_end_payload(self, t: Any) -> dict[str, Any]:
        return {"session_id": t.turn.session_id, "turn_id": t.turn.turn_id, "status": t.status,
                "reply": t.reply, "error": t.error}


# =========================================================================== uuid7-same-millisecond


def random_uuid7_ids(clock: Any) -> Any:
    """RFC 9562 UUIDv7 with rand_a and rand_b random for every id (no per-millisecond counter)."""
    rng = random.SystemRandom()

    def make() -> str:
        ms = max(0, int(clock() * 1000))
        return str(_build(ms, rng.getrandbits(12), rng.getrandbits(62)))

    return make


flag(
    "variant", "uuid7_random_within_ms", __name__,
    "Reading uuid7-same-millisecond (IDENT-006). Seed 001: \"IDs are UUID v7, so they sort by creation "
    "time.\" RFC 9562 fills rand_a/rand_b randomly unless the optional monotonic methods are used. "
    "Reference: a per-millisecond counter. Variant: random bits below the millisecond.",
    ids_factory=random_uuid7_ids,
)


# =========================================================================== post-tool-call-payload


@variant()
class AgentPostToolCallBare(CommonAgent):
    """Reading post-tool-call-payload (TOOL-012..014). Seed 000 gives pre_tool_call's arguments but
    for post_tool_call only that it fires, "for blocked and failed calls too". Reference: ``{name,
    args, call_id, result, is_error}``. Variant: ``{"tool": name}`` only (no call id, no result)."""

    async def _after(self, t: Any, c: Call, span: str) -> None:
        original = self._dispatch

        async def dispatch(point: str, payload: Any, *args: Any, **kwargs: Any) -> Any:
            if point == "post_tool_call":
                payload = {"tool": c.name}
            return await original(point, payload, *args, **kwargs)

        self._dispatch = dispatch  # type: ignore[method-assign]
        try:
            await super()._after(t, c, span)
        finally:
            del self._dispatch


# =========================================================================== transform-blocked-result


@variant()
class AgentTransformSkipsBlocked(CommonAgent):
    """Reading transform-blocked-result (TOOL-015). Seed 000, each tool call: "Block(reason) → the
    tool does not run. The model gets Blocked: <reason> as an error result"; step 5 fires
    post_tool_call "for blocked and failed calls too"; step 6 "Fire transform_tool_result, which
    may replace the result text" (no such extension). Reference: a blocked call's result goes
    through transform_tool_result too. Variant: it does not (as hermes): post_tool_call fires,
    the model gets Blocked: <reason>."""

    async def _decide(self, t: Any, c: Call, span: str) -> bool:
        looked_up = c.content is None
        go = await super()._decide(t, c, span)
        if looked_up and not go and c.approval is None:
            self.__dict__.setdefault("_blocked", set()).add(id(c))
        return go

    async def _after(self, t: Any, c: Call, span: str) -> None:
        if id(c) not in self.__dict__.get("_blocked", set()):
            return await super()._after(t, c, span)
        self._blocked.discard(id(c))
        original = self._dispatch

        async def dispatch(point: str, payload: Any, *args: Any, **kwargs: Any) -> Any:
            if point == "transform_tool_result":
                return payload  # not dispatched: the result stays Blocked: <reason>
            return await original(point, payload, *args, **kwargs)

        self._dispatch = dispatch  # type: ignore[method-assign]
        try:
            await super()._after(t, c, span)
        finally:
            del self._dispatch


# =========================================================================== pre-llm-call-context


@variant()
class AgentContextPrefixed(CommonAgent):
    """Reading pre-llm-call-context (TURN-011/012). Seed 000 step 4: "Context it returns is put in
    front of the user message for the model only; it is never stored." Reference: separate user
    messages right before the user message. Variant: prefixed to the user message's text (context,
    blank line, text) in the request only."""

    def _request(self, t: Any) -> dict[str, Any]:
        if not t.context:
            return super()._request(t)
        messages = [{"role": "system", "text": self._system_text(t.turn.session_id)}]
        messages.extend(t.history[: t.user_index])
        user = t.history[t.user_index]
        prefix = "\n\n".join(m["text"] for m in t.context)
        messages.append({**user, "text": f"{prefix}\n\n{user.get('text', '')}"})
        messages.extend(t.history[t.user_index + 1 :])
        return {"messages": messages, "tools": list(self._model_tools), "params": {}}


@variant()
class AgentContextAsSystem(CommonAgent):
    """Reading pre-llm-call-context. Variant: each context text is a ``system`` message right
    before the user message (request only)."""

    def _request(self, t: Any) -> dict[str, Any]:
        saved = t.context
        t.context = [{"role": "system", "text": m["text"]} for m in saved]
        try:
            return super()._request(t)
        finally:
            t.context = saved


# =========================================================================== invalid-tag


def _valid(tag: str) -> bool:
    try:
        validate_tag(tag)
        return True
    except ConfigError:
        return False


@variant()
class InvalidTagsDropped(ReferenceAdapter):
    """Reading invalid-tag (TAG-002..005). Seed 001 gives the format and a "Valid? No" table but no
    consequence. Reference: refuses the configuration (ConfigError → Rejection). Variant: drops
    invalid tags silently, so they never reach a TurnInfo or a stored session; the valid ones are
    used unchanged."""

    async def run(self, scenario: Scenario, doubles: Doubles) -> RunResult:
        scenario = scenario.model_copy(deep=True)
        scenario.profile_tags = [t for t in scenario.profile_tags if _valid(t)]
        scenario.session_tags = [t for t in scenario.session_tags if _valid(t)]
        for m in scenario.user_messages:
            m.tags = [t for t in m.tags if _valid(t)]
        return await super().run(scenario, doubles)


# =========================================================================== interruption-notice


@variant()
class AgentInterruptionNotice(_InterruptionNotice, CommonAgent):
    """Reading interruption-notice, alternative kernel-notice (the agent face). Seed 000: "Nothing
    partial is saved from a cancelled model call." Variant: an interrupted model call leaves an
    assistant message of the agent's own ("Operation interrupted…", as hermes-agent stores)."""


# =========================================================================== tag-unicode-letters


def _unicode_tag(tag: str) -> str:
    """001's grammar read over Unicode: lower-case letters of any alphabet in the key, letters and
    digits of any alphabet in the value."""
    if not isinstance(tag, str) or tag.count(":") != 1 or any(ch.isspace() for ch in tag):
        return validate_tag(tag)
    key, value = tag.split(":")
    key_ok = bool(key) and all(ch in "_-" or ch.isdigit() or (ch.isalpha() and ch.islower()) for ch in key)
    value_ok = bool(value) and all(ch in "_-." or ch.isalnum() for ch in value)
    return tag if key_ok and value_ok else validate_tag(tag)


@variant()
class TagsUnicodeLetters(ReferenceAdapter):
    """Reading tag-unicode-letters (TAG-002, TAG-003). Seed 001: "Key: lower-case letters, digits,
    _ and -. Value: letters of either case, digits, _, - and ." with no alphabet named. Reference:
    ASCII only. Variant: letters and digits of any alphabet (``area:café``, ``área:x``)."""

    async def run(self, scenario: Scenario, doubles: Doubles) -> RunResult:
        import reference_kernel.tags as tags_module

        original = tags_module.validate_tag
        tags_module.validate_tag = _unicode_tag  # type: ignore[assignment]
        try:
            return await super().run(scenario, doubles)
        finally:
            tags_module.validate_tag = original  # type: ignore[assignment]


# =========================================================================== message-tags-existing-session


@variant()
class MessageTagsJoinTheSession(ReferenceAdapter):
    """Reading message-tags-existing-session (TAG-008). Seed 001: "A message that starts a new
    session can bring extra tags"; a later message's tags are not mentioned. Reference: ignored.
    Variant: added to the session's own tags, so the turns from then on carry them."""

    async def run(self, scenario: Scenario, doubles: Doubles) -> RunResult:
        from reference_kernel.tags import merge_tags

        per_message = [list(m.tags) for m in scenario.user_messages]

        class Joining(self._build["agent_cls"]):  # type: ignore[misc, name-defined]
            async def run_turn(self, session_id: str | None, user_message: str, **kwargs: Any) -> Any:
                k = self.__dict__.get("_message", 0)
                self.__dict__["_message"] = k + 1
                started = self.__dict__.setdefault("_started", set())
                extra = per_message[k] if k < len(per_message) else []
                if session_id in started and extra:
                    self._session_tags[session_id] = merge_tags(self._session_tags.get(session_id, []), extra)
                started.add(session_id)
                return await super().run_turn(session_id, user_message, **kwargs)

        original = self._build
        self._build = {**original, "agent_cls": Joining}
        try:
            return await super().run(scenario, doubles)
        finally:
            self._build = original
