"""The writer process of the durability check (JKIT-009): opens the journal on STORE, creates a
session (prints ``S <id>``), then appends messages forever, printing ``A <i>`` after each append
returned, until it is killed."""

from __future__ import annotations

import sys

import anyio

from conformance.journalkit.adapters import resolve
from conformance.journalkit.checks import child_message, new_session, turn_of


async def main(spec: str, store: str) -> None:
    _, factory = resolve(spec)
    journal = await factory(store)
    sid = await journal.create_session(new_session())
    print(f"S {sid}", flush=True)
    t = turn_of(sid)
    await journal.start_turn(t)
    i = 0
    while True:
        await journal.append_message(t, child_message(i))
        print(f"A {i}", flush=True)
        i += 1


if __name__ == "__main__":
    anyio.run(main, sys.argv[1], sys.argv[2])
