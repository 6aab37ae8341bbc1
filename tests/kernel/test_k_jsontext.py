"""jsontext: the hot path's JSON says exactly what the json module says."""

from __future__ import annotations

import json
from typing import Any

import pytest

from reference_kernel.jsontext import compact_encoder, parse

TEXTS = [
    '{"n": 1}', ' {"n": 1}', '{"n": 1} ', '{"n": 1}x', '{"n":1}{"m":2}', "", "  ", "{", "nul",
    "[1,2]", '"s"', "NaN", "1e400", "\ufeff{}", '{"a": {"b": [1.5, true, null]}}', '{"a":1,"a":2}',
    '{"é": "\\u00e9"}',
]


def _outcome(fn: Any, text: Any) -> tuple[str, Any]:
    try:
        return "value", fn(text)
    except ValueError as exc:
        return type(exc).__name__, str(exc)


@pytest.mark.parametrize("text", TEXTS)
def test_parse_is_json_loads(text: str) -> None:
    assert repr(_outcome(parse, text)) == repr(_outcome(json.loads, text))


def test_parse_takes_bytes_as_json_loads_does() -> None:
    assert parse(b'{"n": 1}') == {"n": 1}  # type: ignore[arg-type]


@pytest.mark.parametrize("sort_keys", [False, True])
def test_compact_encoder_is_json_dumps(sort_keys: bool) -> None:
    value = {"b": [1, 2.5, None, True], "a": "é", "c": {"z": 1, "y": "x"}}
    expected = json.dumps(value, ensure_ascii=False, separators=(",", ":"), sort_keys=sort_keys)
    assert compact_encoder(sort_keys=sort_keys)(value) == expected
