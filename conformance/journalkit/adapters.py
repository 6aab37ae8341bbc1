"""Which journal ``akc journal --adapter SPEC`` certifies: a built-in name or ``pkg.module:factory``."""

from __future__ import annotations

import hashlib
import importlib
import inspect
import os
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

from conformance.errors import UsageError

Factory = Callable[[str], Awaitable[Any]]
#: Where the built-in ``postgres`` journal connects (``akc journal --dsn`` sets it).
DSN_ENV = "AKC_JOURNAL_DSN"


async def memory(store: str) -> Any:
    from reference_kernel.journal import MemoryJournal

    return MemoryJournal()


async def sqlite(store: str) -> Any:
    from reference_kernel.sqlite_journal import SqliteJournal

    journal = SqliteJournal(Path(store) / "journal.db")
    journal.durable = True  # type: ignore[attr-defined]  (a file with synchronous=FULL)

    async def interrupt() -> None:  # the connection is gone: later writes raise
        journal.close()

    journal.interrupt = interrupt  # type: ignore[attr-defined]
    return journal


def schema_for(store: str) -> str:
    """The Postgres schema of a store: one cluster serves every check."""
    return "akc_kit_" + hashlib.sha1(os.path.abspath(store).encode()).hexdigest()[:16]


async def postgres(store: str) -> Any:
    from reference_kernel.postgres_journal import PostgresJournal

    dsn = os.environ.get(DSN_ENV)
    if not dsn:
        raise UsageError(f"the postgres journal needs a server: pass --dsn or set {DSN_ENV}")
    journal = PostgresJournal(dsn, schema=schema_for(store), max_size=8, drop=True)
    await journal.open()
    return journal


BUILTINS: dict[str, Factory] = {"memory": memory, "sqlite": sqlite, "postgres": postgres}


def resolve(spec: str) -> tuple[str, Factory]:
    """(the spec a child process can resolve again, the factory); UsageError
    naming what is wrong otherwise."""
    if spec in BUILTINS:
        return f"{__name__}:{spec}", BUILTINS[spec]
    if spec.startswith("stdio:"):
        command = spec[len("stdio:"):].strip()
        if not command:
            raise UsageError("stdio journal adapter: give the command after 'stdio:'")

        async def stdio(store: str) -> Any:
            from conformance.journalkit.stdio import StdioJournal

            return await StdioJournal.start(command, store)

        return spec, stdio
    module_name, sep, attr = spec.partition(":")
    if not sep or not module_name or not attr:
        raise UsageError(f"bad journal adapter {spec!r}: expected memory, sqlite, postgres or pkg.module:factory")
    try:
        module = importlib.import_module(module_name)
    except ImportError as exc:
        raise UsageError(f"journal adapter {spec!r}: cannot import {module_name!r}: {exc}") from None
    factory = getattr(module, attr, None)
    if factory is None or not callable(factory):
        raise UsageError(f"journal adapter {spec!r}: {module_name} has no callable {attr!r}")
    if not inspect.iscoroutinefunction(factory):
        raise UsageError(f"journal adapter {spec!r}: {attr} must be an async function factory(store) -> journal")
    return spec, factory
