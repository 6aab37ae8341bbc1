"""Commonagent profile (001): identities (IDENT), sessions (SESS), child turns (CHILD)."""
from __future__ import annotations

import random
import time
import uuid

from reference_kernel.agent import COMPLETED, CommonAgent
from reference_kernel.ids import _build
from reference_kernel.tags import merge_tags

from conformance.selftest.mutants.blind._reg import mutant


def _uuid4_factory(clock):
    return lambda: str(uuid.uuid4())


@mutant(["IDENT-005", "IDENT-006"], "any session/turn id", ids_factory=_uuid4_factory)
class AIdsUuid4(CommonAgent):
    """Seed 001: "IDs are UUID v7, so they sort by creation time." The mutant's id generator makes UUID v4.
    Realistic: `uuid.uuid4()` is the default everyone reaches for."""


def _uuid7_no_counter_factory(clock):
    rng = random.Random()

    def make():
        ms = max(0, int(clock() * 1000))
        return str(_build(ms, rng.getrandbits(12), rng.getrandbits(62)))

    return make


async def _child_turn(self, c, t, span, fix):
    refused = self._child_allowed(t.turn.depth)
    if refused:
        return refused, True
    goal = self._goal(c.args)
    session_id = await self.new_session(goal, t.turn.tags, source="subagent", parent_session_id=t.turn.session_id, title=goal)
    self._fresh.discard(session_id)
    child = fix(self, t.turn.child(session_id, self.ids()), t.turn)
    token = t.token.child()
    try:
        result = await self._turn(child, goal, token, True, span)
    finally:
        token.detach()
    if result.status != COMPLETED:
        return f"Sub-agent {result.status}: {result.error or ''}".rstrip(": "), True
    return result.reply or "", False


@mutant(["CHILD-005"], "a grandchild (delegation at depth 1)")
class AChildDepthAlwaysOne(CommonAgent):
    """Seed 001: TurnInfo::child makes the identity with "depth + 1". The mutant sets depth = 1 for every child
    (the field comment "1 for a child" taken literally). Realistic."""

    async def _delegate(self, c, t, span):
        return await _child_turn(self, c, t, span, lambda s, ch, p: ch.model_copy(update={"depth": 1}))


@mutant(["CHILD-004"], "a delegated child turn")
class AChildParentIsSession(CommonAgent):
    """Seed 001: "parent_turn_id set to the parent's turn". The mutant sets it to the parent's session id.
    Realistic: confusing the two parent links."""

    async def _delegate(self, c, t, span):
        return await _child_turn(self, c, t, span, lambda s, ch, p: ch.model_copy(update={"parent_turn_id": p.session_id}))


@mutant(["CHILD-002", "IDENT-001"], "a delegating parent session with session tags not in the profile")
class AChildTagsRecomputed(CommonAgent):
    """Seed 001: "TurnInfo::child makes the identity for a delegated turn: same profile, same tags". The mutant
    recomputes the child's tags from the profile alone (the child session has no own tags). Realistic:
    resolving tags for the new session the normal way."""

    async def _delegate(self, c, t, span):
        return await _child_turn(self, c, t, span, lambda s, ch, p: ch.model_copy(update={"tags": merge_tags(s.profile.tags)}))


@mutant(["SESS-005"], "a first message longer than 60 characters")
class ATitleEllipsis(CommonAgent):
    """Seed 001: "CommonOS titles a new session with the first 60 characters of its first message." The mutant
    titles long messages with 57 characters plus "...". Realistic UI truncation."""

    async def new_session(self, first_message, tags=(), **kwargs):
        if kwargs.get("title") is None and len(first_message) > 60:
            kwargs["title"] = first_message[:57] + "..."
        return await super().new_session(first_message, tags, **kwargs)


@mutant(["SESS-006"], "a child goal longer than 60 characters")
class AChildTitleTruncated(CommonAgent):
    """Seed 001: "A child session is titled with its goal." The mutant applies the 60-character rule to child
    titles too. Realistic: one title function for every session."""

    async def new_session(self, first_message, tags=(), **kwargs):
        if kwargs.get("title") is not None:
            kwargs["title"] = kwargs["title"][:60]
        return await super().new_session(first_message, tags, **kwargs)


@mutant(["SESS-004", "JOURNAL-001"], "a delegated child session")
class AChildSourceCli(CommonAgent):
    """Seed 001: NewSession.source "Where it came from: `web`, `cli`, `subagent`". The mutant creates child
    sessions with the default source. Realistic: forgetting to pass source."""

    async def new_session(self, first_message, tags=(), **kwargs):
        if kwargs.get("source") == "subagent":
            kwargs["source"] = "cli"
        return await super().new_session(first_message, tags, **kwargs)
