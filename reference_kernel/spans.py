"""Trace spans for 003's mandatory instrumentation points (turn, model call, tool, veto chain).

The loop talks to a ``SpanRecorder``; ``MemorySpanRecorder`` keeps ``SpanRecord``s (read like
dicts shaped like ``conformance.boundary.adapter.Span``) for the adapter to report,
``otel.OTelSpanRecorder`` exports them.
Kinds used: session, turn, model_call, tool, veto_chain (and hook, other).
"""

from __future__ import annotations

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
    """One span, read like the dict ``{span_id, parent_id, name, kind, start, end, attributes}``
    (``s["kind"]``, ``dict(s)``, ``s == {...}``, ``Span.model_validate(s)``).

    A slotted record, not a dict: a run keeps one per span (four per RunTurn), so their size is
    much of what a long run holds. The id is kept as its number and spelled ``span-<n>`` on read.
    (Measured against a dict per span and a flat tuple per span, which the garbage collector
    stops tracking: this is the cheapest to start and end, and the turn loop's time is spent
    there, not in the collector.)
    """

    __slots__ = ("number", "parent_id", "name", "kind", "start", "end", "attributes")
    _KEYS = ("span_id", "parent_id", "name", "kind", "start", "end", "attributes")

    def __init__(
        self,
        number: int,
        parent_id: str | None,
        name: str,
        kind: str,
        start: float,
        attributes: dict[str, Any],
    ) -> None:
        self.number = number
        self.parent_id = parent_id
        self.name = name
        self.kind = kind
        self.start = start
        self.end: float | None = None
        self.attributes = attributes

    @property
    def span_id(self) -> str:
        return f"span-{self.number}"

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


_new_record = object.__new__


def _span_number(span_id: str) -> int | None:
    prefix, _, number = span_id.partition("-") if isinstance(span_id, str) else ("", "", "")
    return int(number) if prefix == "span" and number.isdigit() else None


class MemorySpanRecorder:
    """Keeps every span, in start order, as a ``SpanRecord`` (read like a dict shaped like
    ``conformance.boundary.adapter.Span``). ``clock`` is in seconds (inject the harness clock for
    reproducible traces).

    Not locked: the loop calls it from its event loop's thread only (the tools it runs in worker
    threads never touch it), so a lock would be pure cost on the hot path.
    """

    def __init__(self, clock: Callable[[], float] | None = None) -> None:
        self._clock = clock or time.monotonic
        self._count = 0
        self.spans: list[SpanRecord] = []
        self._open: dict[str, SpanRecord] = {}  # only spans not yet ended: nothing per span kept

    def start(
        self, name: str, kind: str, parent_id: str | None, attributes: dict[str, Any] | None = None
    ) -> str:
        self._count = number = self._count + 1
        # SpanRecord.__init__'s work, inline (a third of the cost of a start; four a RunTurn).
        span = _new_record(SpanRecord)
        span.number = number
        span.parent_id = parent_id
        span.name = name
        span.kind = kind
        span.start = self._clock()
        span.end = None
        # The attributes dict is kept as given (``end`` adds to it): callers pass a fresh one.
        span.attributes = attributes if attributes is not None else {}
        self.spans.append(span)
        span_id = f"span-{number}"
        self._open[span_id] = span
        return span_id

    def end(self, span_id: str, attributes: dict[str, Any] | None = None) -> None:
        span = self._open.pop(span_id, None)
        if span is None:
            number = _span_number(span_id)
            if number is None or not 0 < number <= self._count:
                raise KeyError(f"unknown span {span_id!r}")
            return  # ending twice is harmless: keep the first end time
        span.end = self._clock()
        if attributes:
            span.attributes.update(attributes)


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
