"""Small pieces the second blind round's mutants share."""
from __future__ import annotations

from typing import Any


class FinalTurnFlag:
    """Mixin for a Kernel: ``self._final_runs`` holds id(run) while the limit-reached turn runs."""

    def __init__(self, *a: Any, **k: Any) -> None:
        super().__init__(*a, **k)
        self._final_runs: set[int] = set()

    async def _final_turn(self, run: Any, limit: str) -> None:
        self._final_runs.add(id(run))
        try:
            await super()._final_turn(run, limit)  # type: ignore[misc]
        finally:
            self._final_runs.discard(id(run))


class EditedSpans:
    """A span recorder that lets ``edit(name, kind, attributes)`` change a span's start attributes
    (return None to forget the span) and ``drop_on_end(span_id, attributes)`` forget it at its end."""

    def __init__(self, inner: Any, edit: Any = None, drop_on_end: Any = None) -> None:
        self._inner, self._edit, self._drop_on_end = inner, edit, drop_on_end
        self._dropped: set[str] = set()

    @property
    def spans(self) -> list[dict[str, Any]]:
        return [s for s in self._inner.spans if s["span_id"] not in self._dropped]

    def start(self, name: str, kind: str, parent_id: str | None, attributes: dict[str, Any] | None = None) -> str:
        attrs = dict(attributes or {})
        edited = self._edit(name, kind, attrs) if self._edit else attrs
        span_id = self._inner.start(name, kind, parent_id, attrs if edited is None else edited)
        if edited is None:
            self._dropped.add(span_id)
        return span_id

    def end(self, span_id: str, attributes: dict[str, Any] | None = None) -> None:
        if self._drop_on_end and self._drop_on_end(span_id, dict(attributes or {})):
            self._dropped.add(span_id)
        self._inner.end(span_id, attributes)


class TurnAs:
    """A run context (AgentTurn / RunSession) seen with another TurnInfo."""

    def __init__(self, ctx: Any, turn: Any) -> None:
        self._ctx, self.turn = ctx, turn

    def __getattr__(self, name: str) -> Any:
        return getattr(self._ctx, name)
