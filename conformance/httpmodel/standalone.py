"""``akc model-server``'s engine: one model script served on its own, through the same
:class:`ModelHost` and model double the harness uses (there is no second script player).

The script becomes a one-scenario doubles; every model request is appended to ``record`` (JSON
lines: ``index`` and ``request`` in the suite's shape) as it arrives.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import anyio

from conformance.boundary.scenario import ModelDef, Scenario
from conformance.harness.doubles import HarnessDoubles, snapshot
from conformance.httpmodel.host import HttpModel, ModelHost


def _recording(doubles: HarnessDoubles, record: Path) -> None:
    add = doubles.log.add

    def add_and_record(kind: str, **fields: Any) -> dict[str, Any]:
        event = add(kind, **fields)
        if kind == "model_request":
            request = dict(event["request"], messages=list(event["request"]["messages"]))
            entry = {"index": event["index"], "request": snapshot(request)}
            with record.open("a", encoding="utf-8") as f:
                f.write(json.dumps(entry, ensure_ascii=False) + "\n")
        return event

    doubles.log.add = add_and_record  # type: ignore[method-assign]


async def serve(
    model: ModelDef, *, host: str = "127.0.0.1", port: int = 0, record: Path | None = None, api_key: str | None = None,
    ready: Callable[[HttpModel], None],
) -> None:
    """Serve ``model`` until cancelled; ``ready`` gets the served model once it listens."""
    doubles = HarnessDoubles(Scenario(name="model-server", profile="kernel", model=model))
    if record is not None:
        record.write_text("", encoding="utf-8")
        _recording(doubles, record)
    async with anyio.create_task_group() as tg:
        host = await tg.start(ModelHost(host=host, port=port, api_key=api_key).serve)
        ready(host.open(doubles))
