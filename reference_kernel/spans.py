"""Trace spans for 003's mandatory instrumentation points (turn, model call, tool, veto chain).

The loop talks to a ``SpanRecorder``; ``MemorySpanRecorder`` keeps plain dicts shaped like
``conformance.boundary.adapter.Span`` for the adapter to report, ``otel.OTelSpanRecorder`` exports them.
Kinds used: session, turn, model_call, tool, veto_chain (and hook, other).
"""

from __future__ import annotations

import itertools
import threading
import time
from collections.abc import Callable
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


class MemorySpanRecorder:
    """Keeps every span, in start order, as ``{span_id, parent_id, name, kind, start, end,
    attributes}``. ``clock`` is in seconds (inject the harness clock for reproducible traces)."""

    def __init__(self, clock: Callable[[], float] | None = None) -> None:
        self._clock = clock or time.monotonic
        self._ids = itertools.count(1)
        self._lock = threading.Lock()
        self.spans: list[dict[str, Any]] = []
        self._by_id: dict[str, dict[str, Any]] = {}

    def start(
        self, name: str, kind: str, parent_id: str | None, attributes: dict[str, Any] | None = None
    ) -> str:
        with self._lock:
            span_id = f"span-{next(self._ids)}"
            span = {
                "span_id": span_id,
                "parent_id": parent_id,
                "name": name,
                "kind": kind,
                "start": self._clock(),
                "end": None,
                "attributes": dict(attributes or {}),
            }
            self.spans.append(span)
            self._by_id[span_id] = span
        return span_id

    def end(self, span_id: str, attributes: dict[str, Any] | None = None) -> None:
        with self._lock:
            span = self._by_id.get(span_id)
            if span is None:
                raise KeyError(f"unknown span {span_id!r}")
            if span["end"] is not None:
                return  # ending twice is harmless: keep the first end time
            span["end"] = self._clock()
            if attributes:
                span["attributes"].update(attributes)


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
