"""JSON Schemas (draft 2020-12) of everything that crosses the adapter boundary, generated from
the pydantic models so that a kernel written in another language validates against exactly what
the harness accepts. ``akc schemas --write`` regenerates them; ``--check`` (and a test) catches a
checked-in schema that no longer matches its model.

To add a schema, add one line to :data:`SCHEMAS`. The wire protocol's schemas (``schemas/protocol/``)
come from the second table, :func:`conformance.wire.messages.schema_files`.
"""

from __future__ import annotations

import functools
import json
from pathlib import Path
from typing import Any

from pydantic import TypeAdapter

from conformance.boundary.adapter import AdapterInfo, RunResult
from conformance.catalog.requirements import Catalog
from conformance.boundary.messages import Message
from conformance.paths import schemas_dir
from conformance.report.model import Report
from conformance.boundary.scenario import Scenario
from conformance.trace.canonical import Trace
from conformance.wire.messages import schema_files as _protocol_schema_files

DRAFT = "https://json-schema.org/draft/2020-12/schema"

#: File name in ``schemas/`` -> the pydantic model (or annotated type) it is generated from.
SCHEMAS: dict[str, Any] = {
    "catalog.schema.json": Catalog,
    "message.schema.json": Message,
    "scenario.schema.json": Scenario,
    "run-result.schema.json": RunResult,
    "adapter-info.schema.json": AdapterInfo,
    "report.schema.json": Report,
    "trace.schema.json": Trace,
}

#: The stdio wire protocol's messages (docs/protocol.md): one schema per method's params and result.
PROTOCOL_SCHEMAS: dict[str, Any] = _protocol_schema_files()
SCHEMAS.update(PROTOCOL_SCHEMAS)


def schema_of(name: str) -> dict[str, Any]:
    """The JSON Schema for the entry ``name`` of :data:`SCHEMAS` (validation mode)."""
    model = SCHEMAS[name]
    body = TypeAdapter(model).json_schema(mode="validation")
    out: dict[str, Any] = {"$schema": DRAFT}
    if "title" not in body:
        out["title"] = model_name(name)
    out.update(body)
    return out


def model_name(name: str) -> str:
    """Readable name of what the schema ``name`` is generated from."""
    model = SCHEMAS[name]
    if isinstance(model, type):
        return model.__name__
    return "Message" if model is Message else str(model)


@functools.cache
def render(name: str) -> str:
    """The exact text written to the file: stable key order, two-space indent, final newline.
    Rendered once per process (the models do not change while it runs)."""
    return json.dumps(schema_of(name), indent=2, ensure_ascii=False) + "\n"


def _target(directory: Path | None) -> Path:
    return directory if directory is not None else schemas_dir()


def write(directory: Path | None = None) -> list[Path]:
    """Write every schema; returns the paths whose content changed."""
    target = _target(directory)
    target.mkdir(parents=True, exist_ok=True)
    changed = []
    for name in SCHEMAS:
        path = target / name
        path.parent.mkdir(parents=True, exist_ok=True)
        text = render(name)
        if not path.exists() or path.read_text(encoding="utf-8") != text:
            path.write_text(text, encoding="utf-8")
            changed.append(path)
    return changed


def stale(directory: Path | None = None) -> list[str]:
    """Names of schemas missing from ``directory`` or different from what the models give."""
    target = _target(directory)
    out = []
    for name in SCHEMAS:
        path = target / name
        if not path.exists() or path.read_text(encoding="utf-8") != render(name):
            out.append(name)
    return out
