"""The HTTP kernels of examples/ certified on the requirements a dialect cannot carry whole
(TOOL-007, COST-001, COST-002) and a tool loop (TOOL-003), through their official SDKs at the served
base URL (the whole suite runs in .ci/run)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

ROOT = Path(__file__).resolve().parents[1]


@pytest.mark.parametrize("module, dialect", [("openai_sdk", "openai-chat"), ("anthropic_sdk", "anthropic")])
def test_sdk_kernel_passes_over_its_dialect(module: str, dialect: str, akc_here: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    pytest.importorskip(module.split("_")[0])
    monkeypatch.syspath_prepend(str(ROOT / "examples" / "http-kernels"))
    out = akc_here("run", "--adapter", f"{module}:adapter", "--req", "TOOL-007", "--req", "COST-001")
    assert out.returncode == 0, out.stdout + out.stderr
    assert f"(model over HTTP: {dialect}): conformant on the 2 selected requirements — 2 pass" in out.stdout


def test_the_chat_loop_is_judged_not_unwired(akc_here: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    """The new user's loop, pointed at the served base URL: its model calls reach the harness."""
    monkeypatch.syspath_prepend(str(ROOT / "examples" / "chat-loop"))
    out = akc_here("run", "--adapter", "akc_adapter:adapter", "--req", "TOOL-003")
    assert "model requests reached the harness" not in out.stdout + out.stderr
    assert "(model over HTTP: openai-chat): conformant on the 1 selected requirement" in out.stdout, out.stdout
