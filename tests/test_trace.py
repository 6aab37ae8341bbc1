"""Canonical traces: normalisation (pure, hypothesis-tested), determinism across runs and event
loops, legal variants equal up to the allowed freedom, a result-reordering mutant pinpointed,
``akc trace diff`` and ``akc run --traces``, and traces on failed checks in the JSON report."""

from __future__ import annotations

import json
import sys
import uuid
from pathlib import Path
from typing import Any

import jsonschema
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from typer.testing import CliRunner

from conformance import cli
from conformance.trace import normalise
from conformance.trace.normalise import apply_freedoms, canonical_order, canonical_spans, renumber, scrub
from conformance.paths import schemas_dir
from conformance.harness.runner import run_sync
from conformance.boundary.scenario import HOOK_POINTS, Scenario
from conformance.trace.canonical import build_trace, dump, load, trace_filename
from conformance.trace.diff import compare, diff_paths, render

ROOT = Path(__file__).resolve().parents[1]
if str(ROOT) not in sys.path:  # the fakes are imported as tests.fakes.*
    sys.path.insert(0, str(ROOT))

from tests.fakes import trace_kernels  # noqa: E402

SETTINGS = settings(max_examples=60, derandomize=True, deadline=None, database=None)


# =========================================================================== normalisation


def _uuid(n: int) -> str:
    return str(uuid.UUID(int=n + 1))


@st.composite
def id_events(draw: Any) -> tuple[list[dict[str, Any]], list[str]]:
    """Events that mention kernel ids (UUIDs) under id keys and inside texts."""
    ids = [_uuid(i) for i in range(draw(st.integers(1, 6)))]
    events = []
    for _ in range(draw(st.integers(1, 8))):
        pick = st.sampled_from(ids)
        shape = draw(st.sampled_from(["turn", "text", "span", "nested"]))
        if shape == "turn":
            events.append({"kind": "hook", "turn": {"session_id": draw(pick), "turn_id": draw(pick), "parent_turn_id": None}})
        elif shape == "text":
            events.append({"kind": "model_request", "messages": [f"user: about {draw(pick)} and c0_0"]})
        elif shape == "span":
            events.append({"kind": "span", "span_id": draw(pick), "parent_id": draw(st.none() | pick)})
        else:
            events.append({"kind": "outcome", "payload": {"call_id": "c0_0", "session_id": draw(pick), "x": [draw(pick)]}})
    return events, ids


def _rename(value: Any, mapping: dict[str, str]) -> Any:
    text = json.dumps(value)
    for old, new in mapping.items():
        text = text.replace(old, new)
    return json.loads(text)


@SETTINGS
@given(case=id_events(), data=st.data())
def test_renumbering_is_stable_under_any_renaming_of_ids(case: Any, data: Any) -> None:
    events, ids = case
    fresh = data.draw(st.permutations([_uuid(1000 + i) for i in range(len(ids))]))
    renamed = _rename(events, dict(zip(ids, fresh, strict=True)))
    assert renumber(renamed) == renumber(events)


def _keyed_labels(value: Any, out: list[str]) -> list[str]:
    if isinstance(value, dict):
        for k, v in value.items():
            if k in normalise.ID_KEYS and isinstance(v, str):
                out.append(v)
            _keyed_labels(v, out)
    elif isinstance(value, list):
        for v in value:
            _keyed_labels(v, out)
    return out


@SETTINGS
@given(case=id_events())
def test_renumbering_numbers_each_kind_by_first_appearance_and_keeps_harness_ids(case: Any) -> None:
    events, ids = case
    renumbered = renumber(events)
    out = json.dumps(renumbered)
    assert not any(i in out for i in ids)
    assert ("c0_0" in out) == ("c0_0" in json.dumps(events))
    labels = list(dict.fromkeys(_keyed_labels(renumbered, [])))
    for kind in ("session", "turn", "span"):
        numbers = [int(x.rsplit("-", 1)[1]) for x in labels if x.startswith(kind + "-")]
        assert numbers == list(range(1, len(numbers) + 1)), (kind, labels)


def test_renumbering_gives_the_documented_labels() -> None:
    s, t = _uuid(7), _uuid(3)
    out = renumber([{"turn": {"session_id": s, "turn_id": t}}, {"text": f"session {s}"}])
    assert out == [{"turn": {"session_id": "session-1", "turn_id": "turn-1"}}, {"text": "session session-1"}]


def test_scrub_drops_times_rounds_costs_and_keeps_tool_args() -> None:
    raw = {
        "budget": {"elapsed_s": 3.2, "cost_usd": 0.1 + 0.2, "remaining_cost_budget_usd": 1 / 3},
        "duration_ms": 12.5,
        "text": "Current time: 2026-11-30T06:36:56+00:00.",
        "args": {"elapsed_s": 1, "when": "2026-11-30T06:36:56"},
    }
    assert scrub(raw) == {
        "budget": {"cost_usd": 0.3, "remaining_cost_budget_usd": 0.333333333},
        "text": "Current time: <timestamp>.",
        "args": {"elapsed_s": 1, "when": "2026-11-30T06:36:56"},
    }


def _call_chain(cid: str) -> list[dict[str, Any]]:
    return [
        {"kind": "policy", "call_id": cid},
        {"kind": "tool_start", "call_id": cid},
        {"kind": "tool_end", "call_id": cid},
        {"kind": "hook", "point": "post-tool-call", "call_id": cid},
    ]


@st.composite
def interleavings(draw: Any) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    """Two logs of one turn: barriers in place, the calls' chains interleaved two ways."""
    n = draw(st.integers(1, 4))
    chains = [_call_chain(f"c0_{i}") for i in range(n)]
    pre = [{"kind": "hook", "point": "pre-tool-call", "call_id": f"c0_{i}"} for i in range(n)]

    def shuffle() -> list[dict[str, Any]]:
        heads = [0] * n
        out = []
        while any(h < len(chains[i]) for i, h in enumerate(heads)):
            i = draw(st.sampled_from([i for i in range(n) if heads[i] < len(chains[i])]))
            out.append(chains[i][heads[i]])
            heads[i] += 1
        return out

    head = [{"kind": "model_response", "index": 0}] + pre
    tail = [{"kind": "hook", "point": "post-apply", "call_id": None}, {"kind": "model_request", "index": 1}]
    return head + shuffle() + tail, head + shuffle() + tail


@SETTINGS
@given(logs=interleavings())
def test_interleavings_of_concurrent_calls_compare_equal(logs: Any) -> None:
    a, b = logs
    assert canonical_order(a) == canonical_order(b)
    assert sorted(map(json.dumps, canonical_order(a))) == sorted(map(json.dumps, a))  # nothing lost


def test_a_tool_started_before_its_pre_tool_call_hook_is_not_equal() -> None:
    pre = {"kind": "hook", "point": "pre-tool-call", "call_id": "c0_0"}
    start, end = {"kind": "tool_start", "call_id": "c0_0"}, {"kind": "tool_end", "call_id": "c0_0"}
    assert canonical_order([pre, start, end]) != canonical_order([start, pre, end])
    # commonagent: pre_tool_call interleaves with other calls, but not within its own call
    ca = {"kind": "hook", "point": "pre_tool_call", "call_id": "c0_0"}
    assert canonical_order([ca, start, end]) != canonical_order([start, ca, end])


def test_pre_tool_call_dispatches_keep_declaration_order() -> None:
    a = [{"kind": "hook", "point": "pre-tool-call", "call_id": c} for c in ("c0_0", "c0_1")]
    assert canonical_order(a) != canonical_order(a[::-1])


def test_spans_compare_as_a_tree_whatever_the_report_order() -> None:
    spans = [
        {"span_id": "s1", "parent_id": None, "name": "session", "kind": "session", "attributes": {}},
        {"span_id": "s2", "parent_id": "s1", "name": "b", "kind": "tool", "attributes": {"call_id": "c0_1"}, "start": 2.0},
        {"span_id": "s3", "parent_id": "s1", "name": "a", "kind": "tool", "attributes": {"call_id": "c0_0"}, "end": 9.0},
    ]
    x = renumber(canonical_spans(spans))
    y = renumber(canonical_spans([spans[2], spans[0], spans[1]]))
    assert x == y
    assert [s["name"] for s in x] == ["session", "a", "b"] and "start" not in json.dumps(x)


def test_freedoms_replace_the_synthetic_instruction_and_the_doom_subtype_only() -> None:
    events = [
        {"kind": "model_request", "kept": 0, "messages": ["user: hi"], "tools": ["t"]},
        {"kind": "model_request", "kept": 1, "messages": ["assistant: x", "user: Stop now."], "tools": []},
        {"kind": "outcome", "subtype": "error_doom"},
        {"kind": "hook", "payload": {"subtype": "error_doom", "text": "user: hi"}},
    ]
    out = apply_freedoms(events, "error_doom")
    assert out[1]["messages"] == ["assistant: x", f"user: {normalise.SYNTHETIC}"]
    assert out[2]["subtype"] == out[3]["payload"]["subtype"] == normalise.DOOM_SUBTYPE
    assert out[0] == events[0] and out[3]["payload"]["text"] == "user: hi"


# =========================================================================== traces of real runs


def _scenario(profile: str = "kernel", **extra: Any) -> Scenario:
    data: dict[str, Any] = {
        "name": "fan-out",
        "profile": profile,
        "tools": [{"name": "probe", "concurrency": {"safe": True}, "result": "{name} {call_id}"}],
        "model": {
            "pricing": {"input_usd_per_mtok": 3.0, "output_usd_per_mtok": 15.0},
            "responses": [
                {"tool_calls": [{"id": f"a{i}", "name": "probe", "args": {"n": i}} for i in (1, 2, 3)], "usage": {"input_tokens": 10, "output_tokens": 7}},
                {"text": "done", "usage": {"input_tokens": 3, "output_tokens": 1}},
            ],
        },
        "rendezvous": [["a1", "a2", "a3"]],
        "finish_order": ["a3", "a2", "a1"],
        "hooks": [{"id": f"rec:{p}", "point": p} for p in HOOK_POINTS[profile]],
        "user_messages": [{"text": "go"}],
    }
    data.update(extra)
    return Scenario.model_validate(data)


def _doom_scenario() -> Scenario:
    return _scenario(
        tools=[{"name": "probe", "concurrency": {"safe": True}}],
        model={"responses": [{"tool_calls": [{"name": "probe", "args": {"n": 1}}], "repeat": 3}, {"text": "final"}]},
        rendezvous=[],
        finish_order=[],
        doom_loop={"threshold": 3},
    )


def _trace(adapter: Any, scenario: Scenario, backend: str = "asyncio") -> Any:
    return build_trace(run_sync(adapter, scenario, backend), feature="f", scenario=scenario.name, info=adapter.info)


@pytest.mark.parametrize("profile", ["kernel", "commonagent"])
def test_two_runs_give_equal_traces_on_asyncio_and_trio(profile: str) -> None:
    from reference_kernel.adapter import factory

    scenario = _scenario(profile)
    traces = [_trace(factory(), scenario, b) for b in ("asyncio", "asyncio", "trio", "trio")]
    assert all(t == traces[0] for t in traces[1:])
    text = dump(traces[0])
    assert load(text) == traces[0]
    jsonschema.validate(json.loads(text), json.loads((schemas_dir() / "trace.schema.json").read_text()))
    kinds = [e.kind for e in traces[0].events]
    for kind in ("hook", "model_request", "model_response", "tool_start", "tool_end", "usage", "outcome", "span", "end"):
        assert kind in kinds
    assert '"session-1"' in text and "00000" not in text  # UUIDs renumbered


def test_a_legal_variant_is_equal_up_to_the_allowed_freedom() -> None:
    from reference_kernel.adapter import factory

    ref, variant = _trace(factory(), _doom_scenario()), _trace(trace_kernels.other_wording(), _doom_scenario())
    assert ref.events != variant.events  # the wording and the subtype differ...
    assert compare(ref, variant) is None  # ...and both are free choices


def test_a_result_reordering_mutant_diverges_at_the_first_misplaced_tool_result() -> None:
    from reference_kernel.adapter import factory

    ref, mutant = _trace(factory(), _scenario()), _trace(trace_kernels.results_reversed(), _scenario())
    d = compare(ref, mutant)
    assert d is not None
    assert d.a is not None and d.a["point"] == "context-assemble"  # the first place the order shows
    assert d.path == "payload.history.new[1] (message 3 of the list)"
    assert (d.a_value, d.b_value) == ("tool_result a1: probe a1", "tool_result a3: probe a3")
    before = ref.event_dicts()[: d.index]
    assert before == mutant.event_dicts()[: d.index]  # nothing differs earlier
    text = render(diff_paths_of(ref, mutant))
    assert "first divergence at event" in text and "tool_result a3: probe a3" in text


def diff_paths_of(a: Any, b: Any) -> Any:
    from conformance.trace.diff import DiffResult

    d = compare(a, b)
    return DiffResult(a="A", b="B", compared=1, equal=0 if d else 1, differences=[d] if d else [])


# =========================================================================== akc trace diff


def _write_dir(folder: Path, traces: dict[str, Any]) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    for name, trace in traces.items():
        (folder / name).write_text(dump(trace), encoding="utf-8")
    return folder


def test_trace_diff_cli_exit_codes_output_and_json(tmp_path: Path) -> None:
    from reference_kernel.adapter import factory

    ref = _trace(factory(), _scenario())
    mutant = _trace(trace_kernels.results_reversed(), _scenario())
    other = _trace(factory(), _doom_scenario())
    a = _write_dir(tmp_path / "a", {"x.json": ref, "only-a.json": other})
    b = _write_dir(tmp_path / "b", {"x.json": mutant, "only-b.json": other})
    same = _write_dir(tmp_path / "same", {"x.json": ref, "only-a.json": other})
    runner = CliRunner()
    app = cli.app
    cli._register()

    ok = runner.invoke(app, ["trace", "diff", str(a), str(same)])
    assert ok.exit_code == 0, ok.output
    assert "2 compared, 2 equal" in ok.output

    bad = runner.invoke(app, ["trace", "diff", str(a), str(b)])
    assert bad.exit_code == 1
    assert "first divergence at event" in bad.output and "only in A" in bad.output and "only-b.json" in bad.output

    js = runner.invoke(app, ["trace", "diff", str(a), str(b), "--json"])
    assert js.exit_code == 1
    data = json.loads(js.output)
    assert data["only_in_a"] == ["only-a.json"] and data["only_in_b"] == ["only-b.json"]
    assert data["differences"][0]["b_value"] == "tool_result a3: probe a3" and data["equivalent"] is False

    single = runner.invoke(app, ["trace", "diff", str(a / "x.json"), str(same / "x.json")])
    assert single.exit_code == 0

    (tmp_path / "junk.json").write_text("{}")
    for args in ([str(a), str(tmp_path / "nope")], [str(tmp_path / "junk.json"), str(a / "x.json")], [str(a), str(a / "x.json")]):
        r = runner.invoke(app, ["trace", "diff", *args])
        assert r.exit_code == 2, r.output
        assert "Traceback" not in r.output and "akc trace diff:" in r.output


def test_trace_file_names_are_slugs_of_feature_and_scenario() -> None:
    assert trace_filename("Tool calls (003)", "Results go back in order [a-b]") == "tool-calls-003--results-go-back-in-order-a-b.json"
    long = trace_filename("F", "x" * 300)
    assert len(long) < 120 and long != trace_filename("F", "x" * 299)


# =========================================================================== akc run --traces, reports


def test_run_writes_one_trace_per_scenario_and_failed_checks_carry_theirs(tmp_path: Path) -> None:
    from conformance.harness.certify import SuiteOptions, run_suite

    run = run_suite(
        SuiteOptions(
            adapter="tests.fakes.trace_kernels:results_reversed",
            reqs=["TOOL-003"],
            profile="kernel",
            traces_dir=str(tmp_path / "traces"),
            json_path=str(tmp_path / "r.json"),
        )
    )
    assert run.exit_code == 1
    files = sorted((tmp_path / "traces").glob("*.json"))
    assert files and all(load(f.read_text()).kernel.name == "reference-kernel/results-reversed" for f in files)
    report = json.loads((tmp_path / "r.json").read_text())
    jsonschema.validate(report, json.loads((schemas_dir() / "report.schema.json").read_text()))
    checks = [c for r in report["requirements"] for c in r["checks"]]
    failed = [c for c in checks if c["outcome"] == "fail"]
    assert failed and all(c["trace"] and c["trace"]["scenario"] == c["scenario"] for c in failed)
    assert all(c["trace"] is None for c in checks if c["outcome"] == "pass")
    names = {f.name for f in files}
    assert {trace_filename(c["feature"], c["scenario"]) for c in checks} <= names


def test_suite_traces_are_the_same_on_asyncio_and_trio(tmp_path: Path) -> None:
    """Real concurrency scenarios (rendezvous, finish orders) give one trace whatever the loop."""
    from conformance.harness.certify import SuiteOptions, run_suite

    for backend in ("asyncio", "trio"):
        run = run_suite(SuiteOptions(reqs=["CONC-001", "CONC-002"], backend=backend, traces_dir=str(tmp_path / backend)))
        assert run.exit_code == 0, run.output[-2000:]
    result = diff_paths(tmp_path / "asyncio", tmp_path / "trio")
    assert result.compared >= 3 and result.equivalent, render(result)


def test_akc_run_offers_traces() -> None:
    cli._register()
    out = CliRunner().invoke(cli.app, ["run", "--help"], env={"COLUMNS": "200"})
    assert out.exit_code == 0 and "--traces" in out.output


def test_calls_that_run_one_at_a_time_keep_their_order() -> None:
    a = _call_chain("i1") + _call_chain("i2")
    b = _call_chain("i2") + _call_chain("i1")
    assert canonical_order(a) == canonical_order(b)  # independent calls: any interleaving
    shared = {"i1": "~one", "i2": "~one"}
    assert canonical_order(a, shared) != canonical_order(b, shared)  # one lane: order kept


def test_a_new_run_clears_old_traces_but_nothing_else(tmp_path: Path) -> None:
    from conformance.trace.canonical import clear_traces
    from reference_kernel.adapter import factory

    (tmp_path / "old.json").write_text(dump(_trace(factory(), _scenario())))
    (tmp_path / "mine.json").write_text('{"format": "something else"}')
    (tmp_path / "notes.txt").write_text("keep")
    assert clear_traces(tmp_path) == 1
    assert sorted(p.name for p in tmp_path.iterdir()) == ["mine.json", "notes.txt"]


def test_traces_into_a_file_is_a_usage_error(tmp_path: Path) -> None:
    from conformance.harness.certify import SuiteOptions, run_suite
    from conformance.errors import UsageError

    (tmp_path / "f").write_text("x")
    with pytest.raises(UsageError, match="not a folder"):
        run_suite(SuiteOptions(smoke=True, traces_dir=str(tmp_path / "f")))


def test_trace_diff_only_ignore_all_and_summary_by_kind(tmp_path: Path, akc_here: Any) -> None:
    """Through the ``akc`` entry point (exit code, stdout, stderr) in this interpreter (conftest)."""
    _akc = akc_here
    from reference_kernel.adapter import factory

    ref = _trace(factory(), _scenario())
    mutant = _trace(trace_kernels.results_reversed(), _scenario())
    a = _write_dir(tmp_path / "a", {"x.json": ref})
    b = _write_dir(tmp_path / "b", {"x.json": mutant})

    plain = _akc("trace", "diff", str(a), str(b))
    assert plain.returncode == 1, plain.stderr
    assert "divergences by kind" in plain.stdout and "model requests" in plain.stdout
    assert "--all shows them" in plain.stdout

    every = _akc("trace", "diff", str(a), str(b), "--all")
    assert every.returncode == 1 and "all " in every.stdout and "divergences:" in every.stdout
    assert every.stdout.count("≠") > plain.stdout.count("≠")

    # The reversed results reach the model and the hooks' history; the outcome agrees.
    hooks = _akc("trace", "diff", str(a), str(b), "--only", "outcome,hooks")
    assert hooks.returncode == 1 and "hook payload" in hooks.stdout and "model requests" not in hooks.stdout
    same = _akc("trace", "diff", str(a), str(b), "--only", "outcome")
    assert same.returncode == 0, same.stdout
    assert "compared: only outcome" in same.stdout and "1 compared, 1 equal" in same.stdout
    rest = _akc("trace", "diff", str(a), str(b), "--ignore", "hooks,messages,spans,tools")
    assert rest.returncode == 0, rest.stdout

    data = json.loads(_akc("trace", "diff", str(a), str(b), "--json").stdout)
    first = data["differences"][0]
    assert first["kind"] and first["spots"] and first["spots"][0]["kind"]

    bad = _akc("trace", "diff", str(a), str(b), "--only", "outcome,bogus")
    assert bad.returncode == 2 and "--only: unknown part bogus" in bad.stderr and "Traceback" not in bad.stderr
