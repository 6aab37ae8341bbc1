"""The checked-in JSON Schemas match their pydantic models and validate what they describe."""

from __future__ import annotations

import json
import tomllib
from pathlib import Path

import jsonschema
import pytest
from typer.testing import CliRunner

from conformance import cli
from conformance.cli import schemagen
from conformance.catalog.requirements import CATALOG_PATH
from conformance.paths import schemas_dir


def test_checked_in_schemas_are_not_stale() -> None:
    stale = schemagen.stale()
    assert not stale, f"stale schemas {stale}: run `akc schemas --write` and commit the result"


def test_the_boundary_schemas_are_generated() -> None:
    assert {
        "catalog.schema.json",
        "message.schema.json",
        "scenario.schema.json",
        "run-result.schema.json",
        "adapter-info.schema.json",
    } <= set(schemagen.SCHEMAS)


@pytest.mark.parametrize("name", list(schemagen.SCHEMAS))
def test_schemas_are_valid_draft_2020_12(name: str) -> None:
    schema = json.loads((schemas_dir() / name).read_text(encoding="utf-8"))
    assert schema["$schema"] == "https://json-schema.org/draft/2020-12/schema"
    jsonschema.Draft202012Validator.check_schema(schema)


def _validator(name: str) -> jsonschema.Draft202012Validator:
    return jsonschema.Draft202012Validator(schemagen.schema_of(name))


def test_catalog_file_validates_against_its_schema() -> None:
    data = tomllib.loads(CATALOG_PATH.read_text(encoding="utf-8"))
    _validator("catalog.schema.json").validate(data)


def test_message_schema_accepts_001_and_refuses_junk() -> None:
    v = _validator("message.schema.json")
    v.validate({"role": "user", "text": "Do I need an umbrella?"})
    v.validate({"role": "assistant", "tool_calls": [{"id": "c1", "name": "w", "args": {}}]})
    v.validate({"role": "tool_result", "call_id": "c1", "content": "ok", "is_error": False})
    assert not v.is_valid({"text": "no role"})
    assert not v.is_valid({"role": "tool_result", "content": "no call id"})


def test_scenario_and_result_schemas_accept_their_defaults() -> None:
    from conformance.boundary.adapter import AdapterInfo, RunResult
    from conformance.boundary.scenario import Scenario

    _validator("scenario.schema.json").validate(
        Scenario(name="s", profile="kernel").model_dump(mode="json")
    )
    _validator("run-result.schema.json").validate(RunResult().model_dump(mode="json"))
    _validator("adapter-info.schema.json").validate(
        AdapterInfo(name="k", version="1", profiles=["kernel"]).model_dump(mode="json")
    )


def test_write_then_check_in_a_fresh_folder(tmp_path: Path) -> None:
    assert sorted(schemagen.stale(tmp_path)) == sorted(schemagen.SCHEMAS)
    written = schemagen.write(tmp_path)
    assert len(written) == len(schemagen.SCHEMAS)
    assert schemagen.stale(tmp_path) == []
    assert schemagen.write(tmp_path) == []  # idempotent
    (tmp_path / "catalog.schema.json").write_text("{}\n", encoding="utf-8")
    assert schemagen.stale(tmp_path) == ["catalog.schema.json"]


def test_cli_check_and_write(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    if not any(c.name == "schemas" for c in cli.app.registered_commands):
        cli._register()
    monkeypatch.setattr(schemagen, "schemas_dir", lambda: tmp_path)
    runner = CliRunner()
    stale = runner.invoke(cli.app, ["schemas", "--check"])
    assert stale.exit_code == 1
    assert "stale: schemas/catalog.schema.json" in stale.stderr
    wrote = runner.invoke(cli.app, ["schemas", "--write"])
    assert wrote.exit_code == 0, wrote.output
    fresh = runner.invoke(cli.app, ["schemas", "--check"])
    assert fresh.exit_code == 0, fresh.output
    both = runner.invoke(cli.app, ["schemas", "--check", "--write"])
    assert both.exit_code == 2
