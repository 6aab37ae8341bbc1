"""Canonical call hashing and 003's doom-loop detector."""

from __future__ import annotations

import json
import random

import pytest
from hypothesis import given
from hypothesis import strategies as st

from reference_kernel.doom import DoomLoopDetector, call_hash, canonical_json
from reference_kernel.errors import ConfigError

json_values = st.recursive(
    st.none() | st.booleans() | st.integers(-1000, 1000) | st.text(max_size=5),
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=4), inner, max_size=4),
    max_leaves=12,
)
objects = st.dictionaries(st.text(max_size=4), json_values, max_size=5)


def _shuffled(value: object, rng: random.Random) -> object:
    if isinstance(value, dict):
        items = list(value.items())
        rng.shuffle(items)
        return {k: _shuffled(v, rng) for k, v in items}
    if isinstance(value, list):
        return [_shuffled(v, rng) for v in value]
    return value


def test_canonical_json_sorts_keys_and_drops_whitespace() -> None:
    assert canonical_json({"b": 1, "a": [1, {"d": 2, "c": "é"}]}) == '{"a":[1,{"c":"é","d":2}],"b":1}'
    assert canonical_json('{ "b" : 1,\n "a" : 2 }') == '{"a":2,"b":1}'


def test_raw_strings_that_are_not_json_objects_are_hashed_as_given() -> None:
    assert canonical_json("not json {") == "not json {"
    assert canonical_json('"quoted"') == '"quoted"'
    assert canonical_json("42") == "42"
    assert call_hash("t", "not json") != call_hash("t", "not  json")


@given(objects, st.integers(0, 2**32), st.sampled_from([None, 0, 2]), st.sampled_from([(",", ":"), (", ", ": ")]))
def test_hash_ignores_key_order_and_whitespace(obj: dict, seed: int, indent: int | None, seps: tuple[str, str]) -> None:
    shuffled = _shuffled(obj, random.Random(seed))
    raw = json.dumps(shuffled, indent=indent, separators=seps)
    assert call_hash("tool", obj) == call_hash("tool", shuffled) == call_hash("tool", raw)


@given(objects, objects)
def test_different_arguments_hash_differently(a: dict, b: dict) -> None:
    if json.dumps(a, sort_keys=True) != json.dumps(b, sort_keys=True):
        assert call_hash("tool", a) != call_hash("tool", b)


def test_tool_name_is_part_of_the_hash() -> None:
    assert call_hash("a", {"x": 1}) != call_hash("b", {"x": 1})
    assert call_hash("ab", "c") != call_hash("a", "bc")  # NUL separator


def test_fires_on_threshold_identical_calls() -> None:
    d = DoomLoopDetector()
    assert d.threshold == 3 and d.window_size == 3
    d.record("read", {"path": "a"})
    d.record("read", '{"path": "a"}')
    assert not d.fired()
    d.record("read", {"path": "a"})
    assert d.fired()
    d.record("read", {"path": "b"})
    assert not d.fired()
    d.reset()
    assert not d.fired()


def test_a_different_call_in_between_breaks_the_run() -> None:
    d = DoomLoopDetector(threshold=3, window_size=10)
    for name in ["x", "x", "y", "x", "x"]:
        d.record(name, {})
    assert not d.fired()
    d.record("x", {})
    assert d.fired()


def test_threshold_one_fires_on_every_call() -> None:
    d = DoomLoopDetector(threshold=1)
    assert not d.fired()
    d.record("x", {})
    assert d.fired()


@pytest.mark.parametrize(
    ("kwargs", "field"),
    [
        ({"threshold": 0}, "doom_loop.threshold"),
        ({"threshold": -3}, "doom_loop.threshold"),
        ({"threshold": 2.5}, "doom_loop.threshold"),
        ({"threshold": 4, "window_size": 3}, "doom_loop.window_size"),
    ],
)
def test_bad_configuration_is_refused(kwargs: dict, field: str) -> None:
    with pytest.raises(ConfigError) as info:
        DoomLoopDetector(**kwargs)
    assert info.value.field == field
    assert field in str(info.value)


def test_none_means_the_default() -> None:
    d = DoomLoopDetector(threshold=None, window_size=None)
    assert (d.threshold, d.window_size) == (3, 3)
    assert DoomLoopDetector(threshold=5).window_size == 5
