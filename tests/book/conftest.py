"""Shared fixtures of the spec book's tests: one real failing report (a mutant of the reference
kernel that skips context-assemble after the first turn, certified on LOOP-001 only), and a book
built from the committed matrix plus that report."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from tests.inprocess import Ran, run_akc

ROOT = Path(__file__).resolve().parent.parent.parent
MUTANT = "conformance.selftest.mutants.loop:context_assemble_first_turn_only"


def akc(*args: str, cwd: Path | None = None) -> Ran:
    """``akc ARGS`` through its entry point, in this interpreter (tests/inprocess.py)."""
    return run_akc(*args, cwd=cwd)


@pytest.fixture(scope="session")
def failing_report(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A real report with a failing MUST and its trace (LOOP-001 against its mutant)."""
    out = tmp_path_factory.mktemp("book-report") / "mutant.json"
    proc = akc("run", "--adapter", MUTANT, "--req", "LOOP-001", "--json", str(out))
    assert proc.returncode == 1, proc.stderr
    data: dict[str, Any] = json.loads(out.read_text(encoding="utf-8"))
    assert data["requirements"][0]["verdict"] == "fail"
    return out


@pytest.fixture(scope="session")
def site(tmp_path_factory: pytest.TempPathFactory, failing_report: Path) -> Path:
    """``akc book DIR --report mutant.json``, through the command line."""
    out = tmp_path_factory.mktemp("book") / "site"
    proc = akc("book", str(out), "--report", str(failing_report))
    assert proc.returncode == 0, proc.stderr
    assert "wrote" in proc.stdout and (out / "index.html").is_file()
    return out


MUTANT_PAGE = "kernel-mutant-context-assemble-first-turn-only.html"
