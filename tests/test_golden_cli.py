"""``akc run --golden DIR``: a kernel author's behaviour goldens (issue 26 §1).

The round trip: goldens recorded from the reference kernel; a legal variant (conformant, but its
spans are named per step) then changes behaviour without failing a requirement — the golden run
exits 4 and names the scenario and its requirement; ``--update-golden`` records the new behaviour,
after which the same run passes.
"""

from __future__ import annotations

from pathlib import Path
from typing import Callable

import pytest

from tests.inprocess import Ran

VARIANT = "conformance.selftest.variants.readings_kernel:span_per_step"
REQ = ["--req", "SPAN-001"]


def test_golden_round_trip(akc_here: Callable[..., Ran], tmp_path: Path) -> None:
    golden = tmp_path / "golden"
    missing = akc_here("run", *REQ, "--golden", str(golden))
    assert missing.returncode == 2 and "record it first with --update-golden" in missing.stderr

    recorded = akc_here("run", *REQ, "--golden", str(golden), "--update-golden")
    assert recorded.returncode == 0, recorded.stdout + recorded.stderr
    assert "golden: wrote 2 scenario traces" in recorded.stdout
    assert len(list(golden.glob("*.json"))) == 2
    same = akc_here("run", *REQ, "--golden", str(golden))
    assert same.returncode == 0 and "golden: 2 scenario traces unchanged" in same.stdout

    changed = akc_here("run", "--adapter", VARIANT, *REQ, "--golden", str(golden))
    assert changed.returncode == 4, changed.stdout + changed.stderr
    assert "conformant on the 1 selected requirement" in changed.stdout  # still conformant
    assert "golden: behaviour changed, by requirement:" in changed.stdout
    assert "SPAN-001 (2 scenarios):" in changed.stdout
    assert "    Each turn span encloses the model calls of its turn" in changed.stdout
    assert "first divergence at event" in changed.stdout and "(spans)" in changed.stdout

    # what varies by itself never breaks a golden; the folder's config may leave parts out
    (golden / "akc-golden.toml").write_text('ignore = ["spans"]\n', encoding="utf-8")
    ignored = akc_here("run", "--adapter", VARIANT, *REQ, "--golden", str(golden))
    assert ignored.returncode == 0, ignored.stdout
    (golden / "akc-golden.toml").unlink()

    updated = akc_here("run", "--adapter", VARIANT, *REQ, "--golden", str(golden), "--update-golden")
    assert updated.returncode == 0
    after = akc_here("run", "--adapter", VARIANT, *REQ, "--golden", str(golden))
    assert after.returncode == 0 and "unchanged" in after.stdout


def test_missing_golden_is_listed_and_fails(akc_here: Callable[..., Ran], tmp_path: Path) -> None:
    golden = tmp_path / "golden"
    assert akc_here("run", *REQ, "--golden", str(golden), "--update-golden").returncode == 0
    first = sorted(golden.glob("*.json"))[0]
    first.unlink()
    ran = akc_here("run", *REQ, "--golden", str(golden))
    assert ran.returncode == 4
    assert "1 scenario(s) without a golden trace" in ran.stdout


@pytest.mark.parametrize(
    ("config", "message"),
    [("only = [\"nonsense\"]\n", "unknown part nonsense"), ("colour = 1\n", "unknown key(s) colour"), ("only = \n", "not a readable TOML file")],
)
def test_bad_golden_config_is_a_usage_error(akc_here: Callable[..., Ran], tmp_path: Path, config: str, message: str) -> None:
    (tmp_path / "akc-golden.toml").write_text(config, encoding="utf-8")
    ran = akc_here("run", *REQ, "--golden", str(tmp_path))
    assert ran.returncode == 2 and message in ran.stderr
    assert ran.stderr.count("\n") == 1  # one line, no traceback


def test_update_golden_needs_golden(akc_here: Callable[..., Ran]) -> None:
    ran = akc_here("run", *REQ, "--update-golden")
    assert ran.returncode == 2 and "--update-golden needs --golden DIR" in ran.stderr


def test_extra_model_call_is_named_as_one() -> None:
    """``akc trace diff``: an event on one side only is that event ("extra model request in B"),
    not a shift of everything after it ("hook order")."""
    from conformance.trace.canonical import Trace, TraceKernel
    from conformance.trace.diff import compare

    def trace(*events: dict) -> Trace:
        return Trace.model_validate({"feature": "f", "scenario": "s", "profile": "kernel", "requirements": ["LOOP-001"],
                                     "kernel": TraceKernel(name="k", version="1").model_dump(), "events": list(events)})

    hook = {"kind": "hook", "point": "context-assemble", "hook_id": "h"}
    request = {"kind": "model_request", "index": 1}
    end = {"kind": "end", "status": "ok"}
    d = compare(trace(hook, request, end), trace(hook, request, dict(request, index=2), end))
    assert d is not None and d.kind == "extra model request in B"
    assert d.requirements == ["LOOP-001"]


def test_golden_through_the_pytest_plugin(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """``pytest --pyargs conformance.suite --kernel=… --akc-golden DIR``: the same goldens, exit 4."""
    from tests.test_harness import ROOT, _plugin_args

    suite = ROOT / "conformance" / "suite"
    golden = tmp_path / "golden"

    def run(kernel: str, *extra: str) -> int:
        return int(pytest.main(
            ["--pyargs", "conformance.suite", "-c", str(suite / "pytest.ini"), "--rootdir", str(suite), "-q",
             "-p", "no:cacheprovider", f"--kernel={kernel}", "--akc-req", "SPAN-001", "--akc-golden", str(golden),
             *extra, *_plugin_args()]
        ))

    assert run("reference_kernel.adapter:factory", "--akc-update-golden") == 0
    assert len(list(golden.glob("*.json"))) == 2
    capsys.readouterr()
    assert run(VARIANT) == 4
    out = capsys.readouterr().out
    assert "golden: behaviour changed, by requirement:" in out and "SPAN-001 (2 scenarios):" in out


def test_a_diff_of_hostile_kernel_text_prints_no_control_sequence() -> None:
    """Kernel text reaches the terminal through ``akc trace diff`` and ``--golden`` as data:
    escape sequences (clear screen, OSC 52) and newlines are shown as visible escapes."""
    from conformance.trace.canonical import Trace, TraceKernel
    from conformance.trace.diff import DiffResult, compare, render

    def trace(text: str) -> Trace:
        return Trace.model_validate({"feature": "f", "scenario": "s", "profile": "kernel", "requirements": ["LOOP-001"],
                                     "kernel": TraceKernel(name="k", version="1").model_dump(),
                                     "events": [{"kind": "model_response", "index": 0, "text": text}]})

    d = compare(trace("fine"), trace("\x1b[2J\x1b]52;c;cHduZWQ=\x07\nconformant"))
    out = render(DiffResult(a="A", b="B", compared=1, differences=[d] if d else []), all_spots=True)
    assert d is not None
    assert "\x1b" not in out and "\x07" not in out
    assert "\\x1b[2J" in out  # shown, as a visible escape
