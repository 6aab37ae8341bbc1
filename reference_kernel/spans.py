"""Trace spans for 003's mandatory instrumentation points (turn, model call, tool, veto chain).

The loop talks to a ``SpanRecorder``; ``MemorySpanRecorder`` keeps spans (read as ``SpanRecord``s,
like dicts shaped like ``conformance.boundary.adapter.Span``) for the adapter to report,
``otel.OTelSpanRecorder`` exports them.
Kinds used: session, turn, model_call, tool, veto_chain (and hook, other).
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterator, Mapping
from itertools import chain
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


#: A stored span. Open: ``(span_id, parent_id, name, kind, start, None, attributes)``. Ended:
#: ``(span_id, parent_id, name, kind, start, end, key1, value1, key2, value2, ...)``, one flat
#: tuple of strings and numbers: a single allocation that the garbage collector stops tracking
#: once it has seen it (a long run keeps four spans per RunTurn; a record holding a dict would
#: stay tracked, and every full collection would walk them all again).
Row = tuple[Any, ...]
_FIELDS = {"span_id": 0, "parent_id": 1, "name": 2, "kind": 3, "start": 4, "end": 5}
_KEYS = ("span_id", "parent_id", "name", "kind", "start", "end", "attributes")


def _attributes(row: Row) -> dict[str, Any]:
    if row[5] is None:  # open
        return dict(row[6])
    return dict(zip(row[6::2], row[7::2]))


def _ended(row: Row, end: float, attributes: dict[str, Any]) -> Row:
    return (*row[:5], end, *chain.from_iterable(attributes.items()))


class SpanRecord(Mapping[str, Any]):
    """One span, read like the dict ``{span_id, parent_id, name, kind, start, end, attributes}``
    (``s["kind"]``, ``dict(s)``, ``s == {...}``, ``Span.model_validate(s)``): a read-only view
    of a stored row (``attributes`` is a new dict on each read)."""

    __slots__ = ("row",)

    def __init__(self, row: Row) -> None:
        self.row = row

    def __getitem__(self, key: str) -> Any:
        index = _FIELDS.get(key)
        if index is not None:
            return self.row[index]
        if key == "attributes":
            return _attributes(self.row)
        raise KeyError(key)

    def __iter__(self) -> Iterator[str]:
        return iter(_KEYS)

    def __len__(self) -> int:
        return len(_KEYS)

    def as_dict(self) -> dict[str, Any]:
        return {key: self[key] for key in _KEYS}

    def __repr__(self) -> str:
        return f"SpanRecord({self.as_dict()!r})"


def _as_row(span: Any) -> Row:
    if isinstance(span, SpanRecord):
        return span.row
    row = (span["span_id"], span["parent_id"], span["name"], span["kind"], span["start"], None)
    attributes = dict(span["attributes"])
    return row + (attributes,) if span["end"] is None else _ended(row, span["end"], attributes)


class SpanList(list):  # type: ignore[type-arg]
    """``MemorySpanRecorder.spans``: a list of stored rows that reads (index, iteration) as
    ``SpanRecord``s and takes SpanRecords (or span dicts) on writes, so it can be used like the
    list of span dicts it stands for (filtered in place, say)."""

    def __getitem__(self, index: Any) -> Any:
        item = list.__getitem__(self, index)
        if isinstance(index, slice):
            return [SpanRecord(row) for row in item]
        return SpanRecord(item)

    def __iter__(self) -> Iterator[SpanRecord]:  # type: ignore[override]
        return map(SpanRecord, list.__iter__(self))

    def __reversed__(self) -> Iterator[SpanRecord]:
        return map(SpanRecord, list.__reversed__(self))

    def __setitem__(self, index: Any, value: Any) -> None:
        if isinstance(index, slice):
            list.__setitem__(self, index, [_as_row(span) for span in value])
        else:
            list.__setitem__(self, index, _as_row(value))

    def append(self, span: Any) -> None:
        list.append(self, _as_row(span))

    def extend(self, spans: Any) -> None:
        list.extend(self, [_as_row(span) for span in spans])


def _span_number(span_id: Any) -> int | None:
    prefix, _, number = span_id.partition("-") if isinstance(span_id, str) else ("", "", "")
    return int(number) if prefix == "span" and number.isdigit() else None


class MemorySpanRecorder:
    """Keeps every span, in start order, in ``spans`` (read as ``SpanRecord``s, shaped like
    ``conformance.boundary.adapter.Span``). ``clock`` is in seconds (inject the harness clock for
    reproducible traces).

    Not locked: the loop calls it from its event loop's thread only (the tools it runs in worker
    threads never touch it), so a lock would be pure cost on the hot path.
    """

    def __init__(self, clock: Callable[[], float] | None = None) -> None:
        self._clock = clock or time.monotonic
        self._count = 0
        self.spans = SpanList()
        self._open: dict[str, int] = {}  # span id -> its index in ``spans``, until it ends

    def start(
        self, name: str, kind: str, parent_id: str | None, attributes: dict[str, Any] | None = None
    ) -> str:
        self._count += 1
        span_id = f"span-{self._count}"
        self._open[span_id] = len(self.spans)
        row = (span_id, parent_id, name, kind, self._clock(), None, dict(attributes) if attributes else {})
        list.append(self.spans, row)
        return span_id

    def end(self, span_id: str, attributes: dict[str, Any] | None = None) -> None:
        index = self._open.pop(span_id, None)
        if index is None:
            number = _span_number(span_id)
            if number is None or not 0 < number <= self._count:
                raise KeyError(f"unknown span {span_id!r}")
            return  # ending twice is harmless: keep the first end time
        spans = self.spans
        row = list.__getitem__(spans, index) if index < len(spans) else None
        if row is None or row[0] != span_id:  # the list was edited since: find the span again
            index = next((i for i, r in enumerate(list.__iter__(spans)) if r[0] == span_id), -1)
            if index < 0:
                return  # removed from the list: nothing to end
            row = list.__getitem__(spans, index)
        merged = {**row[6], **attributes} if attributes else row[6]
        list.__setitem__(spans, index, _ended(row, self._clock(), merged))


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
        self._args = (name, kind, parent_id, attrs)
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
