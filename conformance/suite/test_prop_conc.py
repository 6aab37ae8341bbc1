"""Properties of 003's turn-level concurrency (CONC) and of the result order (TOOL-003, kernel).

One generator of random turns: a few calls over a fixed set of tools whose ConcurrencySpecs and
providers give every kind of key (own key per call, key-field values, provider-wide lock token).
Expected keys follow 003's rule. Providers never mix safe and unsafe operations (whether a safe
operation shares its provider's lock token is left open), and undeclared operations are resource
ones only (an undeclared data-source operation is ambiguous in 003).
"""

from __future__ import annotations

from typing import Any

from hypothesis import given
from hypothesis import strategies as st

from conformance.errors import ConformanceFailure, expect_order
from conformance.suite.properties import PROPERTY_SETTINGS, context, requirement
from conformance.boundary.scenario import ConcurrencySpec, ModelResponse, ScriptedToolCall, ToolDef
from conformance.steps.conc import conc_then_result_order, expect_no_overlap, run_tolerant

#: name → (provider, spec); None = undeclared (used for resource calls only).
KEY_TOOLS: dict[str, tuple[str, ConcurrencySpec | None]] = {
    "ka": ("p_keyed", ConcurrencySpec(safe=True, key_fields=["path"])),
    "kb": ("p_keyed", ConcurrencySpec(safe=True, key_fields=["path"])),
    "kc": ("p_keyed", ConcurrencySpec(safe=True, key_fields=["path", "mode"])),
    "sa": ("p_safe", ConcurrencySpec(safe=True)),
    "ua": ("p_locked", ConcurrencySpec(safe=False)),
    "ub": ("p_locked", ConcurrencySpec(safe=False)),
    "na": ("p_locked", None),
    "uc": ("p_other", ConcurrencySpec(safe=False)),
}

#: Timeout of the property scenarios (a strict rendezvous then waits at most 0.8 s).
TIMEOUT_S = 2.0


def expected_key(tool: str, call_id: str, args: dict[str, Any]) -> tuple[Any, ...]:
    """003: (provider, tool, key-field values) when safe, the provider-wide token otherwise."""
    provider, spec = KEY_TOOLS[tool]
    if spec is None or not spec.safe:
        return ("provider", provider)
    if not spec.key_fields:
        return ("call", call_id)
    return ("key", provider, tool, tuple(args.get(f) for f in spec.key_fields))


@st.composite
def key_turns(draw: Any, kinds: tuple[str, ...] = ("data_source", "resource")) -> tuple[str, list[tuple[str, str, dict[str, Any]]]]:
    """(kind, [(call id, tool, args)]) for one turn of 2 to 5 calls of one kind."""
    kind = draw(st.sampled_from(kinds))
    names = [n for n in KEY_TOOLS if kind == "resource" or KEY_TOOLS[n][1] is not None]
    n = draw(st.integers(2, 5))
    calls = []
    for i in range(n):
        tool = draw(st.sampled_from(names))
        calls.append((f"x{i + 1}", tool, {"path": draw(st.sampled_from(["a", "b"])), "mode": draw(st.sampled_from(["r", "w"])), "n": i}))
    return kind, calls


def build_key_turn(ctx: Any, kind: str, calls: list[tuple[str, str, dict[str, Any]]], helpers: bool) -> None:
    """The tools, one response with the calls (plus one helper call per call), then an answer."""
    for name, (provider, spec) in KEY_TOOLS.items():
        ctx.add_tool(ToolDef(name=name, kind=kind, provider=provider, concurrency=spec))
    scripted = [ScriptedToolCall(id=cid, name=tool, args=args) for cid, tool, args in calls]
    if helpers:
        ctx.add_tool(ToolDef(name="helper", kind=kind, provider="p_helper", concurrency=ConcurrencySpec(safe=True)))
        for cid, _tool, _args in calls:
            scripted.append(ScriptedToolCall(id=f"h_{cid}", name="helper", args={"for": cid}))
            ctx.scenario.rendezvous.append([cid, f"h_{cid}"])
    ctx.add_response(ModelResponse(tool_calls=scripted))
    ctx.add_response(ModelResponse(text="done"))
    ctx.scenario.timeout_s = TIMEOUT_S


def groups_by_key(calls: list[tuple[str, str, dict[str, Any]]]) -> dict[tuple[Any, ...], list[str]]:
    groups: dict[tuple[Any, ...], list[str]] = {}
    for cid, tool, args in calls:
        groups.setdefault(expected_key(tool, cid, args), []).append(cid)
    return groups


#: Whose subject it is that calls of distinct keys overlap, by the calls' kind, when every one is
#: safe; with an unsafe call among them (a provider-wide key) it is CONC-006's.
SAFE_KEYS_SUBJECT = {"data_source": "CONC-001", "resource": "CONC-005"}


def check_distinct_keys(name: str, turn: tuple[str, list[tuple[str, str, dict[str, Any]]]]) -> None:
    """One representative call per distinct key (its first call) must all be running at once. A
    rendezvous that does not meet is the subject of one requirement (one fault, one verdict):
    CONC-006 when an unsafe call's provider-wide key is among them, else the safe keys' rule."""
    kind, calls = turn
    ctx = context("kernel", name)
    build_key_turn(ctx, kind, calls, helpers=False)
    groups = groups_by_key(calls)
    reps = [ids[0] for ids in groups.values()]
    if len(reps) >= 2:
        ctx.scenario.rendezvous.append(reps)
    try:
        ctx.run()  # a rendezvous that does not meet fails here, naming the calls
    except ConformanceFailure as exc:
        if exc.subject:
            exc.subject = ["CONC-006" if any(key[0] == "provider" for key in groups) else SAFE_KEYS_SUBJECT[kind]]
            if exc.subject == ["CONC-006"]:
                # provider-wide keys held apart: a kernel without concurrency keys (one global
                # barrier for unsafe calls) is CONC-002's, counted there
                ctx.block_on_lacking_mechanism("concurrency_keys", f"calls of distinct provider-wide keys did not run concurrently ({exc})")
        raise
    started = {e["call_id"] for e in ctx.tool_starts()}
    missing = [cid for cid, _t, _a in calls if cid not in started]
    if missing:
        raise ConformanceFailure("tool calls of the turn", "every call ran", f"{missing} did not run")
    if len(reps) >= 2:
        ctx.evidence.saw(f"{len(reps)} calls of distinct keys were running at once")


@requirement("CONC-001", "CONC-006", profile="kernel")
@PROPERTY_SETTINGS
@given(turn=key_turns(("data_source",)))
def test_prop_distinct_data_source_keys_run_concurrently(turn: tuple[str, list[tuple[str, str, dict[str, Any]]]]) -> None:
    """Data-source calls: one call per distinct key, all running at once (step 9)."""
    check_distinct_keys("distinct data-source keys run concurrently", turn)


@requirement("CONC-005", "CONC-006", profile="kernel")
@PROPERTY_SETTINGS
@given(turn=key_turns(("resource",)))
def test_prop_distinct_resource_keys_run_concurrently(turn: tuple[str, list[tuple[str, str, dict[str, Any]]]]) -> None:
    """Approved resource calls: one call per distinct key, all applied at once (step 12)."""
    check_distinct_keys("distinct resource keys are applied concurrently", turn)


def check_equal_keys(name: str, turn: tuple[str, list[tuple[str, str, dict[str, Any]]]], key_kind: str) -> None:
    """Calls sharing a key of this kind ("key": key-field values, "provider": provider-wide lock)
    are never in flight together. Each call waits inside its tool for a helper call of its own
    key, so overlapping calls are caught whatever order they start in; helpers that never come (a
    kernel that runs everything in turn) are tolerated after a short wait."""
    kind, calls = turn
    ctx = context("kernel", name)
    build_key_turn(ctx, kind, calls, helpers=True)
    run_tolerant(ctx, all_soft=True)
    for key, ids in groups_by_key(calls).items():
        if key[0] == key_kind and len(ids) >= 2:
            expect_no_overlap(ctx, ids, f" (same concurrency key {key})")  # fails for a call that did not run
            ctx.evidence.saw(f"{len(ids)} calls sharing a {key_kind} key ran one at a time")


@requirement("CONC-002", profile="kernel")
@PROPERTY_SETTINGS
@given(turn=key_turns())
def test_prop_equal_key_values_never_overlap(turn: tuple[str, list[tuple[str, str, dict[str, Any]]]]) -> None:
    """Calls of one safe operation with equal key-field values run one after the other."""
    check_equal_keys("equal key-field values never overlap", turn, "key")


@requirement("CONC-003", "CONC-004", profile="kernel")
@PROPERTY_SETTINGS
@given(turn=key_turns())
def test_prop_provider_lock_never_overlaps(turn: tuple[str, list[tuple[str, str, dict[str, Any]]]]) -> None:
    """Calls to unsafe or undeclared operations of one provider run one after the other."""
    check_equal_keys("a provider-wide lock never overlaps", turn, "provider")


@st.composite
def fan_out(draw: Any) -> tuple[list[tuple[str, str]], list[str]]:
    """([(call id, kind)], finish order): data-source calls finish in a random order, then the
    resource calls in a random order (they run at step 12, after step 9); interactive calls run
    one at a time and keep no finish order."""
    kinds = draw(st.lists(st.sampled_from(["data_source", "resource", "interactive"]), min_size=1, max_size=5))
    calls = [(f"c{i + 1}", k) for i, k in enumerate(kinds)]
    ds = draw(st.permutations([c for c, k in calls if k == "data_source"]))
    rs = draw(st.permutations([c for c, k in calls if k == "resource"]))
    return calls, list(ds) + list(rs)


TOOL_OF_KIND = {"data_source": "lookup", "resource": "write", "interactive": "ask"}


@requirement("TOOL-003", profile="kernel")
@PROPERTY_SETTINGS
@given(case=fan_out())
def test_prop_results_in_request_order(case: tuple[list[tuple[str, str]], list[str]]) -> None:
    """Whatever the fan-out and the finishing order, the tool_result messages of the next model
    request are in the order the model asked for the calls (or, reading kernel-result-order,
    grouped by kind with each group in that order) — never in the finishing order."""
    calls, finish = case
    ctx = context("kernel", "results in the order the model asked")
    ctx.add_tool(ToolDef(name="lookup", kind="data_source", concurrency=ConcurrencySpec(safe=True)))
    ctx.add_tool(ToolDef(name="write", kind="resource", concurrency=ConcurrencySpec(safe=True)))
    ctx.add_tool(ToolDef(name="ask", kind="interactive"))
    ctx.add_response(
        ModelResponse(tool_calls=[ScriptedToolCall(id=cid, name=TOOL_OF_KIND[k], args={"n": cid}) for cid, k in calls])
    )
    ctx.add_response(ModelResponse(text="done"))
    ctx.scenario.finish_order = finish
    ctx.scenario.timeout_s = TIMEOUT_S
    run_tolerant(ctx, all_soft=True)  # the finishing order only shuffles; concurrency is CONC's
    conc_then_result_order(ctx, "2", ", ".join(cid for cid, _k in calls))
