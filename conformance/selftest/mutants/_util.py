"""Small pieces several mutants share (kept out of the mutants so each stays a few lines)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from reference_kernel.cancel import CancellationToken


class DroppingSpans:
    """A span recorder that forgets the spans ``drop(name, kind, attributes)`` selects."""

    def __init__(self, inner: Any, drop: Callable[[str, str, dict[str, Any]], bool]) -> None:
        self._inner, self._drop = inner, drop
        self._dropped: set[str] = set()

    @property
    def spans(self) -> list[dict[str, Any]]:
        return [s for s in self._inner.spans if s["span_id"] not in self._dropped]

    def start(self, name: str, kind: str, parent_id: str | None, attributes: dict[str, Any] | None = None) -> str:
        span_id = self._inner.start(name, kind, parent_id, attributes)
        if self._drop(name, kind, dict(attributes or {})):
            self._dropped.add(span_id)
        return span_id

    def end(self, span_id: str, attributes: dict[str, Any] | None = None) -> None:
        self._inner.end(span_id, attributes)


class Uncancelled:
    """A run context whose token never says cancelled (a mutant that forgets to look)."""

    def __init__(self, run: Any) -> None:
        self._run = run
        self.token = CancellationToken()

    def __getattr__(self, name: str) -> Any:
        return getattr(self._run, name)


class ReorderedHooks:
    """A hook registry whose chains run in the reverse of registration order."""

    def __init__(self, inner: Any) -> None:
        self._inner = inner

    def at(self, point: str) -> list[Any]:
        return list(reversed(self._inner.at(point)))

    def __getattr__(self, name: str) -> Any:
        return getattr(self._inner, name)
