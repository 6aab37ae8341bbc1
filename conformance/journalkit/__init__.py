"""The journal kit (``akc journal``): 001's Journal certified on its own, without a kernel.

A journal under test comes from an async factory ``factory(store: str) -> journal``: ``store``
is a fresh directory the kit owns; a journal opened again on the same store sees what was
written there (a durable one). The journal has 001's six methods and the read-back the kit
needs: ``get_session(id)`` and ``dump()`` (``turns`` and ``tool_calls``, as the reference
journals return them). Optional: ``durable = True`` (claims JKIT-009: the kit kills a writer
process and reopens the store), ``async interrupt()`` (drops its connection: JKIT-012), and
``aclose()`` or ``close()``. A journal in another language speaks JSON lines (``stdio:CMD``,
:mod:`conformance.journalkit.stdio`). docs/journal-kit.md says it all with examples.
"""
