"""Variants of the reference kernel that the seeds allow: each must pass every requirement.

The reference kernel itself is the first entry (doom-loop threshold 3, the soft-limit capability
offered with a hard default, the in-memory journal).
"""

from __future__ import annotations

import hashlib
import itertools
import random
import threading
from collections.abc import Callable
from typing import Any

from conformance.boundary.adapter import Doubles, RunResult
from conformance.boundary.scenario import Scenario
from conformance.selftest.registry import flag, variant
from reference_kernel.adapter import CAPABILITIES, ReferenceAdapter
from reference_kernel.doom import canonical_json
from reference_kernel.agent import CommonAgent
from reference_kernel.ids import _build
from reference_kernel.journal import MemoryJournal
from reference_kernel.kernel import DOOM_LOOP, Kernel
from reference_kernel.sqlite_journal import SqliteJournal

flag("variant", "reference", __name__, "The reference kernel as shipped (doom threshold 3, soft limits offered, hard by default).")


class _DefaultThreshold(ReferenceAdapter):
    threshold = 5

    async def run(self, scenario: Scenario, doubles: Doubles) -> RunResult:
        if scenario.doom_loop.threshold is None:
            doom = scenario.doom_loop.model_copy(update={"threshold": self.threshold})
            scenario = scenario.model_copy(update={"doom_loop": doom})
        return await super().run(scenario, doubles)


@variant()
class DoomDefaultFive(_DefaultThreshold):
    """Default doom-loop threshold 5 (003 allows 3 to 5)."""


def _v7_counter_in_rand_b(clock: Callable[[], float]) -> Callable[[], str]:
    """UUID v7 with rand_a zero and a 62-bit counter in rand_b (RFC 9562 method 2)."""
    lock = threading.Lock()
    state = {"ms": -1, "n": 0}
    rng = random.Random()

    def next_id() -> str:
        with lock:
            ms = max(int(clock() * 1000), state["ms"])
            if ms > state["ms"]:
                state["ms"], state["n"] = ms, rng.getrandbits(40)
            else:
                state["n"] += 1
            return str(_build(state["ms"], 0, state["n"]))

    return next_id


flag("variant", "ids_v7_counter_in_rand_b", __name__, "Another UUID v7 generator: the per-millisecond counter in rand_b.",
     ids_factory=_v7_counter_in_rand_b)


@variant()
class OtherLimitWording(Kernel):
    """Another wording of the limit-reached instruction."""

    def _limit_instruction(self, limit: str) -> str:
        return f"[{limit}] You have run out of budget for this task. Without using any tool, answer now with what you know."


@variant()
class LimitInstructionAsSystem(Kernel):
    """The limit-reached instruction is sent as a system message (still not part of the history)."""

    def _build_request(self, run: Any, out: Any, limit: str | None) -> dict[str, Any]:
        request = super()._build_request(run, out, limit)
        if limit is not None and request["messages"] and request["messages"][-1].get("role") == "user":
            request["messages"][-1] = {"role": "system", "text": request["messages"][-1]["text"]}
        return request


OTHER_DOOM = "error_repeated_tool_call"


@variant(doom_loop_subtype=OTHER_DOOM)
class OtherDoomSubtype(Kernel):
    """Another doom-loop subtype name, declared in AdapterInfo."""

    def _check_doom(self, run: Any, calls: list[Any]) -> str | None:
        return OTHER_DOOM if super()._check_doom(run, calls) == DOOM_LOOP else None


@variant()
class PrefetchedContext(Kernel):
    """The next turn's context-assemble payload is built while the results are stored (unobservable without a hook)."""

    async def _append_results(self, run: Any, message: dict[str, Any], calls: list[Any]) -> None:
        await super()._append_results(run, message, calls)
        if not self.hooks.at("context-assemble"):
            self.__dict__.setdefault("_prefetched", {})[id(run)] = {"history": run.history}

    async def _context_assemble(self, run: Any) -> Any:
        ready = self.__dict__.get("_prefetched", {}).pop(id(run), None)
        if ready is not None and not self.hooks.at("context-assemble"):
            fresh = await super()._context_assemble(run)
            return {**fresh, **ready}
        return await super()._context_assemble(run)


@variant()
class PostToolCallsByKind(Kernel):
    """post-tool-call dispatched grouped by kind (data sources, interactive, resources); a terminal call still ends right after its own."""

    async def _post_tool_calls(self, run: Any, calls: list[Any]) -> bool:
        rank = {"data_source": 0, "interactive": 1, "resource": 2}
        ordered = sorted(calls, key=lambda c: rank.get(c.entry.spec.kind, 3) if c.entry else 3)
        return await super()._post_tool_calls(run, ordered)


flag("variant", "no_soft_limits", __name__, "Soft limits not offered (the capability left out).",
     capabilities=[c for c in CAPABILITIES if c != "soft_limits"])
flag("variant", "sqlite_journal", __name__, "The SQLite journal (in memory) instead of the memory journal.",
     journal_factory=lambda ids: SqliteJournal(":memory:", ids))


class _ExtraFields(MemoryJournal):
    """A journal that keeps more than 001 asks for: a sequence number and a timestamp on every row."""

    _seq = itertools.count(1)

    async def dump(self) -> dict[str, Any]:
        data = await super().dump()
        for table in ("sessions", "turns", "messages", "tool_calls", "usage"):
            for row in data.get(table, []):
                if isinstance(row, dict):
                    row.setdefault("x_seq", next(self._seq))
                    row.setdefault("x_stored_at", "2026-11-30T00:00:00Z")
        return data


flag("variant", "journal_extra_fields", __name__, "A journal whose rows carry extra fields (sequence number, timestamp).",
     journal_factory=lambda ids: _ExtraFields(ids))

flag("variant", "minimal_capabilities", __name__, "No optional capability declared (max_cost_usd and max_wall_clock_s are SHOULDs, sub-agents and soft limits optional).",
     capabilities=[])


class _WideWindow(ReferenceAdapter):
    async def run(self, scenario: Scenario, doubles: Doubles) -> RunResult:
        doom = scenario.doom_loop
        if doom.window_size is None:
            threshold = doom.threshold if doom.threshold is not None else 3
            scenario = scenario.model_copy(update={"doom_loop": doom.model_copy(update={"window_size": max(10, threshold)})})
        return await super().run(scenario, doubles)


@variant()
class DoomWideWindow(_WideWindow):
    """A doom-loop window of 10 calls by default (003: window_size MUST default >= threshold)."""


@variant()
class DoomOtherHash(Kernel):
    """Another hash function over the same canonical form (blake2b instead of sha256)."""

    def _check_doom(self, run: Any, calls: list[Any]) -> str | None:
        for c in calls:
            if c.entry is not None and c.entry.spec.kind != "interactive":
                canonical = canonical_json(c.raw if c.raw is not None else c.call.get("args"))
                digest = hashlib.blake2b(f"{c.name}\0{canonical}".encode(), digest_size=16).hexdigest()
                run.doom.record("*", "blake2b:" + digest)
        return DOOM_LOOP if run.doom.fired() else None


@variant()
class AgentOtherPromptTiers(CommonAgent):
    """Other wording of the context and volatile prompt tiers (000 fixes their order, not their text)."""

    def _context_tier(self, session_id: str) -> str:
        return f"[session {session_id} of profile {self.profile.profile_id}]"

    def _volatile_tier(self) -> str:
        return f"[now: {self.clock():.0f}]"
