"""Kernel text is data: one escaping function per sink, and every writer calls its own.

Anything a kernel sends (its name, a message, a tool name, a span) may hold control characters,
bidi overrides, lone surrogates (``"\\ud800"`` is a legal JSON escape) or megabytes. Each sink
escapes it for itself:

* :func:`terminal`: control characters (C0, DEL, C1), invisible format characters (bidi
  overrides, zero-width), line separators and lone surrogates become visible escapes (``\\x1b``,
  ``\\u202e``, ``\\n``), so a message is one line that cannot move the cursor, set a title, write
  the clipboard (OSC 52) or forge a line of its own;
* :func:`xml`: only the characters XML 1.0 allows, and none that a CI log would act on: the
  same visible escapes, tab and LF kept (CR too would come back as LF);
* :func:`markdown_cell`: backslashes, pipes and HTML escaped, on one line (a table cell);
* :func:`toml_string`: a TOML basic string, quotes included, that ``tomllib`` reads back;
* :func:`json_safe`: a JSON-able value with its lone surrogates replaced by U+FFFD (UTF-8 cannot
  carry them: writing one raised).

The HTML sink (the spec book) escapes with Jinja's autoescape and needs nothing from here.
"""

from __future__ import annotations

import re
from typing import Any

#: Characters no sink shows raw: C0 and C1 controls, DEL, the invisible format characters that
#: reorder or hide text (bidi embeddings, overrides and isolates, zero-width characters, BOM,
#: interlinear annotations, tag characters), line and paragraph separators, lone surrogates.
_INVISIBLE = (
    "\x7f-\x9f\u00ad\u0600-\u0605\u061c\u06dd\u070f\u180e\u200b-\u200f\u2028-\u202e"
    "\u2060-\u206f\ufeff\ufff9-\ufffb\ud800-\udfff\U000e0000-\U000e007f"
)
_TERMINAL = re.compile(f"[\x00-\x1f{_INVISIBLE}]")
#: The same, but for tab and LF (XML keeps them), and with the two non-characters XML 1.0 forbids.
_NOT_XML = re.compile(f"[\x00-\x08\x0b-\x1f{_INVISIBLE}\ufffe\uffff]")
_SURROGATE = re.compile("[\ud800-\udfff]")
_NAMED = {"\n": "\\n", "\r": "\\r", "\t": "\\t"}


def _visible(code: int) -> str:
    """A character as a visible escape: ``\\n``, ``\\x1b``, ``\\u202e``, ``\\U000e0001``."""
    named = _NAMED.get(chr(code))
    if named is not None:
        return named
    return f"\\x{code:02x}" if code <= 0xFF else f"\\u{code:04x}" if code <= 0xFFFF else f"\\U{code:08x}"


def _table(pattern: re.Pattern[str]) -> dict[int, str]:
    """A ``str.translate`` table giving every character ``pattern`` matches its visible escape
    (translate runs in C: a megabyte of controls costs milliseconds, not a call per character)."""
    members = pattern.pattern[1:-1]
    codes: list[int] = []
    k = 0
    while k < len(members):
        if k + 2 < len(members) and members[k + 1] == "-":
            codes += range(ord(members[k]), ord(members[k + 2]) + 1)
            k += 3
        else:
            codes.append(ord(members[k]))
            k += 1
    return {code: _visible(code) for code in codes}


_TERMINAL_TABLE = _table(_TERMINAL)
_XML_TABLE = _table(_NOT_XML)
#: Markdown: the terminal's escapes with their backslash escaped in turn (they render as written),
#: and the characters that would add a column or render as markup.
_MARKDOWN_TABLE = {
    **{code: text.replace("\\", "\\\\") for code, text in _TERMINAL_TABLE.items()},
    **{ord(ch): text for ch, text in {"\\": "\\\\", "|": "\\|", "<": "&lt;", ">": "&gt;", "&": "&amp;"}.items()},
}
#: TOML basic strings: a quote, a backslash and the control characters but tab must be escaped
#: (TOML 1.0, String); lone surrogates cannot be held at all (U+FFFD).
_TOML_TABLE = {
    **{code: f"\\u{code:04x}" for code in [*range(0x00, 0x09), *range(0x0A, 0x20), 0x7F]},
    **{ord(ch): text for ch, text in {'"': '\\"', "\\": "\\\\", "\n": "\\n", "\r": "\\r"}.items()},
    **{code: "\ufffd" for code in range(0xD800, 0xE000)},
}


def terminal(text: str) -> str:
    """``text`` safe to print on a terminal or in a CI log: one line, no control sequence."""
    return text.translate(_TERMINAL_TABLE) if _TERMINAL.search(text) else text


def xml(text: str) -> str:
    """``text`` with only characters XML 1.0 allows and no control sequence (tab and LF kept;
    ElementTree escapes ``<``, ``&``, quotes and, in attributes, LF)."""
    return text.translate(_XML_TABLE) if _NOT_XML.search(text) else text


def markdown_cell(text: str) -> str:
    """``text`` as one Markdown table cell or list item: one line, its pipes, backslashes and
    HTML escaped (so it neither adds a column nor renders as markup)."""
    return text.translate(_MARKDOWN_TABLE)


def toml_string(text: str) -> str:
    """``text`` as a TOML basic string (quoted); lone surrogates, which TOML cannot hold, become U+FFFD."""
    return '"' + text.translate(_TOML_TABLE) + '"'


def json_safe(value: Any) -> Any:
    """``value`` (a JSON-able tree: dicts, lists, strings…) with every lone surrogate in its
    strings and keys replaced by U+FFFD, so it encodes as UTF-8. Unchanged parts are shared."""
    if isinstance(value, str):
        return _SURROGATE.sub("\ufffd", value) if _SURROGATE.search(value) else value
    if isinstance(value, dict):
        return {json_safe(k): json_safe(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [json_safe(v) for v in value]
    return value
