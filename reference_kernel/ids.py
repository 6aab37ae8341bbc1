"""UUID version 7 ids (RFC 9562), so that ids sort by creation time as 001 requires.

Layout: 48-bit unix milliseconds | version 7 | 12-bit ``rand_a`` | variant ``10`` | 62 random
bits. Within one millisecond ``rand_a`` is a counter (RFC 9562 §6.2, method 1): it starts at a
random value with its top bit clear and is incremented for every further id of that millisecond;
if it overflows, or the clock goes backwards, the timestamp is advanced past the last one used.
Either way each generator's ids are strictly increasing in creation order.
"""

from __future__ import annotations

import random as _random
import re
import threading
import time
import uuid
from collections.abc import Callable

_MAX_COUNTER = 0xFFF
_UUID7_RE = re.compile(
    r"^[0-9a-f]{8}-[0-9a-f]{4}-7[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$", re.IGNORECASE
)


class _State:
    """Monotonic (millisecond, counter) state shared by the ids of one generator."""

    def __init__(self, rng: _random.Random | None) -> None:
        self._rng = rng or _random.SystemRandom()
        self._lock = threading.Lock()
        self._last_ms = -1
        self._counter = 0

    def next(self, now_ms: int) -> uuid.UUID:
        with self._lock:
            if now_ms > self._last_ms:
                self._last_ms = now_ms
                self._counter = self._rng.getrandbits(11)  # top bit clear: room to count
            else:
                self._counter += 1
                if self._counter > _MAX_COUNTER:
                    self._last_ms += 1
                    self._counter = self._rng.getrandbits(11)
            ms, counter = self._last_ms, self._counter
            rand_b = self._rng.getrandbits(62)
        return _build(ms, counter, rand_b)


def _build(ms: int, rand_a: int, rand_b: int) -> uuid.UUID:
    value = (ms & ((1 << 48) - 1)) << 80
    value |= 0x7 << 76
    value |= (rand_a & _MAX_COUNTER) << 64
    value |= 0b10 << 62
    value |= rand_b & ((1 << 62) - 1)
    return uuid.UUID(int=value)


_default_state = _State(None)


def uuid7(now_ms: int | None = None) -> uuid.UUID:
    """A new UUIDv7 from the process-wide generator (monotonic across calls)."""
    if now_ms is None:
        now_ms = time.time_ns() // 1_000_000
    if now_ms < 0:
        raise ValueError("uuid7: now_ms must be >= 0")
    return _default_state.next(now_ms)


class IdGenerator:
    """Makes UUIDv7 strings from an injectable clock (seconds) and random source.

    A seeded ``random.Random`` plus a fake clock gives reproducible ids in tests.
    """

    def __init__(
        self,
        clock: Callable[[], float] | None = None,
        random: _random.Random | None = None,
    ) -> None:
        self._clock = clock or time.time
        self._state = _State(random)

    def __call__(self) -> str:
        now_ms = max(0, int(self._clock() * 1000))
        return str(self._state.next(now_ms))


def is_uuid7(s: str) -> bool:
    """True when ``s`` is a UUID string with version 7 and the RFC variant."""
    return isinstance(s, str) and bool(_UUID7_RE.match(s))
