"""003's doom-loop detector: the same call (tool name + canonical input) repeated ``threshold``
times in a row is a bound-fired condition. Kernel-owned, never delegated to a provider."""

from __future__ import annotations

import hashlib
import json
from collections import deque
from typing import Any

from reference_kernel.errors import ConfigError
from reference_kernel.jsontext import compact_encoder

DEFAULT_THRESHOLD = 3

_canonical = compact_encoder(sort_keys=True)


def canonical_json(value: Any) -> str:
    """Sorted keys, no whitespace, non-ASCII kept, so equal arguments hash equally.

    A string is taken as raw ``input_json``: if it parses to a JSON object or array it is
    canonicalised; any other string (not JSON, or a JSON scalar) is returned as given.
    """
    if isinstance(value, str):
        try:
            parsed = json.loads(value)
        except ValueError:
            return value
        if not isinstance(parsed, (dict, list)):
            return value
        value = parsed
    return _canonical(value)


def call_key(tool_name: str, args: Any) -> str:
    """``tool_name NUL canonicalize(input_json)``: two calls are the same call when their keys are
    equal. The detector compares keys (exact, and no digest to compute per call)."""
    return f"{tool_name}\0{canonical_json(args)}"


def call_hash(tool_name: str, args: Any) -> str:
    """hash_of(call) = sha256(call_key(tool_name, args)), hex: equal exactly when the keys are."""
    return hashlib.sha256(call_key(tool_name, args).encode("utf-8")).hexdigest()


class DoomLoopDetector:
    """Keeps the last ``window_size`` calls of a session (resource and data-source calls), by
    their ``call_key`` (what ``call_hash`` digests; comparing the keys is the same test, exactly)."""

    def __init__(self, threshold: int | None = DEFAULT_THRESHOLD, window_size: int | None = None):
        if threshold is None:
            threshold = DEFAULT_THRESHOLD
        if isinstance(threshold, bool) or not isinstance(threshold, int) or threshold < 1:
            raise ConfigError("doom_loop.threshold", f"must be an integer >= 1, got {threshold!r}")
        if window_size is None:
            window_size = threshold
        if isinstance(window_size, bool) or not isinstance(window_size, int):
            raise ConfigError("doom_loop.window_size", f"must be an integer, got {window_size!r}")
        if window_size < threshold:
            raise ConfigError(
                "doom_loop.window_size",
                f"must be >= threshold ({threshold}), got {window_size}",
            )
        self.threshold = threshold
        self.window_size = window_size
        self._hashes: deque[str] = deque(maxlen=window_size)

    def record(self, tool_name: str, args: Any) -> None:
        self._hashes.append(call_key(tool_name, args))

    def fired(self) -> bool:
        """True when the most recent ``threshold`` hashes exist and are all identical."""
        hashes, threshold = self._hashes, self.threshold
        if len(hashes) < threshold:
            return False
        last = hashes[-1]
        for back in range(2, threshold + 1):  # newest first: a differing call stops it at once
            if hashes[-back] != last:
                return False
        return True

    def reset(self) -> None:
        self._hashes.clear()
