"""Trace spans for 003's mandatory instrumentation points (turn, model call, tool, veto chain).

The loop talks to a ``SpanRecorder``; ``MemorySpanRecorder`` keeps them (listed as ``SpanRecord``s,
read like dicts shaped like ``conformance.boundary.adapter.Span``) for the adapter to report,
``otel.OTelSpanRecorder`` exports them.
Kinds used: session, turn, model_call, tool, veto_chain (and hook, other).
"""

from __future__ import annotations

import marshal
import time
from collections.abc import Callable, Iterator, Mapping
from types import TracebackType
from typing import Any, Protocol, runtime_checkable


@runtime_checkable
class SpanRecorder(Protocol):
    def start(
        self, name: str, kind: str, parent_id: str | None, attributes: dict[str, Any] | None = None
    ) -> str:
        """Open a span and return its id."""
        ...

    def end(self, span_id: str, attributes: dict[str, Any] | None = None) -> None:
        """Close a span, merging in ``attributes``."""
        ...


class SpanRecord(Mapping[str, Any]):
    """One span of a ``MemorySpanRecorder``, read like the dict ``{span_id, parent_id, name, kind,
    start, end, attributes}`` (``s["kind"]``, ``s.kind``, ``dict(s)``, ``s == {...}``,
    ``Span.model_validate(s)``).

    A view of the recorder's row for the span: it reads what the recorder holds now (an open
    span's ``end`` is None until it ends). The id is the row's number, spelled ``span-<n>``.
    """

    __slots__ = ("_recorder", "_row")
    _KEYS = ("span_id", "parent_id", "name", "kind", "start", "end", "attributes")

    def __init__(self, recorder: MemorySpanRecorder, row: int) -> None:
        self._recorder = recorder
        self._row = row

    @property
    def number(self) -> int:
        return self._row + 1

    @property
    def span_id(self) -> str:
        return f"span-{self._row + 1}"

    @property
    def parent_id(self) -> str | None:
        return self._recorder._parents[self._row]

    @property
    def name(self) -> str:
        return self._recorder._names[self._row]

    @property
    def kind(self) -> str:
        return self._recorder._kinds[self._row]

    @property
    def start(self) -> float:
        return self._recorder._starts[self._row]

    @property
    def end(self) -> float | None:
        return self._recorder._ends[self._row]

    @property
    def attributes(self) -> dict[str, Any]:
        """An open span's dict as given; a closed span's decoded afresh on every read."""
        value = self._recorder._attributes[self._row]
        return marshal.loads(value) if type(value) is bytes else value

    def as_dict(self) -> dict[str, Any]:
        """The span as a plain dict, read from the row at once (a Mapping is read key by key
        through ``__getitem__``: what validating a run's spans spent most of its time on)."""
        r, row = self._recorder, self._row
        value = r._attributes[row]
        return {
            "span_id": f"span-{row + 1}",
            "parent_id": r._parents[row],
            "name": r._names[row],
            "kind": r._kinds[row],
            "start": r._starts[row],
            "end": r._ends[row],
            "attributes": marshal.loads(value) if type(value) is bytes else value,
        }

    def __getitem__(self, key: str) -> Any:
        if key not in self._KEYS:
            raise KeyError(key)
        return getattr(self, key)

    def __iter__(self) -> Iterator[str]:
        return iter(self._KEYS)

    def __len__(self) -> int:
        return len(self._KEYS)

    def __repr__(self) -> str:
        return f"SpanRecord({dict(self)!r})"


def _span_number(span_id: str) -> int | None:
    prefix, _, number = span_id.partition("-") if isinstance(span_id, str) else ("", "", "")
    return int(number) if prefix == "span" and number.isdigit() else None


_encode = marshal.dumps


class MemorySpanRecorder:
    """Keeps every span, in start order; ``spans`` lists them as ``SpanRecord``s (read like
    dicts shaped like ``conformance.boundary.adapter.Span``). ``clock`` is in seconds (inject the
    harness clock for reproducible traces).

    Stored by column, a row per span, with no object per span: a run has four spans a RunTurn,
    and objects kept per span are what the garbage collector counts (its collections are
    triggered by them) and traverses (a long run's full collections). A span's attributes dict
    is kept as given while it is open (``end`` adds to it) and ``marshal``-encoded when it ends
    (bytes, which the collector ignores; attributes that are not plain data stay a dict). Only
    open spans are indexed by id.

    Not locked: the loop calls it from its event loop's thread only (the tools it runs in worker
    threads never touch it), so a lock would be pure cost on the hot path.
    """

    def __init__(self, clock: Callable[[], float] | None = None) -> None:
        self._clock = clock or time.monotonic
        self._parents: list[str | None] = []
        self._names: list[str] = []
        self._kinds: list[str] = []
        self._starts: list[float] = []
        self._ends: list[float | None] = []
        self._attributes: list[dict[str, Any] | bytes] = []
        self._open: dict[str, int] = {}  # span id -> row, while the span is open

    @property
    def spans(self) -> list[SpanRecord]:
        """Every span so far, in start order (a new list of views on each read)."""
        return [SpanRecord(self, row) for row in range(len(self._starts))]

    def start(
        self, name: str, kind: str, parent_id: str | None, attributes: dict[str, Any] | None = None
    ) -> str:
        row = len(self._starts)
        self._parents.append(parent_id)
        self._names.append(name)
        self._kinds.append(kind)
        self._starts.append(self._clock())
        self._ends.append(None)
        # The attributes dict is kept as given (``end`` adds to it): callers pass a fresh one.
        self._attributes.append(attributes if attributes is not None else {})
        span_id = f"span-{row + 1}"
        self._open[span_id] = row
        return span_id

    def end(self, span_id: str, attributes: dict[str, Any] | None = None) -> None:
        row = self._open.pop(span_id, None)
        if row is None:
            number = _span_number(span_id)
            if number is None or not 0 < number <= len(self._starts):
                raise KeyError(f"unknown span {span_id!r}")
            return  # ending twice is harmless: keep the first end time
        self._ends[row] = self._clock()
        kept = self._attributes[row]
        if attributes:
            kept.update(attributes)  # type: ignore[union-attr]
        try:
            self._attributes[row] = _encode(kept)
        except ValueError:  # not plain data: kept as the dict
            pass


class span:  # noqa: N801 - used like a function: ``with span(rec, ...) as sid``
    """Open a span for the block (sync ``with`` or ``async with``), yielding its id.

    A block that raises gets an ``error`` attribute with the exception type, and still ends.
    The first four parameters are positional-only, so ``name=`` or ``kind=`` can be attributes.
    """

    def __init__(
        self,
        recorder: SpanRecorder,
        name: str,
        kind: str,
        parent_id: str | None = None,
        /,
        **attrs: Any,
    ) -> None:
        self._recorder = recorder
        self._args = (name, kind, parent_id, attrs)  # attrs: a fresh dict (kwargs)
        self.span_id: str | None = None

    def __enter__(self) -> str:
        name, kind, parent_id, attrs = self._args
        self.span_id = self._recorder.start(name, kind, parent_id, attrs)
        return self.span_id

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        assert self.span_id is not None
        extra = {"error": exc_type.__name__} if exc_type is not None else None
        self._recorder.end(self.span_id, extra)

    async def __aenter__(self) -> str:
        return self.__enter__()

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.__exit__(exc_type, exc, tb)
