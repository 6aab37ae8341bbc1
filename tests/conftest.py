"""Fixtures shared across test modules."""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path

import pytest

from conformance.harness.certify import SuiteOptions, SuiteRun, run_suite


@dataclass
class ReferenceRun:
    """One full in-process certification of the reference kernel, with its canonical traces."""

    run: SuiteRun
    traces_dir: Path
    backend: str


@pytest.fixture(scope="session")
def reference_run(tmp_path_factory: pytest.TempPathFactory) -> ReferenceRun:
    """Shared by the golden traces and the wire equivalence test: the suite's costliest run,
    done once per test session (writing the traces changes nothing else in the report)."""
    folder = tmp_path_factory.mktemp("reference-traces")
    backend = os.environ.get("AKC_GOLDEN_BACKEND", "asyncio")  # `trio` re-checks determinism there
    run = run_suite(SuiteOptions(adapter="reference_kernel.adapter:factory", traces_dir=str(folder), backend=backend))
    return ReferenceRun(run=run, traces_dir=folder, backend=backend)
