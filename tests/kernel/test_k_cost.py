"""Cost formula and 003's cost roll-up over the session tree."""

from __future__ import annotations

import math
import threading

import pytest
from hypothesis import given
from hypothesis import strategies as st
from pydantic import ValidationError

from reference_kernel.cost import CostLedger, Pricing, compute_cost
from reference_kernel.errors import ConfigError


def test_cost_formula_counts_cached_input_separately() -> None:
    p = Pricing(input_usd_per_mtok=3.0, output_usd_per_mtok=15.0, cached_input_usd_per_mtok=0.3)
    assert compute_cost(p, 1_000_000, 0, 0) == pytest.approx(3.0)
    assert compute_cost(p, 0, 1_000_000, 0) == pytest.approx(15.0)
    assert compute_cost(p, 0, 0, 1_000_000) == pytest.approx(0.3)
    assert compute_cost(p, 1000, 200, 500) == pytest.approx((3000 + 3000 + 150) / 1e6)
    assert compute_cost(Pricing(), 10, 10, 10) == 0.0


def test_negative_prices_are_refused() -> None:
    with pytest.raises(ValidationError):
        Pricing(input_usd_per_mtok=-1.0)


def test_root_without_bound_is_unbounded() -> None:
    ledger = CostLedger()
    ledger.open_session("root", None, None)
    assert ledger.remaining("root") == math.inf
    assert ledger.charge("root", 100.0) == []
    assert ledger.spent("root") == 100.0
    assert not ledger.exhausted("root")


def test_child_remaining_is_min_of_parent_remaining_and_own_max() -> None:
    ledger = CostLedger()
    ledger.open_session("root", None, 1.0)
    ledger.charge("root", 0.25)
    ledger.open_session("a", "root", 5.0)   # parent has 0.75 left
    ledger.open_session("b", "root", 0.5)
    ledger.open_session("c", "root", None)
    assert ledger.remaining("a") == 0.75
    assert ledger.remaining("b") == 0.5
    assert ledger.remaining("c") == 0.75


def test_child_spend_counts_against_every_ancestor() -> None:
    ledger = CostLedger()
    ledger.open_session("root", None, 1.0)
    ledger.open_session("child", "root", None)
    ledger.open_session("grandchild", "child", 10.0)
    assert ledger.charge("grandchild", 0.5) == []
    assert ledger.spent("root") == ledger.spent("child") == ledger.spent("grandchild") == 0.5
    assert ledger.remaining("root") == 0.5
    # the root's bound fires from spending in a descendant; spender first, root last
    assert ledger.charge("grandchild", 0.5) == ["grandchild", "child", "root"]
    assert ledger.exhausted("root")


def test_sibling_spend_is_not_charged_to_a_sibling() -> None:
    ledger = CostLedger()
    ledger.open_session("root", None, 1.0)
    ledger.open_session("a", "root", None)
    ledger.open_session("b", "root", None)
    ledger.charge("a", 0.75)
    assert ledger.remaining("b") == 1.0  # b's own view was fixed at spawn
    assert ledger.remaining("root") == 0.25
    assert ledger.charge("b", 0.25) == ["root"]


def test_bad_arguments() -> None:
    ledger = CostLedger()
    with pytest.raises(ConfigError) as info:
        ledger.open_session("r", None, -0.01)
    assert info.value.field == "max_cost_usd"
    with pytest.raises(ConfigError):
        ledger.open_session("r", None, math.nan)
    ledger.open_session("r", None, 0.0)
    assert ledger.exhausted("r")
    with pytest.raises(ValueError, match="already open"):
        ledger.open_session("r", None, None)
    with pytest.raises(KeyError, match="ghost"):
        ledger.open_session("x", "ghost", None)
    with pytest.raises(KeyError, match="ghost"):
        ledger.charge("ghost", 1.0)
    with pytest.raises(ValueError):
        ledger.charge("r", -1.0)


def test_concurrent_charges_are_atomic() -> None:
    ledger = CostLedger()
    ledger.open_session("root", None, None)
    ledger.open_session("a", "root", None)
    ledger.open_session("b", "root", None)

    def spend(sid: str) -> None:
        for _ in range(2000):
            ledger.charge(sid, 0.125)

    threads = [threading.Thread(target=spend, args=(s,)) for s in ("a", "b", "a", "b")]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert ledger.spent("root") == 4 * 2000 * 0.125
    assert ledger.spent("a") == 2 * 2000 * 0.125


# Costs and bounds are multiples of 1/8 so float sums are exact and the model is exact.
money = st.integers(0, 40).map(lambda n: n / 8)


@given(st.data())
def test_ledger_matches_a_model_of_min_remaining_over_random_trees(data: st.DataObject) -> None:
    n = data.draw(st.integers(1, 12))
    parents: list[int | None] = [None]
    for i in range(1, n):
        parents.append(data.draw(st.integers(0, i - 1)))
    bounds = [data.draw(st.none() | money) for _ in range(n)]
    ledger = CostLedger()
    remaining: list[float] = []
    spent = [0.0] * n
    # Interleave opening sessions and charging existing ones, as a live tree does.
    ops = data.draw(st.lists(st.tuples(st.integers(0, 100), money), max_size=30))
    opened = 0
    pending = list(ops)
    while opened < n or pending:
        if opened < n and (opened == 0 or not pending or data.draw(st.booleans())):
            parent = parents[opened]
            own = math.inf if bounds[opened] is None else bounds[opened]
            expected = own if parent is None else min(remaining[parent], own)
            ledger.open_session(str(opened), None if parent is None else str(parent), bounds[opened])
            remaining.append(expected)
            assert ledger.remaining(str(opened)) == expected
            opened += 1
            continue
        pick, cost = pending.pop(0)
        sid = pick % opened
        path = []
        node: int | None = sid
        while node is not None:
            path.append(node)
            remaining[node] -= cost
            spent[node] += cost
            node = parents[node]
        fired = ledger.charge(str(sid), cost)
        assert fired == [str(i) for i in path if remaining[i] <= 0]
    for i in range(n):
        assert ledger.remaining(str(i)) == remaining[i]
        assert ledger.spent(str(i)) == spent[i]
        assert ledger.exhausted(str(i)) == (remaining[i] <= 0)
