"""JSON on the hot path: compact text (journal rows, doom-loop keys) and parsing (tool arguments).

``json.dumps(value, separators=..., ...)`` with any option builds a new ``JSONEncoder``, and
every ``encode`` builds a new C encoder; ``compact_encoder`` builds the C encoder once and calls
it. Output is that of ``json.dumps(value, ensure_ascii=False, separators=(",", ":"))`` with the
given ``sort_keys`` / ``allow_nan``; what is not JSON raises TypeError (an object), ValueError
(NaN or an infinity when not allowed) or RecursionError (a cycle).

``parse`` is ``json.loads`` for text: it calls the C scanner directly (``json.loads`` goes through
two Python calls and two regular expressions for the whitespace around the value), and hands
anything unusual (surrounding whitespace, extra data, invalid JSON, bytes) to ``json.loads``, so
the result or the error is exactly ``json.loads``'s.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from json.encoder import c_make_encoder, encode_basestring  # type: ignore[attr-defined]
from json.scanner import c_make_scanner  # type: ignore[attr-defined]
from typing import Any


def _refuse(value: Any) -> Any:
    raise TypeError(f"Object of type {type(value).__name__} is not JSON serializable")


def compact_encoder(*, sort_keys: bool = False, allow_nan: bool = True) -> Callable[[Any], str]:
    """A function value -> compact JSON text (non-ASCII kept)."""
    if c_make_encoder is None:  # no C accelerator: the standard encoder, built once
        encoder = json.JSONEncoder(
            ensure_ascii=False, allow_nan=allow_nan, sort_keys=sort_keys, separators=(",", ":")
        )
        return encoder.encode
    # markers=None: no cycle bookkeeping; a cycle ends in RecursionError instead of ValueError.
    chunks = c_make_encoder(None, _refuse, encode_basestring, None, ":", ",", sort_keys, False, allow_nan)

    def encode(value: Any) -> str:
        return "".join(chunks(value, 0))

    return encode


_scan = c_make_scanner(json.JSONDecoder()) if c_make_scanner is not None else None


def parse(text: str) -> Any:
    """``json.loads(text)``: the same value, or the same ValueError."""
    if _scan is not None and type(text) is str:
        try:
            value, end = _scan(text, 0)
        except StopIteration:  # not a JSON value at the first character: json.loads says why
            pass
        else:
            if end == len(text):
                return value
    return json.loads(text)
