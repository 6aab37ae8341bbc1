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
#: TOML basic strings: the characters that must be escaped (a quote, a backslash, the control
#: characters other than tab; TOML 1.0 §String).
_TOML = re.compile('["\\\\\x00-\x08\x0a-\x1f\x7f]')
_MARKDOWN = re.compile(r"[\\|<>&]")
_MD_ENTITIES = {"\\": "\\\\", "|": "\\|", "<": "&lt;", ">": "&gt;", "&": "&amp;"}


def _visible(match: re.Match[str]) -> str:
    ch = match.group()
    named = _NAMED.get(ch)
    if named is not None:
        return named
    code = ord(ch)
    return f"\\x{code:02x}" if code <= 0xFF else f"\\u{code:04x}" if code <= 0xFFFF else f"\\U{code:08x}"


def terminal(text: str) -> str:
    """``text`` safe to print on a terminal or in a CI log: one line, no control sequence."""
    return _TERMINAL.sub(_visible, text)


def xml(text: str) -> str:
    """``text`` with only characters XML 1.0 allows and no control sequence (tab and LF kept;
    ElementTree escapes ``<``, ``&``, quotes and, in attributes, LF)."""
    return _NOT_XML.sub(_visible, text)


def markdown_cell(text: str) -> str:
    """``text`` as one Markdown table cell or list item: one line, its pipes, backslashes and
    HTML escaped (so it neither adds a column nor renders as markup)."""
    return _MARKDOWN.sub(lambda m: _MD_ENTITIES[m.group()], terminal(text))


def _toml_escape(match: re.Match[str]) -> str:
    ch = match.group()
    return {'"': '\\"', "\\": "\\\\", "\n": "\\n", "\r": "\\r"}.get(ch) or f"\\u{ord(ch):04x}"


def toml_string(text: str) -> str:
    """``text`` as a TOML basic string (quoted); lone surrogates, which TOML cannot hold, become U+FFFD."""
    return '"' + _TOML.sub(_toml_escape, _SURROGATE.sub("\ufffd", text)) + '"'


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
