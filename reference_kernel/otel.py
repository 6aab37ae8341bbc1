"""Export the loop's spans to OpenTelemetry (optional ``otel`` extra).

``OTelSpanRecorder`` implements ``spans.SpanRecorder`` on top of an OpenTelemetry tracer: each
span is started inside its parent's context, so the exported trace keeps the turn tree. The
kind goes into the ``agent.span.kind`` attribute; attribute values that OpenTelemetry cannot hold
(dicts, mixed lists, None) are stored as JSON text.
"""

from __future__ import annotations

import json
import threading
from typing import Any

KIND_ATTRIBUTE = "agent.span.kind"


def _require_otel() -> Any:
    try:
        from opentelemetry import trace
    except ImportError as exc:  # pragma: no cover - exercised only without the extra
        raise ImportError(
            "OpenTelemetry export needs the 'otel' extra: "
            "pip install 'agent-kernel-conformance[otel]'"
        ) from exc
    return trace


def _attr_value(value: Any) -> Any:
    if isinstance(value, (str, bool, int, float)):
        return value
    if isinstance(value, (list, tuple)) and value:
        kinds = {type(v) for v in value}
        if len(kinds) == 1 and kinds <= {str, bool, int, float}:
            return list(value)
    return json.dumps(value, ensure_ascii=False, sort_keys=True, default=str)


def _attrs(attributes: dict[str, Any] | None) -> dict[str, Any]:
    return {str(k): _attr_value(v) for k, v in (attributes or {}).items()}


class OTelSpanRecorder:
    """A ``SpanRecorder`` whose spans are OpenTelemetry spans of ``tracer``."""

    def __init__(self, tracer: Any = None) -> None:
        self._trace = _require_otel()
        self._tracer = tracer or self._trace.get_tracer("reference_kernel")
        self._open: dict[str, Any] = {}
        self._known: dict[str, Any] = {}  # every span, so a late child still finds its parent
        self._lock = threading.Lock()

    def start(
        self, name: str, kind: str, parent_id: str | None, attributes: dict[str, Any] | None = None
    ) -> str:
        context = None
        if parent_id is not None:
            with self._lock:
                parent = self._known.get(parent_id)
            if parent is None:
                raise KeyError(f"unknown parent span {parent_id!r}")
            context = self._trace.set_span_in_context(parent)
        attrs = _attrs(attributes)
        attrs[KIND_ATTRIBUTE] = kind
        otel_span = self._tracer.start_span(name, context=context, attributes=attrs)
        span_id = format(otel_span.get_span_context().span_id, "016x")
        with self._lock:
            self._open[span_id] = otel_span
            self._known[span_id] = otel_span
        return span_id

    def end(self, span_id: str, attributes: dict[str, Any] | None = None) -> None:
        with self._lock:
            otel_span = self._open.pop(span_id, None)
        if otel_span is None:
            return  # already ended (or never ours): ending twice is harmless
        if attributes:
            otel_span.set_attributes(_attrs(attributes))
        otel_span.end()
