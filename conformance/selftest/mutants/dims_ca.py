"""Mutants over the input dimensions of the CommonAgent profile (issue 21 §1): each lives on one
value of a dimension the older mutants never tried (a tag's edge, an error class, the clock of an
id, the order of a stored write, a child's identity, a later turn's history)."""

from __future__ import annotations

import re
from collections.abc import Callable

from conformance.selftest.registry import mutant
from conformance.selftest.mutants.records import CA, _TagRule

# ------------------------------------------------------------------ tags

#: 001's grammar as a regular expression matched with ``re.match``: ``$`` also matches before a
#: trailing newline, so ``area:x\n`` passes.
_TAG_RE = re.compile(r"^[a-z0-9_-]+:[A-Za-z0-9_.-]+$")


@mutant("TAG-003", profile=CA)
class TagRegexTrailingNewline(_TagRule):
    """Tags are checked with ``^...$`` and ``re.match``: a value ending in a newline is accepted."""

    @staticmethod
    def rule(tag: str, check: Callable[[str], str]) -> str:
        if isinstance(tag, str) and _TAG_RE.match(tag):
            return tag
        return check(tag)


@mutant("TAG-004", profile=CA)
class EmptyTagValueAccepted(_TagRule):
    """A tag with a colon and nothing after it (``area:``) is accepted."""

    @staticmethod
    def rule(tag: str, check: Callable[[str], str]) -> str:
        if isinstance(tag, str) and tag.endswith(":") and tag.count(":") == 1:
            check(tag + "x")
            return tag
        return check(tag)


@mutant("TAG-002", profile=CA)
class KeyFirstCharacterUnchecked(_TagRule):
    """The key's class is checked from its second character on (an off-by-one): ``Area:x``,
    ``.a:x`` pass."""

    @staticmethod
    def rule(tag: str, check: Callable[[str], str]) -> str:
        if isinstance(tag, str) and ":" in tag and len(tag.split(":")[0]) > 1:
            key, _, value = tag.partition(":")
            check("a" + key[1:] + ":" + value)
            return tag
        return check(tag)
