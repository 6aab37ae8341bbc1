"""Span recording (memory) and its OpenTelemetry mapping."""

from __future__ import annotations

import itertools

import pytest

from conformance.boundary.adapter import Span
from reference_kernel.spans import MemorySpanRecorder, SpanRecorder, span


@pytest.fixture(params=["asyncio", "trio"])
def anyio_backend(request: pytest.FixtureRequest) -> str:
    return request.param


def fake_clock() -> object:
    ticks = itertools.count()
    return lambda: float(next(ticks))


def test_memory_spans_have_the_adapter_shape_and_tree() -> None:
    rec = MemorySpanRecorder(fake_clock())
    assert isinstance(rec, SpanRecorder)
    with span(rec, "session", "session", None, session_id="s") as sid:
        with span(rec, "turn 1", "turn", sid, turn=1) as tid:
            mid = rec.start("model call", "model_call", tid)
            rec.end(mid, {"output_tokens": 3})
            rec.end(mid, {"ignored": True})  # a second end is harmless
    spans = [Span.model_validate(s) for s in rec.spans]
    assert [(s.name, s.kind, s.parent_id) for s in spans] == [
        ("session", "session", None),
        ("turn 1", "turn", sid),
        ("model call", "model_call", tid),
    ]
    assert [(s.start, s.end) for s in spans] == [(0.0, 5.0), (1.0, 4.0), (2.0, 3.0)]
    assert spans[0].attributes == {"session_id": "s"}
    assert spans[2].attributes == {"output_tokens": 3}
    assert len({s.span_id for s in spans}) == 3


def test_a_failing_block_still_ends_its_span() -> None:
    rec = MemorySpanRecorder(fake_clock())
    with pytest.raises(RuntimeError):
        with span(rec, "tool", "tool", None):
            raise RuntimeError("boom")
    assert rec.spans[0]["end"] is not None
    assert rec.spans[0]["attributes"] == {"error": "RuntimeError"}


def test_ending_an_unknown_span_is_an_error() -> None:
    with pytest.raises(KeyError):
        MemorySpanRecorder().end("nope")


@pytest.mark.anyio
async def test_async_span() -> None:
    rec = MemorySpanRecorder(fake_clock())
    async with span(rec, "veto chain", "veto_chain", None, items=2) as vid:
        assert rec.spans[0]["span_id"] == vid
        assert rec.spans[0]["end"] is None
    assert rec.spans[0]["end"] == 1.0


def test_otel_recorder_keeps_parents_kinds_and_attributes() -> None:
    pytest.importorskip("opentelemetry.sdk", reason="the 'otel' extra is not installed")
    from opentelemetry.sdk.trace import TracerProvider
    from opentelemetry.sdk.trace.export import SimpleSpanProcessor
    from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

    from reference_kernel.otel import KIND_ATTRIBUTE, OTelSpanRecorder

    exporter = InMemorySpanExporter()
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    rec = OTelSpanRecorder(provider.get_tracer("test"))
    assert isinstance(rec, SpanRecorder)
    with span(rec, "turn", "turn", None, turn=1, tags=["a:b"], payload={"x": 1}) as tid:
        with span(rec, "tool", "tool", tid, name="weather") as tool_id:
            pass
        late = rec.start("model", "model_call", tid, None)
    rec.end(late, {"tokens": 5})
    rec.end(late)  # harmless
    done = {s.name: s for s in exporter.get_finished_spans()}
    assert set(done) == {"turn", "tool", "model"}
    turn, tool, model = done["turn"], done["tool"], done["model"]
    assert format(turn.context.span_id, "016x") == tid
    assert format(tool.context.span_id, "016x") == tool_id
    assert tool.parent.span_id == turn.context.span_id
    assert model.parent.span_id == turn.context.span_id
    assert tool.context.trace_id == turn.context.trace_id
    assert turn.parent is None
    assert turn.attributes[KIND_ATTRIBUTE] == "turn"
    assert turn.attributes["tags"] == ("a:b",)
    assert turn.attributes["payload"] == '{"x": 1}'
    assert model.attributes["tokens"] == 5
    with pytest.raises(KeyError):
        rec.start("orphan", "tool", "0000000000000bad")
