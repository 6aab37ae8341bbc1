"""The zoo of misbehaving kernels (issue 13): each case runs ``akc run`` against one misbehaving
kernel — in-process adapters in tests/zoo/inproc.py, stdio kernels in tests/zoo/stdio_proxy.py —
and checks the exit code, that the report is written and valid against
schemas/report.schema.json, the verdicts, and that the message names the cause.

Where the point is the real process — signals, ``os._exit``, what a fresh process reads from its
environment — the case drives ``python -m conformance run`` in a subprocess (``akc``). The others
call the ``akc`` entry point in this interpreter (the ``here`` fixture, tests/inprocess.py): the
run still forks its supervised child (checked: no other thread is running, so it can), which is
where the adapter misbehaves, and a stdio kernel is still its own process; what it saves is an
interpreter's start-up and imports (~0.7 s of CPU a case).

Kept fast: a few requirements per case (``--req``), small timeouts (``--timeout-scale``); every
subprocess has a hard timeout and every case a pytest-timeout, so a harness that hangs fails the
case instead of the session.
"""

from __future__ import annotations

import json
import os
import signal
import stat
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import jsonschema
import pytest

from tests.inprocess import Ran, alone, run_akc

ROOT = Path(__file__).resolve().parents[1]
SCHEMA = json.loads((ROOT / "schemas" / "report.schema.json").read_text())
FEW = ["--req", "LOOP-001", "--req", "TOOL-004"]
PROXY = f"stdio:python {ROOT / 'tests' / 'zoo' / 'stdio_proxy.py'}"


def inproc(name: str) -> str:
    return f"tests.zoo.inproc:{name.lower()}"


#: A case that hangs fails after this long (pytest-timeout; the subprocesses have their own).
pytestmark = pytest.mark.timeout(60)


def akc(*args: str, timeout: float = 60, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    full = dict(os.environ, **(env or {}))
    full["PYTHONPATH"] = os.pathsep.join(p for p in (str(ROOT), full.get("PYTHONPATH", "")) if p)
    full.pop("AKC_NO_SUPERVISOR", None)
    full["ZOO_TEST_PID"] = str(os.getpid())  # SignalParent never signals the test runner
    started = time.monotonic()
    out = subprocess.run(
        [sys.executable, "-m", "conformance", "run", *args], capture_output=True, text=True, env=full, cwd=ROOT, timeout=timeout
    )
    if os.environ.get("AKC_ZOO_TABLE"):
        _table_row(os.environ["AKC_ZOO_TABLE"], args, out, time.monotonic() - started)
    return out


@pytest.fixture
def here(monkeypatch: pytest.MonkeyPatch) -> Callable[..., Ran]:
    """``here(ARGS, env=...)``: ``akc run ARGS`` through the entry point in this interpreter, with
    the environment a subprocess of :func:`akc` gets (a stdio kernel inherits it) and the zoo's
    adapters counting their scenarios from the first again."""

    def run(*args: str, timeout: float = 60, env: dict[str, str] | None = None) -> Ran:
        from tests.zoo import inproc as zoo

        monkeypatch.setenv("PYTHONPATH", os.pathsep.join(p for p in (str(ROOT), os.environ.get("PYTHONPATH", "")) if p))
        monkeypatch.delenv("AKC_NO_SUPERVISOR", raising=False)
        for key, value in (env or {}).items():
            monkeypatch.setenv(key, value)
        zoo._runs = 0
        alone()  # the misbehaving adapter runs in the supervised child, never in the test interpreter
        started = time.monotonic()
        out = run_akc("run", *args)
        if os.environ.get("AKC_ZOO_TABLE"):
            _table_row(os.environ["AKC_ZOO_TABLE"], args, out, time.monotonic() - started)
        return out

    return run


def _table_row(path: str, args: tuple[str, ...], out: Any, seconds: float) -> None:
    """``AKC_ZOO_TABLE=FILE pytest tests/test_zoo.py`` appends one JSON line per run: the case,
    its exit code and time, whether the report was written, its verdicts and first message."""
    json_path = Path(args[args.index("--json") + 1]) if "--json" in args else None
    data = json.loads(json_path.read_text()) if json_path and json_path.exists() else None
    first = (messages(data).strip() if data else "") or out.stderr.strip()
    row = {
        "case": os.environ.get("PYTEST_CURRENT_TEST", "?").split("::")[-1].split(" ")[0],
        "exit": out.returncode,
        "seconds": round(seconds, 1),
        "report": data is not None,
        "verdicts": verdicts(data) if data else {},
        "message": first.splitlines()[0][:160] if first else "",
    }
    with open(path, "a", encoding="utf-8") as f:
        f.write(json.dumps(row) + "\n")


def report(path: Path) -> dict[str, Any]:
    data = json.loads(path.read_text())
    jsonschema.validate(data, SCHEMA)
    return data


def verdicts(data: dict[str, Any]) -> dict[str, str]:
    return {r["id"]: r["verdict"] for r in data["requirements"]}


def messages(data: dict[str, Any]) -> str:
    """Every message of the report, checks and harness errors, in one text."""
    parts = list(data["errors"])
    for r in data["requirements"]:
        parts += [r.get("message") or ""] + [c.get("message") or "" for c in r["checks"]]
    return "\n".join(parts)


def run_case(tmp_path: Path, adapter: str, *args: str, code: int, timeout: float = 60, env: dict[str, str] | None = None,
             via: Callable[..., Any] = akc) -> tuple[Any, dict[str, Any]]:
    """``akc run --adapter ADAPTER --json … ARGS`` in a subprocess (``via=akc``) or in this
    interpreter (``via=here``); the exit code checked, the report validated."""
    path = tmp_path / "r.json"
    path.write_text("an earlier run's report\n")
    out = via("--adapter", adapter, "--json", str(path), *args, timeout=timeout, env=env)
    assert out.returncode == code, out.stdout + out.stderr
    assert "Traceback" not in out.stdout + out.stderr
    return out, report(path)


# ----------------------------------------------------------------------------- 1. signals


@pytest.mark.parametrize(("name", "code", "signame"), [("SignalOwnProcess", 130, "SIGINT"), ("Sigterm", 143, "SIGTERM"),
                                                       ("SignalParent", 143, "SIGTERM")])
def test_interrupted_run_exits_130_or_143_with_an_incomplete_report(tmp_path: Path, name: str, code: int, signame: str) -> None:
    out, data = run_case(tmp_path, inproc(name), "--req", "DONE-001", "--req", "TOOL-004", "--req", "LOOP-001",
                         "--junit", str(tmp_path / "r.xml"), code=code)
    assert "conformant" not in out.stdout and "pass" not in out.stdout  # no table that looks complete
    assert f"interrupted by {signame}" in out.stderr
    assert data["exit_code"] == code and f"interrupted by {signame}" in data["errors"][-1]
    assert "pass" not in set(verdicts(data).values()) - {"pass"} or "incomplete" in verdicts(data).values()
    assert "incomplete" in verdicts(data).values()
    assert "exit_code" in (tmp_path / "r.xml").read_text()


_STARTING = """
import os, signal, sys
sys.argv = ["akc", "run", "--adapter", "tests.zoo.inproc:wrapper", "--req", "DONE-001", "--json", sys.argv[2]]
import conformance.cli as cli
real = cli._register
def register(argv=None):
    os.kill(os.getpid(), getattr(signal, sys.argv_signal))  # a signal while akc is starting up
    real(argv)
cli._register = register
cli.main()
"""


#: The same signal while the program's modules import (typer's first), before main() runs.
_IMPORTING = """
import builtins, os, signal, sys
sys.argv = ["akc", "run", "--adapter", "tests.zoo.inproc:wrapper", "--req", "DONE-001", "--json", sys.argv[2]]
real = builtins.__import__
def imp(name, *args, **kwargs):
    if name == "typer" and not getattr(builtins, "_sent", False):
        builtins._sent = True
        os.kill(os.getpid(), getattr(signal, sys.argv_signal))
    return real(name, *args, **kwargs)
builtins.__import__ = imp
from conformance.cli import main
main()
"""


@pytest.mark.parametrize("when", ["importing", "starting"])
@pytest.mark.parametrize(("signame", "code"), [("SIGINT", 130), ("SIGTERM", 143)])
def test_signal_while_akc_starts_is_one_line_and_leaves_no_earlier_report(tmp_path: Path, signame: str, code: int, when: str) -> None:
    stale = tmp_path / "r.json"
    stale.write_text("an earlier run's report\n")
    script = (_IMPORTING if when == "importing" else _STARTING).replace("sys.argv_signal", repr(signame))
    out = subprocess.run([sys.executable, "-c", script, "akc", str(stale)], capture_output=True, text=True, cwd=ROOT, timeout=60,
                         env=dict(os.environ, PYTHONPATH=str(ROOT)))
    assert out.returncode == code, out.stderr
    assert out.stderr.strip() == f"akc: interrupted by {signame} before the run started; no report was written"
    assert not stale.exists()


@pytest.mark.parametrize(("signame", "code"), [("INT", 130), ("TERM", 143)])
def test_signal_while_the_adapter_loads_is_one_line(tmp_path: Path, signame: str, code: int) -> None:
    stale = tmp_path / "r.json"
    stale.write_text("an earlier run's report\n")
    out = akc("--adapter", "tests.zoo.early_signal:factory", "--json", str(stale), env={"ZOO_SIGNAL": signame})
    assert out.returncode == code and out.stderr.strip() == f"akc: interrupted by SIG{signame}", out.stderr
    assert not stale.exists()


# ----------------------------------------------------------------------------- 2-3. the event loop


@pytest.mark.timeout(25)
def test_blocked_loop_ends_the_scenario_at_its_timeout_and_says_so(here: Callable[..., Ran], tmp_path: Path) -> None:
    out, data = run_case(tmp_path, inproc("BlocksLoop"), *FEW, "--timeout-scale", "0.2", code=1, via=here)
    v = verdicts(data)
    assert sorted(v.values()) == ["fail", "pass"]
    text = messages(data)
    assert "blocked the event loop: no heartbeat for" in text and "within 1 s" in text


def test_os_exit_in_the_adapter_gives_exit_3_and_a_report_naming_it(tmp_path: Path) -> None:
    out, data = run_case(tmp_path, inproc("OsExit"), *FEW, code=3)
    assert "os._exit" in messages(data) and "exited with code 0" in messages(data)
    assert "error" in verdicts(data).values() and "pass" in verdicts(data).values()


@pytest.mark.parametrize("name", ["RaisesSystemExit", "RaisesKeyboardInterrupt"])
def test_system_exit_or_keyboard_interrupt_in_the_adapter_is_an_error_of_that_scenario(here: Callable[..., Ran], tmp_path: Path, name: str) -> None:
    out, data = run_case(tmp_path, inproc(name), *FEW, code=3, via=here)
    assert sorted(verdicts(data).values()) == ["error", "pass"]  # the loop survived it
    exc = "SystemExit" if "System" in name else "KeyboardInterrupt"
    assert f"the adapter raised {exc}" in messages(data) and "portal is not running" not in messages(data)


# ----------------------------------------------------------------------------- 4-5, 12. usage errors


def _usage(here: Callable[..., Ran], tmp_path: Path, *args: str) -> Ran:
    stale = tmp_path / "stale.json"
    stale.write_text("an earlier run's report\n")
    out = here(*args, "--json", str(stale))
    assert out.returncode == 2, out.stdout + out.stderr
    assert len(out.stderr.strip().splitlines()) == 1 and "Traceback" not in out.stderr, out.stderr
    assert not stale.exists()  # a failed run leaves no earlier report behind
    return out


@pytest.mark.timeout(30)
def test_info_raising_is_a_one_line_usage_error(here: Callable[..., Ran], tmp_path: Path) -> None:
    out = _usage(here, tmp_path, "--adapter", inproc("InfoRaises"))
    assert "RuntimeError: info is broken" in out.stderr


@pytest.mark.timeout(30)
@pytest.mark.parametrize("kind", ["json-under-file", "junit-dir", "markdown-dir", "traces-file"])
def test_unwritable_output_path_is_a_usage_error_before_running(here: Callable[..., Ran], tmp_path: Path, kind: str) -> None:
    afile = tmp_path / "afile"
    afile.write_text("x")
    args = {
        "json-under-file": ["--junit", str(afile / "r.xml")],
        "junit-dir": ["--junit", str(tmp_path) + "/"],
        "markdown-dir": ["--markdown", str(tmp_path)],
        "traces-file": ["--traces", str(afile)],
    }[kind]
    out = _usage(here, tmp_path, "--adapter", inproc("Wrapper"), *FEW, *args)
    assert args[0] in out.stderr


@pytest.mark.timeout(30)
@pytest.mark.parametrize("adapter", [inproc("MisspeltCapability"), f"{PROXY} misspelt", inproc("ConstructedInfo"),
                                     inproc("InfoChangesAfterRead"), inproc("ManyCapabilities")])
def test_misspelt_capability_is_a_usage_error_listing_the_known_ones(here: Callable[..., Ran], tmp_path: Path, adapter: str) -> None:
    out = _usage(here, tmp_path, "--adapter", adapter)
    assert "unknown capability" in out.stderr and "max_cost_usd" in out.stderr and "subagents" in out.stderr
    assert len(out.stderr) < 2000  # a 100k-entry list is not echoed whole


# ----------------------------------------------------------------------------- 6. process groups


def _alive(pid: int) -> bool:
    try:
        status = Path(f"/proc/{pid}/status").read_text()
    except OSError:
        return False
    return "\nState:\tZ" not in status


def test_kernel_exiting_with_a_grandchild_holding_stdout_is_a_crash_not_a_hang(here: Callable[..., Ran], tmp_path: Path) -> None:
    pidfile = tmp_path / "pids"
    out, data = run_case(tmp_path, f"{PROXY} grandchild", *FEW, code=3, via=here, env={"ZOO_PIDFILE": str(pidfile)})
    assert set(verdicts(data).values()) == {"error"}
    assert "exited with code 4" in messages(data) and "did not finish" not in messages(data)
    pids = [int(p) for p in pidfile.read_text().split()]
    assert len(pids) >= 2 and not [p for p in pids if _alive(p)]


def test_descendants_that_left_the_process_group_end_with_the_run(here: Callable[..., Ran], tmp_path: Path) -> None:
    pidfile = tmp_path / "pids"
    run_case(tmp_path, f"{PROXY} setsid", *FEW, code=0, via=here, env={"ZOO_PIDFILE": str(pidfile)})
    pids = [int(p) for p in pidfile.read_text().split()]
    assert len(pids) == 2 and not [p for p in pids if _alive(p)]


# ----------------------------------------------------------------------------- 7. slow is not hung


def test_slow_but_progressing_kernel_is_incomplete_not_fail(here: Callable[..., Ran], tmp_path: Path) -> None:
    out, data = run_case(tmp_path, inproc("Slow"), "--req", "BUDGET-003", "--timeout-scale", "0.1", code=3, via=here)
    assert verdicts(data) == {"BUDGET-003": "incomplete"}
    assert "too slow to finish" in messages(data) and "--timeout-scale" in messages(data)


def test_kernel_deadlocked_while_a_thread_pings_is_hung_not_slow(here: Callable[..., Ran], tmp_path: Path) -> None:
    out, data = run_case(tmp_path, f"{PROXY} chatty", "--req", "LOOP-001", "--timeout-scale", "0.2", code=1, via=here)
    assert verdicts(data) == {"LOOP-001": "fail"}
    assert "did not finish" in messages(data) and "too slow" not in messages(data)


def test_circuit_breaker_stops_a_kernel_that_hangs_every_scenario(here: Callable[..., Ran], tmp_path: Path) -> None:
    out, data = run_case(tmp_path, inproc("HangsAlways"), "--req", "DONE-001", "--req", "TOOL-003",
                         "--timeout-scale", "0.05", "--max-hangs", "2", code=3, via=here)
    assert "circuit breaker" in data["errors"][-1] and "2 consecutive" in data["errors"][-1]
    assert "circuit breaker" in out.stdout + out.stderr
    checks = [c for r in data["requirements"] for c in r["checks"]]
    assert sum(c["message"] == "did not run" for c in checks) > 5


# ----------------------------------------------------------------------------- 8-10, 14. the wire


@pytest.mark.parametrize(("mode", "words"), [("duplicate", "a second time"), ("late", "after it had answered")])
def test_stray_message_is_reported_on_its_own_scenario(here: Callable[..., Ran], tmp_path: Path, mode: str, words: str) -> None:
    out, data = run_case(tmp_path, f"{PROXY} {mode}", *FEW, code=3, via=here)
    assert sorted(verdicts(data).values()) == ["error", "pass"]
    bad = [r for r in data["requirements"] if r["verdict"] == "error"][0]
    assert words in messages({"errors": [], "requirements": [bad]}) and "seq 1" in messages(data)
    assert "never sent" not in messages(data)


def test_invalid_utf8_is_a_protocol_error_naming_the_line(here: Callable[..., Ran], tmp_path: Path) -> None:
    out, data = run_case(tmp_path, f"{PROXY} badutf8", *FEW, code=3, via=here)
    assert "error" in verdicts(data).values()
    assert "not valid UTF-8" in messages(data) and "line" in messages(data)


def test_circuit_breaker_names_a_protocol_break_not_a_hang(here: Callable[..., Ran], tmp_path: Path) -> None:
    out, data = run_case(tmp_path, f"{PROXY} badutf8-always", "--req", "DONE-001", "--req", "TOOL-003", "--max-hangs", "2",
                         code=3, via=here)
    assert "in which the kernel broke the protocol (circuit breaker" in data["errors"][-1], data["errors"][-1]


def test_answer_nested_100k_deep_is_a_wire_error_not_a_recursion_error(here: Callable[..., Ran], tmp_path: Path) -> None:
    out, data = run_case(tmp_path, f"{PROXY} deep", *FEW, code=3, via=here)
    assert sorted(verdicts(data).values()) == ["error", "pass"]
    assert "nested too deeply" in messages(data) and "RecursionError" not in messages(data)


def test_dollar_notifications_are_ignored(here: Callable[..., Ran], tmp_path: Path) -> None:
    out, data = run_case(tmp_path, f"{PROXY} dollar", *FEW, code=0, via=here)
    assert set(verdicts(data).values()) == {"pass"}


def test_kernel_that_stops_reading_its_stdin_is_named_so_with_bounded_memory(here: Callable[..., Ran], tmp_path: Path) -> None:
    out, data = run_case(tmp_path, f"{PROXY} deaf", "--req", "LOOP-001", "--max-hangs", "1", code=3, via=here,
                         env={"ZOO_CALLBACKS": "40"})  # 40 answers of 256 kB: past the 8 MiB bound
    assert "error" in verdicts(data).values()
    text = messages(data)
    assert "the kernel has not read its stdin for" in text and "unsent" in text
    assert "ExceptionGroup" not in text and "blocked the event loop" not in text


def test_long_line_without_newline_says_how_many_bytes_are_pending(here: Callable[..., Ran], tmp_path: Path) -> None:
    # A whole scenario's time (a loaded machine starts the proxy and its kernel slowly), and the
    # circuit breaker after the first hang so the run pays for one.
    out, data = run_case(tmp_path, f"{PROXY} bigline", "--req", "LOOP-001", "--max-hangs", "1", code=3, via=here)
    assert verdicts(data) == {"LOOP-001": "fail"}
    assert f"{5 * 1024 * 1024} bytes on the kernel's stdout with no newline" in messages(data)


# ----------------------------------------------------------------------------- 11, 13. the adapter


def test_tool_never_offered_fails_tool_004(here: Callable[..., Ran], tmp_path: Path) -> None:
    out, data = run_case(tmp_path, inproc("CallsToolNotOffered"), "--req", "TOOL-004", code=1, via=here)
    assert verdicts(data) == {"TOOL-004": "fail"}
    assert "'rm_rf'" in messages(data) and "never offered" in messages(data)


@pytest.mark.parametrize("reqs", [["TOOL-003"], ["TOOL-003", "TOOL-004"]])
def test_tool_never_offered_is_charged_to_tool_004_whatever_scenario_ran(here: Callable[..., Ran], tmp_path: Path, reqs: list[str]) -> None:
    args = [a for r in reqs for a in ("--req", r)]
    out, data = run_case(tmp_path, inproc("CallsToolNotOffered"), *args, code=1, via=here)
    v = verdicts(data)
    assert v["TOOL-004"] == "fail" and v["TOOL-003"] != "fail"  # blame follows the fault, not the clock
    tool3 = [c["message"] for r in data["requirements"] if r["id"] == "TOOL-003" for c in r["checks"]]
    assert any("blocked by TOOL-004" in (m or "") for m in tool3)
    tool4 = " ".join(c["message"] or "" for r in data["requirements"] if r["id"] == "TOOL-004" for c in r["checks"])
    assert "charged to TOOL-004" in tool4 and "'rm_rf'" in tool4
    assert ("was not selected with --req" in tool4) == ("TOOL-004" not in reqs)


@pytest.mark.timeout(25)
def test_adapter_mutating_the_scenario_cannot_extend_its_timeout(here: Callable[..., Ran], tmp_path: Path) -> None:
    out, data = run_case(tmp_path, inproc("MutatesTimeout"), "--req", "LOOP-001", "--timeout-scale", "0.2", code=3, via=here)
    assert verdicts(data) == {"LOOP-001": "error"}
    assert "changed the scenario it was given (field timeout_s)" in messages(data)


# ----------------------------------------------------------------------------- 15. report files


def test_report_files_follow_the_umask_and_symlinks_and_hypothesis_uses_the_run_temp_dir(tmp_path: Path) -> None:
    tmp = tmp_path / "tmp"
    tmp.mkdir()
    target = tmp_path / "target.json"
    target.write_text("an earlier run's report\n")
    link = tmp_path / "link.json"
    link.symlink_to(target)
    old = os.umask(0o022)
    try:
        out = akc("--adapter", inproc("Wrapper"), "--req", "DONE-001", "--json", str(link), "--markdown", str(tmp_path / "r.md"),
                  env={"TMPDIR": str(tmp)})
    finally:
        os.umask(old)
    assert out.returncode == 0, out.stdout + out.stderr
    assert link.is_symlink() and verdicts(report(target)) == {"DONE-001": "pass"}
    assert stat.S_IMODE((tmp_path / "r.md").stat().st_mode) == 0o644
    assert not list(tmp.iterdir())  # no akc-hypothesis folder shared by every run


# ----------------------------------------------------------------------------- issue 25: kernel text is data


def test_hostile_kernel_text_is_data_in_every_report_and_on_the_terminal(here: Callable[..., Ran], tmp_path: Path) -> None:
    import tomllib
    from xml.etree import ElementTree as ET

    exp = tmp_path / "exp.toml"
    out, data = run_case(tmp_path, inproc("HostileText"), *FEW, "--junit", str(tmp_path / "r.xml"),
                         "--markdown", str(tmp_path / "r.md"), "--write-expectations", str(exp), code=3, via=here)
    assert sorted(verdicts(data).values()) == ["error", "pass"]
    assert "\ufffd" in messages(data)  # the lone surrogate, replaced
    ET.parse(tmp_path / "r.xml")
    assert "<b>" not in (tmp_path / "r.md").read_text()
    tomllib.loads(exp.read_text())
    assert not any(ch in out.stdout for ch in "\x1b\x00\x07\r\x9b\u202e")
    assert "conformant" not in out.stdout.splitlines() and "\\x1b]52;" in out.stdout
    again = here("--adapter", inproc("HostileText"), *FEW, "--expect", str(exp))
    assert again.returncode == 0, again.stdout + again.stderr


@pytest.mark.timeout(30)
def test_report_path_that_only_fails_at_write_time_is_caught_before_the_run(here: Callable[..., Ran], tmp_path: Path) -> None:
    out = _usage(here, tmp_path, "--adapter", inproc("Wrapper"), "--req", "DONE-001", "--write-expectations", "/proc/self/net/x.toml")
    assert "--write-expectations /proc/self/net/x.toml: cannot write in" in out.stderr


@pytest.mark.timeout(30)
def test_two_outputs_at_one_path_is_a_usage_error(here: Callable[..., Ran], tmp_path: Path) -> None:
    out = _usage(here, tmp_path, "--adapter", inproc("Wrapper"), "--req", "DONE-001", "--junit", str(tmp_path / "stale.json"))
    assert "the same file as --json" in out.stderr


def test_report_write_failing_after_the_run_is_one_line_each_and_exit_3(here: Callable[..., Ran], tmp_path: Path) -> None:
    outdir = tmp_path / "out"
    outdir.mkdir()
    out = here("--adapter", inproc("BreaksOutputFolder"), "--req", "DONE-001", "--json", str(outdir / "r.json"),
               "--markdown", str(outdir / "r.md"), "--write-expectations", str(outdir / "e.toml"), env={"ZOO_OUTDIR": str(outdir)})
    assert out.returncode == 3, out.stdout + out.stderr
    assert "Traceback" not in out.stdout + out.stderr and "wrote the expectations" not in out.stdout
    for flag, name in (("--json", "r.json"), ("--markdown", "r.md"), ("--write-expectations", "e.toml")):
        assert sum(f"cannot write {flag} {outdir / name}:" in line for line in out.stdout.splitlines()) == 1, out.stdout


@pytest.mark.timeout(30)
@pytest.mark.parametrize("kind", ["wrong-type", "not-utf8", "deep", "endless"])
def test_bad_expectations_file_is_one_line_and_exit_2_with_a_bounded_read(here: Callable[..., Ran], tmp_path: Path, kind: str) -> None:
    path = tmp_path / "exp.toml"
    content = {
        "wrong-type": b"format = 1\n[expected.LOOP-001]\nverdict = 3\n",
        "not-utf8": b"format = 1\n# caf\xe9\n",
        "deep": b"x = " + b"[" * 100_000,
    }.get(kind)
    if content is not None:
        path.write_bytes(content)
    expect = "/dev/zero" if kind == "endless" else str(path)
    out = _usage(here, tmp_path, "--adapter", inproc("Wrapper"), "--req", "DONE-001", "--expect", expect)
    assert f"expectations file {expect}" in out.stderr


@pytest.mark.timeout(30)
@pytest.mark.parametrize("content", [b'{"kernel": {"name": "x", "version": "1"}, "requirements": [{"id": 3}]}', b"[" * 100_000,
                                     b"\xff\xfe", b'{"kernel": 3}'], ids=["bad-field", "deep", "not-utf8", "no-requirements"])
def test_book_with_a_malformed_report_is_one_line_and_exit_2(tmp_path: Path, content: bytes) -> None:
    bad = tmp_path / "bad.json"
    bad.write_bytes(content)
    out = run_akc("book", str(tmp_path / "site"), "--no-matrix", "--report", str(bad))
    assert out.returncode == 2 and len(out.stderr.strip().splitlines()) == 1 and "Traceback" not in out.stderr, out.stderr[-500:]
    assert str(bad) in out.stderr and not (tmp_path / "site" / "index.html").exists()
