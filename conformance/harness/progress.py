"""The run's progress, one JSON line per event, written straight to a file as it happens: the
checks once collected, then each item's start and end. The supervisor reads it back when the
process running the suite ended without its result (:mod:`conformance.harness.supervisor`)."""

from __future__ import annotations

import json
import os
from typing import Any


class ProgressWriter:
    """The child's side: one JSON line per event, written straight to the file (no buffer to lose)."""

    def __init__(self, path: str) -> None:
        self._fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o600)

    def _line(self, obj: dict[str, Any]) -> None:
        if self._fd is not None:
            os.write(self._fd, (json.dumps(obj, separators=(",", ":")) + "\n").encode())

    def header(self, state: Any, items: list[Any]) -> None:
        self._line({
            "checks": {
                nodeid: {"requirement_ids": c.requirement_ids, "feature": c.feature, "scenario": c.scenario, "profiles": c.profiles}
                for nodeid, c in state.checks.items()
            },
            "profiles": list(state.profiles),
        })

    def started(self, nodeid: str) -> None:
        self._line({"start": nodeid})

    def ended(self, nodeid: str, check: Any) -> None:
        self._line({"end": nodeid, "outcome": check.outcome, "message": check.message})

    def close(self) -> None:
        if self._fd is not None:
            os.close(self._fd)
            self._fd = None
