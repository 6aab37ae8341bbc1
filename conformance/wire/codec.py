"""JSON for the wire's lines, both sides: orjson where it reads and writes what the standard
library does, the standard library for the rest.

Encoding and decoding were a third of the stdio route's own CPU (a long session's model request
is a line of tens of KB, sent once per model call); orjson does both several times faster.
Where the two differ the standard library decides:

* reading, orjson turns an integer past 64 bits into a float: a line with a run of 19 digits
  or more is read by ``json.loads``; whatever orjson refuses (NaN, a lone surrogate escape, too
  deep a nesting, bad UTF-8) goes back to the caller's standard path, whose result or error is
  what it was;
* writing, orjson refuses what is not plain JSON data (an integer past 64 bits, a lone
  surrogate, a key that is not a string): ``json.dumps`` writes it. A non-finite float, which
  JSON cannot carry, is written ``null`` (as pydantic's JSON mode writes it), not ``NaN``.

Without orjson (a platform with no wheel) everything is the standard library's.
"""

from __future__ import annotations

import json
from typing import Any

try:
    import orjson
except ImportError:  # pragma: no cover - orjson is a dependency; this keeps a wheel-less platform working
    orjson = None  # type: ignore[assignment]

#: ``fast_loads`` could not read the line exactly as ``json.loads`` would: use the standard path.
UNREAD = object()

#: Every digit to ``0``, every other byte to a space: a run of 19 digits is then a plain
#: substring search (ten times faster than a regular expression over the line).
_DIGITS = bytes(0x30 if 0x30 <= b <= 0x39 else 0x20 for b in range(256))
_LONG_RUN = b"0" * 19


def fast_loads(raw: bytes) -> Any:
    """The value of one line, or :data:`UNREAD`."""
    if orjson is None or _LONG_RUN in raw.translate(_DIGITS):
        return UNREAD
    try:
        return orjson.loads(raw)
    except orjson.JSONDecodeError:
        return UNREAD


class Raw:
    """A value already written as JSON text (a pydantic model's ``model_dump_json()``, which
    costs a fifth of ``model_dump(mode="json")``): :func:`dumps_line` puts the text in as it is."""

    __slots__ = ("text",)

    def __init__(self, text: str) -> None:
        self.text = text


def _fragment(value: Any) -> Any:
    if isinstance(value, Raw):
        return orjson.Fragment(value.text)
    raise TypeError(f"Type is not JSON serializable: {type(value).__name__}")


def _parsed(value: Any) -> Any:
    if isinstance(value, Raw):
        return json.loads(value.text)
    raise TypeError(f"Object of type {type(value).__name__} is not JSON serializable")


def dumps_line(msg: Any) -> bytes:
    """One message as a line of compact UTF-8 JSON (non-ASCII kept), newline included. A lone
    surrogate (a kernel's, echoed back) is written as a JSON escape."""
    if orjson is not None:
        try:
            return orjson.dumps(msg, default=_fragment) + b"\n"
        except TypeError:  # orjson.JSONEncodeError: not plain JSON data, see the module's docstring
            pass
    try:
        return (json.dumps(msg, ensure_ascii=False, separators=(",", ":"), default=_parsed) + "\n").encode("utf-8")
    except UnicodeEncodeError:
        return (json.dumps(msg, separators=(",", ":"), default=_parsed) + "\n").encode("ascii")
