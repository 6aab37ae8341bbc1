"""001's Journal contract, one suite for MemoryJournal and SqliteJournal; durability for SQLite."""

from __future__ import annotations

import json
import random
import sqlite3
import subprocess
import sys
import textwrap
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import anyio
import pytest

from conformance.boundary.adapter import JournalDump
from reference_kernel.errors import UnknownSessionError, UnknownTurnError
from reference_kernel.ids import IdGenerator, is_uuid7
from reference_kernel.journal import Journal, MemoryJournal
from reference_kernel.records import NewSession, ToolCallRecord, TurnInfo, UsageEvent
from reference_kernel.sqlite_journal import SqliteJournal

ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture(params=["asyncio", "trio"])
def anyio_backend(request: pytest.FixtureRequest) -> str:
    return request.param


@pytest.fixture(params=["memory", "sqlite"])
def journal(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[Any]:
    if request.param == "memory":
        yield MemoryJournal()
    else:
        j = SqliteJournal(tmp_path / "journal.db")
        yield j
        j.close()


def new_session(**kw: Any) -> NewSession:
    kw.setdefault("profile_id", "p")
    kw.setdefault("source", "cli")
    return NewSession(**kw)


def turn_of(session_id: str, turn_id: str = "t1", tags: list[str] | None = None) -> TurnInfo:
    return TurnInfo(profile_id="p", session_id=session_id, turn_id=turn_id, tags=tags or [])


def tool_record(call_id: str = "c1") -> ToolCallRecord:
    return ToolCallRecord(
        call_id=call_id, name="weather", args={"city": "Charleston"}, result="18°C",
        is_error=False, risk="low", duration_ms=1.5, approval="approved",
    )


async def fill(j: Any) -> tuple[str, str]:
    """A small but complete session tree: parent turn with a tool call, a child session."""
    sid = await j.create_session(new_session(title="Umbrella?", tags=["client:acme"]))
    t = turn_of(sid, "t1", ["client:acme", "area:home"])
    await j.start_turn(t)
    await j.append_message(t, {"role": "user", "text": "Do I need an umbrella?"})
    await j.append_message(t, {"role": "assistant", "tool_calls": [
        {"id": "c1", "name": "weather", "args": {"city": "Charleston"}}]})
    await j.record_tool_call(t, tool_record())
    await j.append_message(t, {"role": "tool_result", "call_id": "c1",
                               "content": "18°C", "is_error": False})
    await j.record_usage(t, UsageEvent(session_id=sid, turn_id="t1", model="m",
                                       input_tokens=10, output_tokens=5, cost_usd=0.25))
    child_sid = await j.create_session(new_session(source="subagent", parent_session_id=sid))
    ct = t.child(child_sid, "t2")
    await j.start_turn(ct)
    await j.append_message(ct, {"role": "user", "text": "goal"})
    await j.record_usage(ct, UsageEvent(session_id=child_sid, turn_id="t2", cost_usd=0.5))
    await j.finish_turn(ct, "completed")
    await j.append_message(t, {"role": "assistant", "text": "Bring an umbrella."})
    await j.finish_turn(t, "completed")
    return sid, child_sid


@pytest.mark.anyio
async def test_journal_satisfies_the_protocol(journal: Any) -> None:
    assert isinstance(journal, Journal)


@pytest.mark.anyio
async def test_sessions_get_uuid7_ids_and_are_readable(journal: Any) -> None:
    sid = await journal.create_session(new_session(title="t", tags=["a:b"]))
    assert is_uuid7(sid)
    assert await journal.get_session(sid) == {
        "id": sid, "profile_id": "p", "source": "cli", "title": "t", "tags": ["a:b"],
        "parent_session_id": None,
    }
    assert await journal.get_session("nope") is None
    assert await journal.load_history(sid) == []


@pytest.mark.anyio
async def test_unknown_parent_session_is_rejected(journal: Any) -> None:
    with pytest.raises(UnknownSessionError, match="parent session 'ghost'"):
        await journal.create_session(new_session(parent_session_id="ghost"))
    assert (await journal.dump())["sessions"] == []


@pytest.mark.anyio
async def test_unknown_session_is_a_clear_key_error(journal: Any) -> None:
    with pytest.raises(KeyError) as info:
        await journal.load_history("ghost")
    assert "unknown session 'ghost'" in str(info.value)
    with pytest.raises(UnknownSessionError):
        await journal.append_message(turn_of("ghost"), {"role": "user", "text": "x"})
    with pytest.raises(UnknownSessionError):
        await journal.start_turn(turn_of("ghost"))


@pytest.mark.anyio
async def test_history_is_oldest_first_and_per_session(journal: Any) -> None:
    a = await journal.create_session(new_session())
    b = await journal.create_session(new_session())
    for i in range(5):
        await journal.append_message(turn_of(a), {"role": "user", "text": f"a{i}"})
        await journal.append_message(turn_of(b, "tb"), {"role": "user", "text": f"b{i}"})
    assert [m["text"] for m in await journal.load_history(a)] == [f"a{i}" for i in range(5)]
    assert [m["text"] for m in await journal.load_history(b)] == [f"b{i}" for i in range(5)]


@pytest.mark.anyio
async def test_stored_messages_do_not_alias_the_callers(journal: Any) -> None:
    sid = await journal.create_session(new_session())
    msg = {"role": "assistant", "tool_calls": [{"id": "c", "name": "n", "args": {"x": 1}}]}
    await journal.append_message(turn_of(sid), msg)
    msg["tool_calls"][0]["args"]["x"] = 2
    history = await journal.load_history(sid)
    assert history[0]["tool_calls"][0]["args"] == {"x": 1}
    history[0]["role"] = "changed"
    assert (await journal.load_history(sid))[0]["role"] == "assistant"


@pytest.mark.anyio
async def test_bad_messages_are_refused(journal: Any) -> None:
    sid = await journal.create_session(new_session())
    with pytest.raises(ValueError, match="role"):
        await journal.append_message(turn_of(sid), {"text": "no role"})
    with pytest.raises(ValueError, match="JSON"):
        await journal.append_message(turn_of(sid), {"role": "user", "text": object()})
    assert await journal.load_history(sid) == []


@pytest.mark.anyio
async def test_turn_lifecycle(journal: Any) -> None:
    sid = await journal.create_session(new_session())
    t = turn_of(sid)
    await journal.start_turn(t)
    assert (await journal.dump())["turns"] == [{"turn": t.as_dict(), "status": None}]
    with pytest.raises(ValueError, match="already started"):
        await journal.start_turn(t)
    await journal.finish_turn(t, "interrupted")
    assert (await journal.dump())["turns"][0]["status"] == "interrupted"
    with pytest.raises(UnknownTurnError, match="'t9'"):
        await journal.finish_turn(turn_of(sid, "t9"), "completed")


@pytest.mark.anyio
async def test_dump_validates_and_keeps_storage_order(journal: Any) -> None:
    sid, child = await fill(journal)
    dump = await journal.dump()
    JournalDump.model_validate(dump)
    assert [s["id"] for s in dump["sessions"]] == [sid, child]
    assert dump["sessions"][1]["parent_session_id"] == sid
    assert [t["turn"]["turn_id"] for t in dump["turns"]] == ["t1", "t2"]
    child_turn = dump["turns"][1]["turn"]
    assert child_turn["parent_turn_id"] == "t1" and child_turn["depth"] == 1
    assert child_turn["tags"] == ["client:acme", "area:home"]
    assert [t["status"] for t in dump["turns"]] == ["completed", "completed"]
    assert [(m["turn_id"], m["message"]["role"]) for m in dump["messages"]] == [
        ("t1", "user"), ("t1", "assistant"), ("t1", "tool_result"), ("t2", "user"),
        ("t1", "assistant"),
    ]
    assert dump["tool_calls"] == [{"session_id": sid, "turn_id": "t1", **tool_record().as_dict()}]
    assert [u["cost_usd"] for u in dump["usage"]] == [0.25, 0.5]
    assert dump["usage"][0]["session_id"] == sid
    json.dumps(dump)  # JSON all the way down


@pytest.mark.anyio
async def test_cost_by_tag_rolls_up_through_copied_tags(journal: Any) -> None:
    await fill(journal)
    assert await journal.cost_by_tag() == {"client:acme": 0.75, "area:home": 0.75}


@pytest.mark.anyio
async def test_injected_ids_are_used(tmp_path: Path) -> None:
    def make(kind: str) -> Any:
        ids = IdGenerator(clock=lambda: 1000.0, random=random.Random(3))
        return MemoryJournal(ids) if kind == "memory" else SqliteJournal(tmp_path / "x.db", ids)

    mem, sql = make("memory"), make("sqlite")
    try:
        assert await mem.create_session(new_session()) == await sql.create_session(new_session())
    finally:
        sql.close()


# ---------------------------------------------------------------------------------- SQLite only


@pytest.mark.anyio
async def test_sqlite_reopen_sees_everything(tmp_path: Path) -> None:
    path = tmp_path / "j.db"
    j = SqliteJournal(path)
    sid, _ = await fill(j)
    before = await j.dump()
    j.close()
    with pytest.raises(RuntimeError, match="closed"):
        await j.load_history(sid)
    with SqliteJournal(path) as again:
        assert await again.dump() == before
        assert len(await again.load_history(sid)) == 4
        await again.append_message(turn_of(sid, "t3"), {"role": "user", "text": "more"})
    with SqliteJournal(path) as third:
        assert (await third.load_history(sid))[-1]["text"] == "more"


@pytest.mark.anyio
async def test_sqlite_uses_wal(tmp_path: Path) -> None:
    with SqliteJournal(tmp_path / "w.db"):
        mode = sqlite3.connect(tmp_path / "w.db").execute("PRAGMA journal_mode").fetchone()[0]
    assert mode == "wal"


_CHILD = textwrap.dedent(
    """
    import anyio, json, sys
    from reference_kernel.records import NewSession, TurnInfo
    from reference_kernel.sqlite_journal import SqliteJournal

    async def main(path, sid):
        j = SqliteJournal(path)
        history = await j.load_history(sid)
        t = TurnInfo(profile_id="p", session_id=sid, turn_id="from-child")
        await j.start_turn(t)
        await j.append_message(t, {"role": "user", "text": "written by the child"})
        await j.finish_turn(t, "completed")
        print(json.dumps(history))
        # exit without close(): committed writes must survive a process that just ends

    anyio.run(main, sys.argv[1], sys.argv[2])
    """
)


@pytest.mark.anyio
async def test_sqlite_is_shared_across_processes(tmp_path: Path) -> None:
    path = tmp_path / "shared.db"
    j = SqliteJournal(path)
    sid = await j.create_session(new_session())
    await j.append_message(turn_of(sid), {"role": "user", "text": "written by the parent"})
    proc = subprocess.run(
        [sys.executable, "-c", _CHILD, str(path), sid],
        capture_output=True, text=True, timeout=30, cwd=ROOT,
        env={"PYTHONPATH": str(ROOT), "PATH": ""},
    )
    assert proc.returncode == 0, proc.stderr
    assert json.loads(proc.stdout) == [{"role": "user", "text": "written by the parent"}]
    history = await j.load_history(sid)
    assert [m["text"] for m in history] == ["written by the parent", "written by the child"]
    assert (await j.dump())["turns"][-1]["status"] == "completed"
    j.close()


@pytest.mark.anyio
async def test_sqlite_concurrent_appends_all_land(tmp_path: Path) -> None:
    j = SqliteJournal(tmp_path / "c.db")
    sid = await j.create_session(new_session())
    async with anyio.create_task_group() as tg:
        for i in range(20):
            tg.start_soon(j.append_message, turn_of(sid), {"role": "user", "text": str(i)})
    texts = sorted(int(m["text"]) for m in await j.load_history(sid))
    assert texts == list(range(20))
    j.close()
