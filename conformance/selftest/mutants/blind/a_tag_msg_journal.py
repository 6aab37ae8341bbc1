"""Commonagent profile (001): tags (TAG), stored messages (MSG), journal (JOURNAL)."""
from __future__ import annotations

import json

from reference_kernel.adapter import ReferenceAdapter
from reference_kernel.agent import ERROR, CommonAgent
from reference_kernel.errors import ConfigError
from reference_kernel.tags import merge_tags

from conformance.selftest.mutants.blind._reg import mutant


@mutant(["TAG-008"], "profile tags that sort after session tags")
class ATagsUnsorted(CommonAgent):
    """Seed 001: "A turn's tags are the profile's tags ... plus the session's own tags, sorted, without
    duplicates." The mutant de-duplicates but keeps profile-then-session order. Realistic: `dict.fromkeys`."""

    async def _turn_tags(self, session_id):
        await super()._turn_tags(session_id)
        own = self._session_tags.get(session_id) or []
        return list(dict.fromkeys(list(self.profile.tags) + list(own)))


@mutant(["TAG-008"], "a tag present in both profile and session tags")
class ATagsDuplicated(CommonAgent):
    """Seed 001: "... sorted, without duplicates." The mutant sorts the concatenation without removing
    duplicates. Realistic: `sorted(a + b)`."""

    async def _turn_tags(self, session_id):
        await super()._turn_tags(session_id)
        own = self._session_tags.get(session_id) or []
        return sorted(list(self.profile.tags) + list(own))


def _no_dot(tags):
    for tag in tags:
        if "." in tag.split(":", 1)[-1]:
            raise ConfigError("tags", f"invalid tag {tag!r}: invalid character '.' in value")


@mutant(["TAG-001", "TAG-003"], "a tag whose value contains '.' (project:Site-v2.1)")
class ATagValueNoDot(CommonAgent):
    """Seed 001: "Value: letters of either case, digits, _, - and .." and `project:Site-v2.1` is valid. The
    mutant refuses '.' in values. Realistic: a regex `[A-Za-z0-9_-]+` reused for keys and values."""

    def __init__(self, profile, *a, **k):
        _no_dot(profile.tags)
        super().__init__(profile, *a, **k)

    async def new_session(self, first_message, tags=(), **kwargs):
        _no_dot(tags)
        return await super().new_session(first_message, tags, **kwargs)


class ATagKeyLowercased(ReferenceAdapter):
    """Seed 001: "Key: lower-case letters, digits, _ and -"; `Area:x` is "No: upper case in the key". The mutant
    normalises keys to lower case and accepts the tag. Realistic: lenient input normalisation."""

    PROFILE = "commonagent"

    async def run(self, scenario, doubles):
        scenario = scenario.model_copy(deep=True)

        def low(tags):
            return [t.split(":", 1)[0].lower() + ":" + t.split(":", 1)[1] if t.count(":") == 1 else t for t in tags]

        scenario.profile_tags = low(scenario.profile_tags)
        scenario.session_tags = low(scenario.session_tags)
        for m in scenario.user_messages:
            m.tags = low(m.tags)
        return await super().run(scenario, doubles)


mutant(["TAG-002"], "a tag with an upper-case key")(ATagKeyLowercased)


@mutant(["MSG-004", "MSG-001"], "a successful tool result (is_error false)")
class AToolResultOmitsFalseFlag(CommonAgent):
    """Seed 001: `{ "role": "tool_result", "call_id": "c1", "content": "...", "is_error": false }`. The mutant
    omits is_error when it is false. Realistic: `exclude_defaults` serialisation."""

    @staticmethod
    def _tool_result(c):
        m = {"role": "tool_result", "call_id": c.id, "content": c.content or ""}
        if c.is_error:
            m["is_error"] = True
        return m


@mutant(["MSG-003"], "an assistant message with tool calls")
class AArgsStoredAsString(CommonAgent):
    """Seed 001: `{ "role": "assistant", "tool_calls": [{ "id": "c1", "name": "weather", "args": { "city": "Charleston" } }] }`
    - args is a JSON object. The mutant stores args as the raw JSON string. Realistic: OpenAI's wire format
    (`arguments` is a string)."""

    async def _store(self, t, message):
        if message.get("role") == "assistant" and message.get("tool_calls"):
            t.history.append(message)
            stored = {**message, "tool_calls": [{**c, "args": json.dumps(c.get("args"))} for c in message["tool_calls"]]}
            await self.journal.append_message(t.turn, stored)
            return
        await super()._store(t, message)


@mutant(["JOURNAL-005"], "a turn ending with status error")
class ANoFinishOnError(CommonAgent):
    """Seed 000 step 6 / 001 Journal: "The final status is stored" via finish_turn. The mutant does not finish
    the journal turn when it ended in error. Realistic: the error path skips bookkeeping."""

    async def _finish_turn(self, t):
        if t.status == ERROR:
            return
        await super()._finish_turn(t)


@mutant(["JOURNAL-004"], "a tool with risk other than the default")
class ARiskNotRecorded(CommonAgent):
    """Seed 001: "ToolCallRecord holds the call's name, arguments, result, error flag, risk, duration and
    approval." The mutant records no risk. Realistic: a field forgotten in the record builder."""

    def _record(self, c):
        return super()._record(c).model_copy(update={"risk": None})

