"""001's tag grammar (``key:value``) and the turn's tag set (sorted, without duplicates).

Key: lower-case ASCII letters, digits, ``_``, ``-`` (non-empty). Value: ASCII letters of either
case, digits, ``_``, ``-``, ``.`` (non-empty). Exactly one ``:``. No spaces.
"""

from __future__ import annotations

import string
from collections.abc import Iterable

from reference_kernel.errors import ConfigError

_KEY_CHARS = frozenset(string.ascii_lowercase + string.digits + "_-")
_VALUE_CHARS = frozenset(string.ascii_letters + string.digits + "_-.")


def _bad(tag: object, rule: str) -> ConfigError:
    return ConfigError("tags", f"invalid tag {tag!r}: {rule}")


def validate_tag(tag: str) -> str:
    """Return ``tag`` unchanged if it follows 001's grammar, else raise ConfigError naming the rule."""
    if not isinstance(tag, str):
        raise _bad(tag, "a tag must be a string")
    if any(ch.isspace() for ch in tag):
        raise _bad(tag, "space")
    colons = tag.count(":")
    if colons == 0:
        raise _bad(tag, "no value (a tag is key:value)")
    if colons > 1:
        raise _bad(tag, "two colons" if colons == 2 else f"{colons} colons (exactly one ':')")
    key, value = tag.split(":")
    if not key:
        raise _bad(tag, "empty key")
    if not value:
        raise _bad(tag, "no value")
    for ch in key:
        if ch not in _KEY_CHARS:
            if ch in string.ascii_uppercase:
                raise _bad(tag, "upper case in the key")
            raise _bad(tag, f"invalid character {ch!r} in key")
    for ch in value:
        if ch not in _VALUE_CHARS:
            raise _bad(tag, f"invalid character {ch!r} in value")
    return tag


def merge_tags(*groups: Iterable[str]) -> list[str]:
    """Profile tags + session tags (+ message tags): validated, sorted, duplicates removed."""
    merged: set[str] = set()
    for group in groups:
        for tag in group:
            merged.add(validate_tag(tag))
    return sorted(merged)
