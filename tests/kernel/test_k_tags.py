"""001's tag grammar and the turn's tag set."""

from __future__ import annotations

import string

import pytest
from hypothesis import given
from hypothesis import strategies as st

from reference_kernel.errors import ConfigError
from reference_kernel.tags import merge_tags, validate_tag

KEY_CHARS = string.ascii_lowercase + string.digits + "_-"
VALUE_CHARS = string.ascii_letters + string.digits + "_-."

keys = st.text(alphabet=KEY_CHARS, min_size=1, max_size=12)
values = st.text(alphabet=VALUE_CHARS, min_size=1, max_size=12)
tags = st.builds(lambda k, v: f"{k}:{v}", keys, values)


@pytest.mark.parametrize("tag", ["area:household", "client:acme", "project:Site-v2.1", "a_1-:X.y"])
def test_the_seed_table_valid_tags(tag: str) -> None:
    assert validate_tag(tag) == tag


@pytest.mark.parametrize(
    ("tag", "rule"),
    [
        ("Area:x", "upper case in the key"),
        ("area:has space", "space"),
        ("a:b:c", "two colons"),
        ("area", "no value"),
        ("area:", "no value"),
        (":x", "empty key"),
        ("area:x/y", "invalid character '/' in value"),
        ("área:x", "invalid character 'á' in key"),
        ("area:café", "invalid character 'é' in value"),
        ("ar.ea:x", "invalid character '.' in key"),
    ],
)
def test_the_seed_table_invalid_tags_name_tag_and_rule(tag: str, rule: str) -> None:
    with pytest.raises(ConfigError) as info:
        validate_tag(tag)
    assert info.value.field == "tags"
    assert rule in str(info.value)
    assert repr(tag) in str(info.value)


def test_non_string_tag_is_refused() -> None:
    with pytest.raises(ConfigError):
        validate_tag(3)  # type: ignore[arg-type]


@given(tags)
def test_generated_valid_tags_are_accepted(tag: str) -> None:
    assert validate_tag(tag) == tag


@given(keys, values, st.data())
def test_generated_invalid_tags_are_rejected(key: str, value: str, data: st.DataObject) -> None:
    mutation = data.draw(st.sampled_from(["space", "upper", "colon", "novalue", "nonascii", "nokey"]))
    if mutation == "space":
        pos = data.draw(st.integers(0, len(value)))
        tag = f"{key}:{value[:pos]} {value[pos:]}"
    elif mutation == "upper":
        pos = data.draw(st.integers(0, len(key)))
        tag = f"{key[:pos]}{data.draw(st.sampled_from(string.ascii_uppercase))}{key[pos:]}:{value}"
    elif mutation == "colon":
        tag = f"{key}:{value}:{value}"
    elif mutation == "novalue":
        tag = data.draw(st.sampled_from([key, f"{key}:"]))
    elif mutation == "nonascii":
        tag = f"{key}:{value}{data.draw(st.sampled_from('éßΩ中'))}"
    else:
        tag = f":{value}"
    with pytest.raises(ConfigError) as info:
        validate_tag(tag)
    assert info.value.field == "tags"


def test_turn_tags_follow_the_seed_example() -> None:
    profile = ["area:work", "team:core"]
    session = ["project:site", "area:work"]
    assert merge_tags(profile, session) == ["area:work", "project:site", "team:core"]


def test_merge_refuses_an_invalid_tag() -> None:
    with pytest.raises(ConfigError, match="Area:x"):
        merge_tags(["area:work"], ["Area:x"])


@given(st.lists(st.lists(tags, max_size=6), max_size=4))
def test_merge_is_sorted_deduplicated_and_idempotent(groups: list[list[str]]) -> None:
    merged = merge_tags(*groups)
    assert merged == sorted(set().union(*groups)) if groups else merged == []
    assert merge_tags(merged) == merged
    assert merge_tags(merged, merged) == merged
