"""Commonagent profile (001): identity and ids (IDENT, CHILD), sessions (SESS), tags (TAG), stored
messages (MSG) and the journal (JOURNAL)."""
from __future__ import annotations

import contextlib
import random
import re
import threading

import reference_kernel.tags as tags_module
from reference_kernel.adapter import ReferenceAdapter
from reference_kernel.agent import CommonAgent
from reference_kernel.errors import ConfigError
from reference_kernel.ids import _build

from conformance.selftest.mutants.blind._reg import mutant
from conformance.selftest.mutants.blind2._shared import TurnAs


@mutant(["IDENT-001"], "hooks fired inside a delegated child turn")
class AChildHooksSeeParentTurn(CommonAgent):
    """Seed 001: "Every hook, tool and journal call receives a TurnInfo. It says who is running and where." The
    mutant's hooks inside a child turn receive the parent's TurnInfo. Realistic: the hook context captured
    once per top-level turn."""

    def __init__(self, *a, **k):
        super().__init__(*a, **k)
        self._by_id: dict[str, object] = {}

    async def _dispatch(self, point, payload, turn, parent_span, on_outcome=None):
        self._by_id.setdefault(turn.turn_id, turn)
        if turn.parent_turn_id is not None and turn.parent_turn_id in self._by_id:
            turn = self._by_id[turn.parent_turn_id]
        return await super()._dispatch(point, payload, turn, parent_span, on_outcome)


# cache_turns=False: the reference adapter caches one TurnInfo dict per turn_id, which would hand the
# tools the hooks' TurnInfo (tags included) and hide the slip (as for the IDENT/TAG mutants in records.py).
@mutant(["IDENT-002", "TAG-006"], "a tool call in a turn with tags", cache_turns=False)
class AToolsSeeNoTags(CommonAgent):
    """Seed 001: "Every hook, tool and journal call receives a TurnInfo"; "CommonAgent copies them [tags] onto
    every turn". The mutant hands tools a TurnInfo without tags. Realistic: a slim tool context."""

    async def _execute(self, c, ctx, parent_span):
        await super()._execute(c, TurnAs(ctx, ctx.turn.model_copy(update={"tags": []})), parent_span)


@mutant(["JOURNAL-002", "IDENT-003"], "a delegated child turn (its start_turn record inspected)")
class AChildStartTurnWithoutParent(CommonAgent):
    """Seed 001: `async fn start_turn(&self, turn: &TurnInfo)` - the turn's own TurnInfo, parent_turn_id and
    depth included. The mutant starts a child turn in the journal without them. Realistic."""

    def __init__(self, *a, **k):
        super().__init__(*a, **k)
        inner = self.journal.start_turn

        async def start_turn(turn):
            await inner(turn.model_copy(update={"parent_turn_id": None, "depth": 0}))

        self.journal.start_turn = start_turn


def _v7_little_endian_time(clock):
    """UUID v7 whose 48-bit millisecond timestamp is written little-endian (a counter in rand_a)."""
    lock, state = threading.Lock(), {"ms": -1, "n": 0}

    def next_id():
        with lock:
            ms = int(clock() * 1000)
            state["n"] = state["n"] + 1 if ms == state["ms"] else 0
            state["ms"] = ms
            swapped = int.from_bytes(ms.to_bytes(6, "big"), "little")
            return str(_build(swapped, state["n"] & 0xFFF, random.getrandbits(62)))

    return next_id


@mutant(["IDENT-006", "IDENT-005"], "ids made in different milliseconds", ids_factory=_v7_little_endian_time)
class AIdsV7LittleEndianTime(CommonAgent):
    """Seed 001: "IDs are UUID v7, so they sort by creation time." The mutant writes the timestamp bytes in
    host (little-endian) order, so ids of later milliseconds do not sort after earlier ones. Realistic:
    `struct.pack("<Q", ms)`."""


def _v7_seconds(clock):
    """UUID v7 whose 48-bit timestamp holds seconds, not milliseconds (a counter keeps them sorted)."""
    lock, state = threading.Lock(), {"s": -1, "n": 0}

    def next_id():
        with lock:
            s = int(clock())
            state["n"] = state["n"] + 1 if s == state["s"] else 0
            state["s"] = s
            return str(_build(s, state["n"] & 0xFFF, random.getrandbits(62)))

    return next_id


@mutant(["IDENT-005"], "any id (its timestamp compared with the clock)", ids_factory=_v7_seconds)
class AIdsV7Seconds(CommonAgent):
    """Seed 001: "IDs are UUID v7" - whose timestamp is Unix milliseconds (RFC 9562). The mutant puts seconds
    there. Realistic: `int(time.time())`."""


def _v7_wrong_variant(clock):
    from reference_kernel.ids import IdGenerator

    gen = IdGenerator(clock)

    def next_id():
        s = gen()
        return s[:19] + "c" + s[20:]  # variant nibble 0b11xx: Microsoft, not RFC

    return next_id


@mutant(["IDENT-005"], "any id (its variant bits inspected)", ids_factory=_v7_wrong_variant)
class AIdsV7WrongVariant(CommonAgent):
    """Seed 001: "IDs are UUID v7" - RFC 9562 layout, variant 10. The mutant's ids have variant bits 110.
    Realistic: a hand-rolled encoder that sets the wrong bits."""


@mutant(["SESS-005"], "a first message with non-ASCII characters before the 60th character")
class ATitleUtf8Bytes(CommonAgent):
    """Seed 001: "CommonOS titles a new session with the first 60 characters of its first message." The mutant
    cuts at 60 bytes of UTF-8. Realistic: a VARCHAR(60) byte limit."""

    async def new_session(self, first_message, tags=(), **kwargs):
        if kwargs.get("title") is None:
            kwargs["title"] = first_message.encode("utf-8")[:60].decode("utf-8", errors="ignore")
        return await super().new_session(first_message, tags, **kwargs)


class _StoredAs(CommonAgent):
    """Messages stored in the journal through ``shape`` (the live history keeps the 001 shape)."""

    @staticmethod
    def shape(message):
        return message

    async def _store(self, t, message):
        t.history.append(message)
        await self.journal.append_message(t.turn, self.shape(dict(message)))


@mutant(["MSG-004", "MSG-001"], "any tool result")
class AToolResultTextKey(_StoredAs):
    """Seed 001: `{ "role": "tool_result", "call_id": "c1", "content": "...", "is_error": false }`. The mutant
    stores the result under "text" (like the other roles). Realistic."""

    @staticmethod
    def shape(m):
        if m.get("role") == "tool_result":
            m["text"] = m.pop("content", "")
        return m


@mutant(["MSG-002", "MSG-001"], "any user message")
class AUserContentKey(_StoredAs):
    """Seed 001: `{ "role": "user", "text": "Do I need an umbrella?" }`. The mutant stores the user's text under
    "content" (the OpenAI shape). Realistic."""

    @staticmethod
    def shape(m):
        if m.get("role") == "user":
            m["content"] = m.pop("text", "")
        return m


@mutant(["MSG-005", "MSG-001"], "a final answer")
class AFinalAnswerContentKey(_StoredAs):
    """Seed 001: `{ "role": "assistant", "text": "Bring an umbrella: ..." }`. The mutant stores the answer under
    "content". Realistic."""

    @staticmethod
    def shape(m):
        if m.get("role") == "assistant" and not m.get("tool_calls"):
            m["content"] = m.pop("text", "")
        return m


@mutant(["MSG-003", "MSG-001"], "an assistant message with tool calls")
class AToolCallsArgumentsKey(_StoredAs):
    """Seed 001: `"tool_calls": [{ "id": "c1", "name": "weather", "args": { "city": "Charleston" } }]`. The
    mutant stores the arguments under "arguments". Realistic: the OpenAI field name."""

    @staticmethod
    def shape(m):
        if m.get("tool_calls"):
            m["tool_calls"] = [{"id": c.get("id"), "name": c.get("name"), "arguments": c.get("args")} for c in m["tool_calls"]]
        return m


@mutant(["MSG-004"], "a tool result (its call_id compared with the call's id)")
class AToolResultCallIdByIndex(CommonAgent):
    """Seed 001: the tool_result's `"call_id": "c1"` is the id of the call it answers. The mutant numbers the
    results itself. Realistic: ids made up when the provider's id was missing."""

    @staticmethod
    def _tool_result(c):
        return {"role": "tool_result", "call_id": f"call_{c.index}", "content": c.content or "", "is_error": c.is_error}


_KEY = re.compile(r"^[a-z0-9_-]+$")


class _Grammar(ReferenceAdapter):
    """The tag check swapped for ``check`` (ConfigError when it refuses) during a run."""

    PROFILE = "commonagent"

    @staticmethod
    def check(tag):
        return tag

    @contextlib.contextmanager
    def _patched(self):
        original = tags_module.validate_tag

        def validate(tag):
            if not isinstance(tag, str) or tag.count(":") != 1 or any(ch.isspace() for ch in tag):
                return original(tag)
            if not self.check(tag):
                raise ConfigError("tags", f"invalid tag {tag!r}")
            return tag

        tags_module.validate_tag = validate
        try:
            yield
        finally:
            tags_module.validate_tag = original

    async def run(self, scenario, doubles):
        with self._patched():
            return await super().run(scenario, doubles)


# a_tag_value_unicode (a value check by str.isalnum, accepting area:café) was dropped: 001 names no
# alphabet for "letters of either case", and reading tag-unicode-letters accepts both (variant
# tags_unicode_letters).


class ATagKeyDot(_Grammar):
    """Seed 001: "Key: lower-case letters, digits, _ and -." The mutant uses one character class for key and
    value, so a key may hold '.' (and upper case is still refused). Realistic."""

    @staticmethod
    def check(tag):
        key, value = tag.split(":")
        return bool(re.match(r"^[a-z0-9_.-]+$", key)) and bool(re.match(r"^[A-Za-z0-9_.-]+$", value))


mutant(["TAG-002"], "a tag whose key holds '.' (a.b:x)")(ATagKeyDot)


class ATagKeyNoDash(_Grammar):
    """Seed 001: "Key: lower-case letters, digits, _ and -." The mutant refuses '-' in keys (`\\w+`), so a valid
    tag such as `cost-center:x` is refused. Realistic."""

    @staticmethod
    def check(tag):
        key, value = tag.split(":")
        return bool(re.match(r"^[a-z0-9_]+$", key)) and bool(re.match(r"^[A-Za-z0-9_.-]+$", value))


mutant(["TAG-001"], "a valid tag whose key holds '-' (cost-center:x)")(ATagKeyNoDash)


class ATagEmptyValue(_Grammar):
    """Seed 001: "`area` No: no value" - a tag needs a value. The mutant accepts `area:` (one colon, nothing
    after it). Realistic: `[A-Za-z0-9_.-]*`."""

    @staticmethod
    def check(tag):
        key, value = tag.split(":")
        return bool(_KEY.match(key)) and bool(re.match(r"^[A-Za-z0-9_.-]*$", value))

    @contextlib.contextmanager
    def _patched(self):
        original = tags_module.validate_tag

        def validate(tag):
            if isinstance(tag, str) and tag.count(":") == 1 and not tag.split(":")[1] and _KEY.match(tag.split(":")[0]):
                return tag
            return original(tag)

        tags_module.validate_tag = validate
        try:
            yield
        finally:
            tags_module.validate_tag = original


mutant(["TAG-004", "TAG-003"], "a tag with a colon and an empty value (area:)")(ATagEmptyValue)
