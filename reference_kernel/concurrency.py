"""003's concurrency keys: equal keys run one after the other, distinct keys run concurrently.

Keys: ``("key", provider, tool, values)`` for a ``safe`` operation with ``key_fields``;
``("call", call_id)`` for ``safe`` with no key fields ("effectively a distinct key per call");
``("provider", provider)`` for ``safe: false`` or undeclared resource operations (provider-wide
lock). Interactive calls never get a spec and run sequentially in the loop itself.
"""

from __future__ import annotations

import json
from collections.abc import AsyncIterator, Hashable
from contextlib import asynccontextmanager
from typing import Any

import anyio
from pydantic import BaseModel, ConfigDict, Field

from reference_kernel.errors import ConfigError

KINDS = ("data_source", "resource", "interactive")


class ConcurrencySpec(BaseModel):
    model_config = ConfigDict(frozen=True)

    safe: bool
    key_fields: list[str] = Field(default_factory=list)


def validate_tool_spec(kind: str, spec: ConcurrencySpec | None) -> None:
    """003: ConcurrencySpec MUST NOT be declared for an interactive operation."""
    if kind not in KINDS:
        raise ConfigError("kind", f"unknown tool kind {kind!r} (expected one of {', '.join(KINDS)})")
    if kind == "interactive" and spec is not None:
        raise ConfigError(
            "concurrency", "a ConcurrencySpec must not be declared for an interactive tool"
        )


def default_spec(kind: str) -> ConcurrencySpec:
    """data_source: safe with no key fields; resource (and anything else): unsafe."""
    if kind == "data_source":
        return ConcurrencySpec(safe=True)
    return ConcurrencySpec(safe=False)


def _key_value(value: Any) -> str:
    return json.dumps(value, sort_keys=True, separators=(",", ":"), ensure_ascii=False)


def concurrency_key(
    provider: str,
    tool: str,
    kind: str,
    spec: ConcurrencySpec | None,
    args: dict[str, Any] | Any,
    call_id: str,
) -> tuple[Hashable, ...]:
    """The scheduling key of one tool_use block (see the module docstring)."""
    if kind == "interactive":
        return ("interactive", provider)
    if spec is None:
        spec = default_spec(kind)
    if not spec.safe:
        return ("provider", provider)
    if not spec.key_fields:
        return ("call", call_id)
    fields = args if isinstance(args, dict) else {}
    return ("key", provider, tool, tuple(_key_value(fields.get(f)) for f in spec.key_fields))


class KeyedLocks:
    """One anyio lock per key, created on demand and dropped when nobody holds or waits on it."""

    def __init__(self) -> None:
        self._locks: dict[Hashable, anyio.Lock] = {}
        self._users: dict[Hashable, int] = {}

    @asynccontextmanager
    async def hold(self, key: Hashable) -> AsyncIterator[None]:
        lock = self._locks.get(key)
        if lock is None:
            lock = self._locks[key] = anyio.Lock()
        self._users[key] = self._users.get(key, 0) + 1
        try:
            async with lock:
                yield
        finally:
            self._users[key] -= 1
            if self._users[key] == 0:
                del self._users[key]
                del self._locks[key]

    def __len__(self) -> int:
        return len(self._locks)
