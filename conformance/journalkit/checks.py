"""The kit's checks: scenarios and Hypothesis properties on a Journal alone.

Each check is a plain function ``check(kit)`` registered with the requirement id it judges; it
raises ``ConformanceFailure`` (the journal broke its contract), ``Blocked`` (another requirement's
subject did not happen) or returns the evidence that its situation happened. Journal calls go
through ``kit`` (:class:`conformance.journalkit.runner.Kit`), which runs them on one event loop
under a hard timeout, so Hypothesis drives async journals from plain functions.
"""

from __future__ import annotations

import json
import os
import random
import signal
import subprocess
import sys
import uuid
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import anyio
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from hypothesis.stateful import (
    RuleBasedStateMachine,
    initialize,
    invariant,
    precondition,
    rule,
    run_state_machine_as_test,
)

from conformance.errors import Blocked, ConformanceFailure, show
from reference_kernel.ids import is_uuid7
from reference_kernel.records import NewSession, ToolCallRecord, TurnInfo

#: What a check is given: conformance.journalkit.runner.Kit (not imported: the runner imports this).
Kit = Any


@dataclass(frozen=True)
class CheckDef:
    req: str
    name: str
    fn: Callable[[Kit], list[str]]


CHECKS: list[CheckDef] = []


def check(req: str, name: str) -> Callable[[Callable[[Kit], list[str]]], Callable[[Kit], list[str]]]:
    def register(fn: Callable[[Kit], list[str]]) -> Callable[[Kit], list[str]]:
        CHECKS.append(CheckDef(req, name, fn))
        return fn

    return register


def expect(ok: bool, what: str, expected: Any, observed: Any) -> None:
    if not ok:
        raise ConformanceFailure(what, expected, observed)


def canon(value: Any) -> str:
    """JSON text with sorted keys: equal for the same JSON value (a jsonb column may reorder keys;
    ``1`` and ``1.0`` and ``true`` stay apart)."""
    return json.dumps(value, sort_keys=True, ensure_ascii=False)


def settings_for(kit: Kit, examples: int) -> settings:
    return settings(max_examples=max(1, int(examples * kit.examples_scale)), deadline=None, database=None,
                    derandomize=True, suppress_health_check=list(HealthCheck), print_blob=False)


def turn_of(session_id: str, turn_id: str | None = None, **kw: Any) -> TurnInfo:
    return TurnInfo(profile_id="p", session_id=session_id, turn_id=turn_id or str(uuid.uuid4()), **kw)


def new_session(**kw: Any) -> NewSession:
    kw.setdefault("profile_id", "p")
    kw.setdefault("source", "cli")
    return NewSession(**kw)


# --------------------------------------------------------------------------- strategies

TEXT = st.text(st.characters(blacklist_categories=("Cs",)), max_size=40)
JSON_SCALARS = st.none() | st.booleans() | st.integers(-(2**53), 2**53) | st.floats(allow_nan=False, allow_infinity=False) | TEXT
JSON_VALUES = st.recursive(JSON_SCALARS, lambda inner: st.lists(inner, max_size=4) | st.dictionaries(TEXT, inner, max_size=4), max_leaves=12)
TOOL_CALL = st.fixed_dictionaries({"id": TEXT, "name": TEXT, "args": st.dictionaries(TEXT, JSON_VALUES, max_size=3)})
MESSAGES = st.one_of(
    st.fixed_dictionaries({"role": st.just("user"), "text": TEXT}),
    st.fixed_dictionaries({"role": st.just("assistant")}, optional={"text": TEXT, "tool_calls": st.lists(TOOL_CALL, max_size=3)}),
    st.fixed_dictionaries({"role": st.just("tool_result"), "call_id": TEXT, "content": TEXT, "is_error": st.booleans()}),
    st.dictionaries(TEXT, JSON_VALUES, max_size=4).map(lambda d: {**d, "role": "user"}),
)


# --------------------------------------------------------------------------- JKIT-001, -002


@check("JKIT-001", "session ids are UUIDv7, distinct, in creation order")
def session_ids(kit: Kit) -> list[str]:
    j = kit.journal()
    ids = [j.create_session(new_session()) for _ in range(20)]
    for sid in ids:
        expect(isinstance(sid, str) and is_uuid7(sid), "create_session returns a UUIDv7", "xxxxxxxx-xxxx-7xxx-[89ab]xxx-…", sid)
    expect(len(set(ids)) == len(ids), "each session gets a new id", "20 distinct ids", sorted(ids))
    stamps = [uuid.UUID(s).int >> 80 for s in ids]
    expect(stamps == sorted(stamps), "ids sort by creation time (their 48-bit timestamps)", "non-decreasing", stamps)
    return [f"{len(ids)} sessions created, ids UUIDv7 and time-ordered"]


@check("JKIT-002", "a session's fields read back as created (Hypothesis)")
def session_fields(kit: Kit) -> list[str]:
    j = kit.journal()
    parent = j.create_session(new_session())
    seen = []

    @settings_for(kit, 30)
    @given(profile=TEXT, source=st.sampled_from(["web", "cli", "subagent"]), title=st.none() | TEXT,
           tags=st.lists(TEXT.map(lambda t: f"k:{t}"), max_size=4), child=st.booleans())
    def prop(profile: str, source: str, title: str | None, tags: list[str], child: bool) -> None:
        made = new_session(profile_id=profile, source=source, title=title, tags=tags, parent_session_id=parent if child else None)
        sid = j.create_session(made)
        got = j.get_session(sid)
        want = {"id": sid, "profile_id": profile, "source": source, "title": title, "tags": tags,
                "parent_session_id": parent if child else None}
        expect(isinstance(got, dict), "get_session returns the session", "a dict", got)
        shown = {k: got.get(k) for k in want}  # extra fields are the journal's own business
        expect(canon(shown) == canon(want), "the session reads back as created", want, shown)
        seen.append(sid)

    prop()
    return [f"{len(seen)} sessions read back field by field (profile, source, title, tags, parent)"]


# --------------------------------------------------------------------------- JKIT-003, -004


@check("JKIT-003", "history is every message as appended, oldest first (Hypothesis)")
def history_round_trip(kit: Kit) -> list[str]:
    j = kit.journal()
    counted = [0]

    @settings_for(kit, 40)
    @given(messages=st.lists(MESSAGES, min_size=1, max_size=8))
    def prop(messages: list[dict[str, Any]]) -> None:
        sid = j.create_session(new_session())
        t = turn_of(sid)
        j.start_turn(t)
        for m in messages:
            j.append_message(t, m)
        got = j.load_history(sid)
        expect([canon(m) for m in got] == [canon(m) for m in messages], "load_history is the messages as appended, oldest first", messages, got)
        counted[0] += len(messages)

    prop()
    return [f"{counted[0]} generated messages read back in order"]


@check("JKIT-003", "large and Unicode payloads come back whole")
def large_payloads(kit: Kit) -> list[str]:
    j = kit.journal()
    sid = j.create_session(new_session())
    t = turn_of(sid)
    j.start_turn(t)
    big = ("aé☃𝄞\n\"\\\u0001 \u0000" * (1 << 17))[: 1 << 20]
    messages = [{"role": "user", "text": big}, {"role": "assistant", "text": "ok ✓ 漢字 \u200d👩‍👩‍👧"},
                {"role": "tool_result", "call_id": "c", "content": "x" * 300_000, "is_error": False}]
    for m in messages:
        j.append_message(t, m)
    got = j.load_history(sid)
    expect(len(got) == 3, "three messages read back", 3, len(got))
    for want, have in zip(messages, got):
        expect(canon(want) == canon(have), "a large or Unicode message comes back whole", f"{len(canon(want))} chars", f"{len(canon(have))} chars: {show(have, 120)}")
    return ["a 1 Mi-character Unicode message and a 300 k one read back whole"]


@check("JKIT-004", "another session's messages never appear in a history")
def no_leak(kit: Kit) -> list[str]:
    j = kit.journal()
    sids = [j.create_session(new_session()) for _ in range(3)]
    turns = [turn_of(s) for s in sids]
    for t in turns:
        j.start_turn(t)
    for i in range(4):
        for k, t in enumerate(turns):
            j.append_message(t, {"role": "user", "text": f"s{k}-m{i}"})
    empty = j.create_session(new_session())
    for k, sid in enumerate(sids):
        texts = [m.get("text") for m in j.load_history(sid)]
        expect(all(x.startswith(f"s{k}-") for x in texts if isinstance(x, str)), "a history holds its own session's messages only", f"s{k}-*", texts)
    expect(j.load_history(empty) == [], "a session with no message has an empty history", [], j.load_history(empty))
    return ["3 sessions written interleaved, 4 messages each, and an empty one: each history its own"]


# --------------------------------------------------------------------------- JKIT-005, -006, -007


def turns_of(j: Any) -> dict[str, dict[str, Any]]:
    dump = j.dump()
    return {t["turn"]["turn_id"]: t for t in dump.get("turns", []) if isinstance(t, dict) and isinstance(t.get("turn"), dict)}


@check("JKIT-005", "start_turn records the TurnInfo")
def turn_info(kit: Kit) -> list[str]:
    j = kit.journal()
    sid = j.create_session(new_session())
    child = j.create_session(new_session(source="subagent", parent_session_id=sid))
    t = turn_of(sid, tags=["client:acme", "area:home"])
    ct = t.child(child, str(uuid.uuid4()))
    j.start_turn(t)
    j.start_turn(ct)
    stored = turns_of(j)
    for want in (t, ct):
        got = stored.get(want.turn_id, {}).get("turn")
        expect(got is not None and canon({k: got.get(k) for k in want.as_dict()}) == canon(want.as_dict()),
               "the turn's TurnInfo is recorded as given", want.as_dict(), got)
    return ["a top-level turn and a child turn (depth 1, parent turn, copied tags) recorded as given"]


@check("JKIT-006", "finish_turn records the final status")
def turn_status(kit: Kit) -> list[str]:
    j = kit.journal()
    sid = j.create_session(new_session())
    statuses = ["completed", "error", "cancelled", "max_iterations"]
    turns = [turn_of(sid) for _ in statuses]
    open_turn = turn_of(sid)
    for t in [*turns, open_turn]:
        j.start_turn(t)
    expect(turns_of(j).get(open_turn.turn_id, {}).get("status") is None, "a started turn has no status yet", None, turns_of(j).get(open_turn.turn_id))
    for t, status in zip(turns, statuses):
        j.finish_turn(t, status)
    stored = turns_of(j)
    for t, status in zip(turns, statuses):
        got = stored.get(t.turn_id, {}).get("status")
        expect(got == status, "finish_turn records the final status", status, got)
    expect(stored.get(open_turn.turn_id, {}).get("status") is None, "an unfinished turn stays without status", None, stored.get(open_turn.turn_id))
    return [f"{len(statuses)} turns finished ({', '.join(statuses)}), one left open"]


@check("JKIT-007", "a ToolCallRecord keeps every field (Hypothesis)")
def tool_calls(kit: Kit) -> list[str]:
    j = kit.journal()
    sid = j.create_session(new_session())
    t = turn_of(sid)
    j.start_turn(t)
    made: list[ToolCallRecord] = []

    @settings_for(kit, 30)
    @given(name=TEXT, args=st.dictionaries(TEXT, JSON_VALUES, max_size=3), result=TEXT, is_error=st.booleans(),
           risk=st.none() | st.sampled_from(["low", "medium", "high"]), duration=st.floats(0, 1e7, allow_nan=False),
           approval=st.none() | st.sampled_from(["approved", "denied", "auto"]))
    def prop(name: str, args: dict[str, Any], result: str, is_error: bool, risk: str | None, duration: float, approval: str | None) -> None:
        record = ToolCallRecord(call_id=str(uuid.uuid4()), name=name, args=args, result=result, is_error=is_error,
                                risk=risk, duration_ms=duration, approval=approval)
        j.record_tool_call(t, record)
        made.append(record)

    prop()
    rows = {r.get("call_id"): r for r in j.dump().get("tool_calls", []) if isinstance(r, dict)}
    for record in made:
        got = rows.get(record.call_id)
        want = {**record.as_dict(), "session_id": sid, "turn_id": t.turn_id}
        shown = {k: got.get(k) for k in want} if got else None
        expect(shown is not None and canon(shown) == canon(want), "the tool call is recorded with every field (duration in ms)", want, shown)
    return [f"{len(made)} tool calls read back field by field"]


# --------------------------------------------------------------------------- JKIT-008


@check("JKIT-008", "64 tasks append to 16 sessions at once: nothing lost, order kept")
def concurrent_appends(kit: Kit) -> list[str]:
    j = kit.journal()
    sessions, writers, per = 16, 64, 10
    sids = [j.create_session(new_session()) for _ in range(sessions)]
    turns = [turn_of(s) for s in sids]
    for t in turns:
        j.start_turn(t)

    async def run(journal: Any) -> None:
        # every writer waits for all to be ready: the appends really overlap
        ready = anyio.Event()
        count = [0]

        async def writer(w: int) -> None:
            count[0] += 1
            if count[0] == writers:
                ready.set()
            await ready.wait()
            t = turns[w % sessions]
            for i in range(per):
                await journal.append_message(t, {"role": "user", "text": f"w{w}-{i}"})

        async with anyio.create_task_group() as tg:
            for w in range(writers):
                tg.start_soon(writer, w)

    kit.run(run)
    for k, sid in enumerate(sids):
        texts = [m.get("text") for m in j.load_history(sid)]
        for w in range(k, writers, sessions):
            mine = [x for x in texts if isinstance(x, str) and x.startswith(f"w{w}-")]
            expect(mine == [f"w{w}-{i}" for i in range(per)], f"writer {w}'s appends are all there, in order", per, mine)
        expect(len(texts) == per * (writers // sessions), "the session holds exactly its writers' messages", per * (writers // sessions), len(texts))
    return [f"{writers} concurrent tasks × {per} appends into {sessions} sessions, all read back in order"]


# --------------------------------------------------------------------------- stateful


@check("JKIT-003", "any sequence of operations reads back as the model journal (stateful)")
def stateful(kit: Kit) -> list[str]:
    steps = [0]

    class JournalMachine(RuleBasedStateMachine):
        @initialize()
        def open(self) -> None:
            self.j = kit.journal()
            self.history: dict[str, list[dict[str, Any]]] = {}
            self.turns: dict[str, TurnInfo] = {}

        @rule()
        def create(self) -> None:
            sid = self.j.create_session(new_session())
            self.history[sid] = []

        @precondition(lambda self: self.history)
        @rule(data=st.data())
        def start(self, data: st.DataObject) -> None:
            sid = data.draw(st.sampled_from(sorted(self.history)))
            t = turn_of(sid)
            self.j.start_turn(t)
            self.turns[t.turn_id] = t

        @precondition(lambda self: self.turns)
        @rule(data=st.data(), message=MESSAGES)
        def append(self, data: st.DataObject, message: dict[str, Any]) -> None:
            t = self.turns[data.draw(st.sampled_from(sorted(self.turns)))]
            self.j.append_message(t, message)
            self.history[t.session_id].append(message)
            steps[0] += 1

        @precondition(lambda self: self.turns)
        @rule(data=st.data(), status=st.sampled_from(["completed", "error", "cancelled"]))
        def finish(self, data: st.DataObject, status: str) -> None:
            self.j.finish_turn(self.turns[data.draw(st.sampled_from(sorted(self.turns)))], status)

        @invariant()
        def histories(self) -> None:
            for sid, want in getattr(self, "history", {}).items():
                got = self.j.load_history(sid)
                expect([canon(m) for m in got] == [canon(m) for m in want], f"session {sid}'s history matches the model", want, got)

    run_state_machine_as_test(JournalMachine, settings=settings(settings_for(kit, 15), stateful_step_count=12))
    return [f"{steps[0]} appends over random sequences of create/start/append/finish, histories checked after each step"]


# --------------------------------------------------------------------------- JKIT-009 durability


def _kill_once(kit: Kit, rng: random.Random) -> tuple[int, int]:
    """One writer process killed after a random number of acknowledged writes; (acked, found)."""
    store = kit.new_store()
    kill_after = rng.randint(1, 30)
    # a process group of its own: the kill takes a journal process it started (stdio:CMD) with it
    proc = subprocess.Popen([sys.executable, "-m", "conformance.journalkit.kill_child", kit.spec, store],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=dict(os.environ),
                            start_new_session=True)
    assert proc.stdout is not None
    sid, acked = None, []
    try:
        for line in proc.stdout:
            kind, _, value = line.strip().partition(" ")
            if kind == "S":
                sid = value
            elif kind == "A":
                acked.append(int(value))
                if len(acked) >= kill_after:
                    os.killpg(proc.pid, signal.SIGKILL)
                    break
    finally:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGKILL)
        # the rest through the same buffered reader: lines it read ahead of the loop are acks too
        # (communicate() reads the pipe underneath and would lose them: a correct journal then
        # showed more messages than acknowledged writes on a loaded machine)
        rest, err = proc.stdout.read(), proc.stderr.read() if proc.stderr else ""
        proc.wait(timeout=kit.timeout_s)
    acked += [int(line.split()[1]) for line in rest.splitlines() if line.startswith("A ")]
    if sid is None:
        raise Blocked(by="JKIT-002", reason=f"the writer process could not create a session: {err.strip()[-300:]}")
    j = kit.journal(store)
    got = j.load_history(sid)
    expected = [child_message(i) for i in range(len(got))]
    expect(len(got) >= len(acked), "every write that returned is there after kill -9", f"at least {len(acked)} messages", len(got))
    expect(len(got) <= len(acked) + 1, "at most the one write in flight besides", f"at most {len(acked) + 1}", len(got))
    for i, (want, have) in enumerate(zip(expected, got)):
        expect(canon(want) == canon(have), f"message {i} is whole after kill -9 (nothing torn)", f"{len(canon(want))} chars", show(have, 120))
    return len(acked), len(got)


def child_message(i: int) -> dict[str, Any]:
    return {"role": "user", "text": f"{i}:" + "é☃" * (2000 + 97 * i)}


@check("JKIT-009", "a writer killed at a random point (kill -9) loses nothing that returned")
def durability(kit: Kit) -> list[str]:
    rng = random.Random(kit.seed)
    found = [_kill_once(kit, rng) for _ in range(kit.kills)]
    return [(f"{len(found)} writer processes killed after {', '.join(str(a) for a, _ in found)} acknowledged appends; "
             f"reopened, each held them all ({', '.join(str(g) for _, g in found)} found)")]


# --------------------------------------------------------------------------- bad input


@check("JKIT-010", "an unknown session id is an error, and nothing is stored")
def unknown_session(kit: Kit) -> list[str]:
    j = kit.journal()
    ghost = "0190f4f0-0000-7000-8000-000000000000"
    refused = []
    for name, call in [("load_history", lambda: j.load_history(ghost)),
                       ("start_turn", lambda: j.start_turn(turn_of(ghost))),
                       ("append_message", lambda: j.append_message(turn_of(ghost), {"role": "user", "text": "x"})),
                       ("record_tool_call", lambda: j.record_tool_call(turn_of(ghost), ToolCallRecord(call_id="c", name="n")))]:
        try:
            call()
        except kit.timeout_error:
            raise
        except Exception as exc:
            refused.append(f"{name}: {type(exc).__name__}")
            continue
        raise ConformanceFailure(f"{name} on an unknown session is an error", "an exception", "it returned")
    dump = j.dump()
    stray = [m for m in dump.get("messages", []) if isinstance(m, dict) and m.get("session_id") == ghost]
    stray += [r for r in dump.get("tool_calls", []) if isinstance(r, dict) and r.get("session_id") == ghost]
    expect(not stray, "nothing is stored for an unknown session", [], stray)
    return ["refused: " + "; ".join(refused)]


class _NotJson:
    def __repr__(self) -> str:
        return "<not JSON>"


@check("JKIT-011", "a message that is not JSON is refused, nothing of it kept, the journal still works")
def not_json(kit: Kit) -> list[str]:
    j = kit.journal()
    sid = j.create_session(new_session())
    t = turn_of(sid)
    j.start_turn(t)
    j.append_message(t, {"role": "user", "text": "before"})
    refused = []
    for bad in ({"role": "user", "text": _NotJson()}, {"role": "user", "set": {1, 2}}, {"role": "user", "raw": b"\x00"}):
        try:
            j.append_message(t, bad)
        except kit.timeout_error:
            raise
        except Exception as exc:
            refused.append(type(exc).__name__)
            continue
        raise ConformanceFailure("a message that is not JSON-serialisable is refused", "an exception", f"{show(repr(bad))} was accepted")
    j.append_message(t, {"role": "user", "text": "after"})
    got = j.load_history(sid)
    expect([m.get("text") for m in got] == ["before", "after"], "nothing of a refused message is kept; later appends work", ["before", "after"], got)
    return [f"{len(refused)} messages refused ({', '.join(refused)}); the history kept the two good ones only"]


@check("JKIT-012", "a lost connection mid-write: every write that returned is kept, none is half there")
def interrupted(kit: Kit) -> list[str]:
    store = kit.new_store()
    j = kit.journal(store)
    sid = j.create_session(new_session())
    t = turn_of(sid)
    j.start_turn(t)
    returned: list[int] = []
    raised = 0

    async def writes(journal: Any) -> None:
        nonlocal raised
        for i in range(40):
            if i == 10:
                await journal.interrupt()
            try:
                await journal.append_message(t, {"role": "user", "text": f"m{i}"})
            except Exception:
                raised += 1
                continue
            returned.append(i)

    kit.run(writes)
    again = kit.journal(store)
    texts = [m.get("text") for m in again.load_history(sid)]
    expect(all(f"m{i}" in texts for i in returned), "every write that returned is kept across the lost connection",
           [f"m{i}" for i in returned], texts)
    torn = [x for x in texts if x not in {f"m{i}" for i in range(40)}]
    expect(not torn, "a write is stored whole or not at all", [], torn)
    return [f"connection dropped after 10 writes; {len(returned)} returned, {raised} raised; a reopened journal held exactly those"]
