"""The step glossary of ``docs/writing-scenarios.md`` as patterns: every phrase (the first code
span of a row of the glossary's tables) becomes a regular expression a step text must match.

Notation: ``"<name>"`` a quoted value, ``<k>`` a number (or an outline parameter), ``<json>``
inline JSON, ``<words>`` free text, ``[…]`` an optional part, ``(a|b)`` one of the words.
"""

from __future__ import annotations

import json
import re
from pathlib import Path

from conformance.book.data import GLOSSARY_DOC, glossary_markdown

_NUMBER = r"(?:\d+(?:\.\d+)?|<[^>]+>)"
_TOKEN = re.compile(r'"<[^>]+>"|<json>|<words>|<[a-z_]+>|\[|\]|\(|\)|\||[^"<\[\]()|]+|.')


def to_regex(phrase: str) -> re.Pattern[str]:
    """The regular expression of one glossary phrase (whole step text)."""
    out = []
    for tok in _TOKEN.findall(phrase):
        if tok.startswith('"<'):
            out.append(r'".*?"')  # a value may hold quotes (JSON in a tool result)
        elif tok == "<json>":
            out.append(r"(?:[\[{].*[\]}]|<[^>]+>)")
        elif tok == "<words>":
            out.append(r".+")
        elif re.fullmatch(r"<[a-z_]+>", tok):
            out.append(_NUMBER)
        elif tok == "[":
            out.append("(?:")
        elif tok == "]":
            out.append(")?")
        elif tok == "(":
            out.append("(?:")
        elif tok == ")" or tok == "|":
            out.append(tok)
        else:
            out.append(re.escape(tok))
    return re.compile("".join(out))


def phrases(markdown: str | None = None) -> list[str]:
    """Every phrase of the glossary section (each code span of a table row's first cell)."""
    text = markdown if markdown is not None else (glossary_markdown(GLOSSARY_DOC) or "")
    found = []
    for line in text.splitlines():
        if not line.startswith("| `"):
            continue
        first = _first_cell(line)
        found += re.findall(r"`([^`]+)`", first)
    return found


def _first_cell(line: str) -> str:
    """The first cell of a Markdown table row (``|`` inside code spans does not split it)."""
    in_code, cell = False, []
    for ch in line[1:]:
        if ch == "`":
            in_code = not in_code
        elif ch == "|" and not in_code:
            break
        cell.append(ch)
    return "".join(cell)


def allowlist(path: Path) -> tuple[list[str], list[str]]:
    """(phrases, JSON exceptions ``feature / scenario``) of the allow-list file; ``#`` comments."""
    steps, blobs = [], []
    for raw in path.read_text(encoding="utf-8").splitlines():
        line = raw.split(" #", 1)[0].strip() if not raw.lstrip().startswith("#") else ""
        if not line:
            continue
        if line.startswith("json: "):
            blobs.append(line.removeprefix("json: ").strip())
        else:
            steps.append(line)
    return steps, blobs


def json_depth(text: str) -> int:
    """Nesting depth of the inline JSON object or list in a step (0 when there is none)."""
    m = re.search(r"[\[{].*[\]}]", text)
    if not m:
        return 0
    try:
        value = json.loads(m.group(0))
    except ValueError:
        return 0

    def depth(v: object) -> int:
        if isinstance(v, dict):
            return 1 + max((depth(x) for x in v.values()), default=0)
        if isinstance(v, list):
            return 1 + max((depth(x) for x in v), default=0)
        return 0

    return depth(value)


def normalise(text: str) -> str:
    """A step text in glossary notation (values replaced by placeholders)."""
    text = re.sub(r"[\[{].*[\]}]", "<json>", text)
    text = re.sub(r'"[^"]*"', '"<x>"', text)
    return re.sub(r"\b\d+(?:\.\d+)?\b", "<n>", text)
