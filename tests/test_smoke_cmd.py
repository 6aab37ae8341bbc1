"""``akc smoke``: "adapter works" and exit 0, what broke and exit 1, usage errors exit 2."""

from __future__ import annotations

import os
import sys
import json
from pathlib import Path
from typing import Any

import pytest
import typer
from typer.testing import CliRunner

from conformance.cli import smoke as cli_smoke

ROOT = Path(__file__).resolve().parents[1]
if str(ROOT) not in sys.path:  # the fakes are imported as tests.fakes.*
    sys.path.insert(0, str(ROOT))
FAKE = ROOT / "tests" / "wire_fakes" / "fake_kernel.py"


@pytest.fixture
def app() -> typer.Typer:
    app = typer.Typer()

    @app.callback()
    def main() -> None:
        """akc"""

    cli_smoke.register(app)
    return app


def test_smoke_over_stdio_says_the_adapter_works(app: typer.Typer, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("PYTHONPATH", str(ROOT))
    monkeypatch.setenv("AKC_VALIDATE_PROTOCOL", "0")  # restored after the test: --validate-protocol sets it
    result = CliRunner().invoke(
        app, ["smoke", "--adapter", f"stdio:{sys.executable} -m reference_kernel.stdio", "--validate-protocol"]
    )
    assert result.exit_code == 0, result.output
    assert result.output.startswith("adapter works: reference-kernel")
    assert os.environ.get("AKC_VALIDATE_PROTOCOL") == "1"


def test_a_broken_adapter_exits_1_saying_what_broke(app: typer.Typer, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("AKC_INNER", "tests.fakes.fake_kernel:factory")
    result = CliRunner().invoke(app, ["smoke", "--adapter", "tests.fakes.broken:raising"])
    assert result.exit_code == 1, result.output
    assert "adapter does not work" in result.output and "adapter or basic kernel behaviour" in result.output
    assert " error: " in result.output  # each smoke requirement with its verdict and why


def test_a_kernel_process_that_crashes_fails_smoke(app: typer.Typer) -> None:
    result = CliRunner().invoke(app, ["smoke", "--adapter", f"stdio:{sys.executable} {FAKE} garbage"])
    assert result.exit_code == 1, result.output
    assert "not a JSON-RPC 2.0 message" in result.output


@pytest.mark.parametrize(
    "spec, words",
    [("stdio:/nonexistent/kernel", "cannot start"), (f"stdio:{sys.executable} {FAKE} version", "protocol version 2"),
     ("no.such.module:factory", "not found")],
)
def test_usage_errors_exit_2(app: typer.Typer, spec: str, words: str) -> None:
    result = CliRunner().invoke(app, ["smoke", "--adapter", spec])
    assert result.exit_code == 2, result.output
    assert words in result.output


def test_a_kernel_whose_model_calls_never_reach_the_harness_fails_smoke_saying_so(app: typer.Typer) -> None:
    result = CliRunner().invoke(app, ["smoke", "--adapter", "tests.fakes.bypass:adapter"])
    assert result.exit_code == 1, result.output
    assert "adapter works" not in result.output
    assert "0 of " in result.output and " model requests reached the harness; the kernel must call the model the harness serves (doubles.model_stream or the HTTP base URL in the run request" in result.output


def test_a_full_run_of_such_a_kernel_says_it_once_at_the_head(akc_here: Any, tmp_path: Path) -> None:
    report = tmp_path / "r.json"
    out = akc_here("run", "--adapter", "tests.fakes.bypass:adapter", "--req", "LOOP-013", "--req", "DONE-001",
                   "--req", "TOOL-003", "--json", str(report))
    text = out.stdout + out.stderr
    assert out.returncode == 1, text  # the verdicts stay: from outside it is a kernel that calls no model
    assert text.count(" model requests reached the harness") == 1
    errors = json.loads(report.read_text())["errors"]
    assert errors[0].startswith("0 of ") and "the kernel must call the model the harness serves" in errors[0]
