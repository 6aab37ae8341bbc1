"""SqliteJournal under the failures a durable journal must survive (issue 13, item 16): kill -9
in the middle of appends (nothing torn, lost or duplicated), a full disk at COMMIT (the journal
is not wedged), a failing ROLLBACK (the first error is kept), WAL refused, and the default
durability level (synchronous=FULL)."""

from __future__ import annotations

import signal
import sqlite3
import subprocess
import sys
import textwrap
from pathlib import Path
from typing import Any

import pytest

from reference_kernel.records import NewSession, TurnInfo
from reference_kernel.sqlite_journal import SqliteJournal

ROOT = Path(__file__).resolve().parents[2]


def turn(sid: str, tid: str = "t1") -> TurnInfo:
    return TurnInfo(profile_id="p", session_id=sid, turn_id=tid)


def test_default_is_synchronous_full_and_normal_is_an_option(tmp_path: Path) -> None:
    with SqliteJournal(tmp_path / "a.db") as j:
        assert j._conn.execute("PRAGMA synchronous").fetchone()[0] == 2  # FULL
    with SqliteJournal(tmp_path / "b.db", synchronous="NORMAL") as j:
        assert j._conn.execute("PRAGMA synchronous").fetchone()[0] == 1
    with pytest.raises(ValueError, match="bad synchronous mode"):
        SqliteJournal(tmp_path / "c.db", synchronous="OFF")


class _NoWalConn:
    """A connection on a file system that refuses WAL (journal_mode stays 'delete')."""

    def __init__(self, conn: sqlite3.Connection) -> None:
        self._conn = conn

    def __getattr__(self, name: str) -> Any:
        return getattr(self._conn, name)

    def execute(self, sql: str, *args: Any) -> Any:
        if sql == "PRAGMA journal_mode=WAL":
            return self._conn.execute("PRAGMA journal_mode")
        return self._conn.execute(sql, *args)


def test_wal_not_granted_is_an_error(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    import reference_kernel.sqlite_journal as module

    real = sqlite3.connect
    monkeypatch.setattr(module.sqlite3, "connect", lambda *a, **k: _NoWalConn(real(*a, **k)))
    with pytest.raises(RuntimeError, match="WAL mode was not granted"):
        SqliteJournal(tmp_path / "nowal.db")
    monkeypatch.undo()
    with SqliteJournal(":memory:"):  # in memory there is nothing to make durable: allowed
        pass


@pytest.mark.anyio
async def test_full_disk_at_commit_does_not_wedge_the_journal(tmp_path: Path) -> None:
    j = SqliteJournal(tmp_path / "full.db")
    sid = await j.create_session(NewSession(profile_id="p", source="cli"))
    pages = j._conn.execute("PRAGMA page_count").fetchone()[0]
    j._conn.execute(f"PRAGMA max_page_count={pages + 2}")
    with pytest.raises(sqlite3.OperationalError, match="full"):
        for i in range(200):
            await j.append_message(turn(sid), {"role": "user", "text": "x" * 2000 + str(i)})
    assert not j._conn.in_transaction
    j._conn.execute("PRAGMA max_page_count=1073741823")  # room again: the next append works
    await j.append_message(turn(sid), {"role": "user", "text": "after"})
    assert (await j.load_history(sid))[-1]["text"] == "after"
    j.close()


class _FailingConn:
    """A connection whose COMMIT and ROLLBACK fail (sqlite3.Connection cannot be patched)."""

    def __init__(self, conn: sqlite3.Connection) -> None:
        self._conn = conn

    def __getattr__(self, name: str) -> Any:
        return getattr(self._conn, name)

    def execute(self, sql: str, *args: Any) -> Any:
        if sql in ("COMMIT", "ROLLBACK"):
            raise sqlite3.OperationalError(f"{sql.lower()} failed (simulated)")
        return self._conn.execute(sql, *args)


@pytest.mark.anyio
async def test_failing_rollback_does_not_hide_the_first_error(tmp_path: Path) -> None:
    j = SqliteJournal(tmp_path / "rb.db")
    sid = await j.create_session(NewSession(profile_id="p", source="cli"))
    real, j._conn = j._conn, _FailingConn(j._conn)  # type: ignore[assignment]
    with pytest.raises(sqlite3.OperationalError, match="commit failed") as info:
        await j.append_message(turn(sid), {"role": "user", "text": "x"})
    assert any("rollback failed" in n for n in getattr(info.value, "__notes__", []))
    real.execute("ROLLBACK")
    j._conn = real
    j.close()


_WRITER = textwrap.dedent(
    """
    import anyio, sys
    from reference_kernel.records import NewSession, TurnInfo
    from reference_kernel.sqlite_journal import SqliteJournal

    async def main(path):
        j = SqliteJournal(path)
        sid = await j.create_session(NewSession(profile_id="p", source="cli"))
        t = TurnInfo(profile_id="p", session_id=sid, turn_id="t")
        i = 0
        while True:
            await j.append_message(t, {"role": "user", "text": str(i)})
            print(sid, i, flush=True)  # committed: the parent may kill us from here on
            i += 1

    anyio.run(main, sys.argv[1])
    """
)


@pytest.mark.anyio
@pytest.mark.parametrize("kill_after", [1, 7, 40])
async def test_kill_9_mid_append_loses_tears_or_duplicates_nothing(tmp_path: Path, kill_after: int) -> None:
    path = tmp_path / "k.db"
    proc = subprocess.Popen([sys.executable, "-c", _WRITER, str(path)], stdout=subprocess.PIPE, text=True, cwd=ROOT,
                            env={"PYTHONPATH": str(ROOT), "PATH": ""})
    assert proc.stdout is not None
    seen = [proc.stdout.readline().split() for _ in range(kill_after)]
    proc.send_signal(signal.SIGKILL)
    proc.wait(timeout=30)
    sid, last = seen[-1][0], int(seen[-1][1])
    with SqliteJournal(path) as j:
        assert j._conn.execute("PRAGMA integrity_check").fetchone()[0] == "ok"
        texts = [int(m["text"]) for m in await j.load_history(sid)]
    assert texts == list(range(len(texts)))  # in order, nothing torn or duplicated
    assert len(texts) >= last + 1  # every append it reported committed is there
