"""conformance.wire.codec: the fast JSON path reads and writes what the standard library does, and
hands back what it cannot read exactly."""

from __future__ import annotations

import json

import pytest

from conformance.wire import codec

pytestmark = pytest.mark.skipif(codec.orjson is None, reason="orjson is not installed: the codec is the standard library's")

SAME = [
    b'{"jsonrpc":"2.0","id":1,"result":{"chunks":[{"text":"h\\u00e9llo \xe2\x80\xa8"}]}}',
    b'{"a":1,"a":2}',  # a repeated key: the last one wins, in both
    b"-0",
    b"-0.0",
    b"1E5",
    b"[0.1, 1e-7, 123456789012345678]",  # 18 digits: an int in both
    b'"\\u0000"',
    b"  {} \r",  # JSON whitespace around the value, a CR left by a CRLF line end
]

DECLINED = [
    b"12345678901234567890",  # past 64 bits: orjson would make it a float
    b'{"n":-9223372036854775809}',
    b"NaN",
    b"[Infinity]",
    b'"\\ud800"',  # a lone surrogate escape
    b'"\xff"',  # not UTF-8
    b"[" * 2000 + b"]" * 2000,  # nested deeper than orjson reads
    b"[1,2",
    b"\xef\xbb\xbf{}",  # a byte order mark
]


@pytest.mark.parametrize("raw", SAME)
def test_fast_loads_reads_what_json_loads_reads(raw: bytes) -> None:
    value = codec.fast_loads(raw)
    expected = json.loads(raw.decode("utf-8"))
    assert value == expected and type(value) is type(expected)


@pytest.mark.parametrize("raw", DECLINED)
def test_fast_loads_declines_what_it_cannot_read_exactly(raw: bytes) -> None:
    assert codec.fast_loads(raw) is codec.UNREAD


def test_a_long_digit_run_inside_a_string_only_costs_the_fast_path() -> None:
    raw = b'{"id":"1234567890123456789012"}'
    assert codec.fast_loads(raw) is codec.UNREAD
    assert json.loads(raw) == {"id": "1234567890123456789012"}


@pytest.mark.parametrize(
    "msg",
    [
        {"jsonrpc": "2.0", "method": "model.chunk", "params": {"seq": 1, "chunk": {"text": "é ✓ \u2028"}}},
        {"big": 2**70},  # orjson refuses: the standard library writes it
        {"lone": "\ud800"},  # a surrogate a kernel sent, echoed back: written as an escape
        {1: "int key"},
    ],
)
def test_dumps_line_is_one_line_the_standard_library_reads_back(msg: object) -> None:
    line = codec.dumps_line(msg)
    assert line.endswith(b"\n") and line.count(b"\n") == 1
    expected = json.loads(json.dumps(msg))
    assert json.loads(line) == expected


def test_dumps_line_writes_compact_utf8() -> None:
    msg = {"a": [1, 2.5, None, True], "b": "é"}
    assert codec.dumps_line(msg) == (json.dumps(msg, ensure_ascii=False, separators=(",", ":")) + "\n").encode("utf-8")


def test_raw_json_text_is_put_in_as_it_is_on_both_paths() -> None:
    from conformance.boundary.scenario import ModelDef, ModelResponse, Scenario, UserMessage

    scenario = Scenario(name="codec", profile="kernel", model=ModelDef(responses=[ModelResponse(text="é")]), user_messages=[UserMessage(text="hi")])
    msg = {"jsonrpc": "2.0", "id": 1, "method": "run", "params": {"seq": 1, "scenario": codec.Raw(scenario.model_dump_json())}}
    expected = {**msg, "params": {"seq": 1, "scenario": scenario.model_dump(mode="json")}}
    assert json.loads(codec.dumps_line(msg)) == expected
    msg["params"]["big"] = 2**70  # orjson refuses the message: the standard library writes it
    assert json.loads(codec.dumps_line(msg)) == {**expected, "params": {**expected["params"], "big": 2**70}}
