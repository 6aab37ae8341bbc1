"""The composite action (action.yml) and its shell part (scripts/akc-action.sh), run as CI would:
the script calls the real `akc` entry point, writes the JUnit report and appends the Markdown
summary to $GITHUB_STEP_SUMMARY, and exits with akc's code."""

from __future__ import annotations

import os
import shlex
import subprocess
import sys
from pathlib import Path
from xml.etree import ElementTree as ET

ROOT = Path(__file__).resolve().parents[1]
SCRIPT = ROOT / "scripts" / "akc-action.sh"


def run_action(tmp_path: Path, **inputs: str) -> tuple[subprocess.CompletedProcess[str], Path, Path]:
    summary = tmp_path / "step-summary.md"
    summary.write_text("previous step\n")
    junit = tmp_path / "junit.xml"
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join(p for p in (str(ROOT), env.get("PYTHONPATH", "")) if p)
    env.update({"AKC": f"{shlex.quote(sys.executable)} -m conformance", "AKC_JUNIT": str(junit), "GITHUB_STEP_SUMMARY": str(summary),
                "AKC_ARGS": "--smoke", **inputs})
    out = subprocess.run(["bash", str(SCRIPT)], capture_output=True, text=True, env=env, cwd=tmp_path, timeout=180)
    return out, junit, summary


def test_the_action_script_gates_on_new_failures_and_passes_known_ones(tmp_path: Path) -> None:
    out, junit, summary = run_action(tmp_path, AKC_ADAPTER="tests.fakes.broken:reordering")
    assert out.returncode == 1, out.stdout + out.stderr
    text = summary.read_text()
    assert text.startswith("previous step\n")  # appended, never overwritten
    assert "## Agent kernel conformance" in text and "| TOOL-003 |" in text
    suite = ET.parse(junit).getroot().find("testsuite")
    # result order is TOOL-003's fault alone: the concurrency smoke scenario passes (issue 22)
    assert suite.get("tests") == str(len(suite.findall("testcase"))) and suite.get("failures") == "1"

    expect = tmp_path / "expect.toml"
    expect.write_text('[expected.TOOL-003]\nverdict = "fail"\n')
    ok, junit, summary = run_action(tmp_path, AKC_ADAPTER="tests.fakes.broken:reordering", AKC_EXPECT=str(expect))
    assert ok.returncode == 0, ok.stdout + ok.stderr
    assert "Expected failures" in summary.read_text()
    assert ET.parse(junit).getroot().find("testsuite").get("failures") == "0"


def test_the_action_script_without_an_adapter_is_a_usage_error(tmp_path: Path) -> None:
    out, _, _ = run_action(tmp_path, AKC_ADAPTER="")
    assert out.returncode == 2 and "AKC_ADAPTER" in out.stderr


def test_action_yml_runs_the_script_with_its_inputs() -> None:
    text = (ROOT / "action.yml").read_text()
    for name in ("adapter:", "profile:", "expect:", "using: composite", "scripts/akc-action.sh",
                 "AKC_ADAPTER: ${{ inputs.adapter }}", "AKC_PROFILE: ${{ inputs.profile }}", "AKC_EXPECT: ${{ inputs.expect }}",
                 "actions/upload-artifact"):
        assert name in text, name


def test_args_accept_spaces_one_per_line_or_shell_quoted(tmp_path: Path) -> None:
    """``args`` is parsed, never split on spaces nor evaluated: a path with a space reaches akc whole."""
    for args in ('--smoke\n--markdown\nmy summary.md', '--smoke --markdown "my summary.md"'):
        target = tmp_path / "my summary.md"
        target.unlink(missing_ok=True)
        out, _, _ = run_action(tmp_path, AKC_ADAPTER="tests.fakes.fake_kernel:factory", AKC_ARGS=args)
        assert out.returncode == 0, out.stdout + out.stderr
        assert target.is_file(), args
    hostile, _, _ = run_action(tmp_path, AKC_ADAPTER="tests.fakes.fake_kernel:factory", AKC_ARGS="--smoke $(touch pwned)")
    assert not (tmp_path / "pwned").exists() and hostile.returncode == 2  # an argument, never a command
    bad, _, _ = run_action(tmp_path, AKC_ADAPTER="tests.fakes.fake_kernel:factory", AKC_ARGS='--smoke "unclosed')
    assert bad.returncode == 2 and "cannot parse AKC_ARGS" in bad.stderr


def test_the_default_artifact_name_is_unique_per_matrix_cell() -> None:
    def name(**env: str) -> str:
        out = subprocess.run(["bash", str(SCRIPT), "--artifact-name"], capture_output=True, text=True,
                             env={"PATH": os.environ["PATH"], "GITHUB_JOB": "conformance", **env}, check=True)
        return out.stdout.strip()

    cells = [
        name(AKC_ADAPTER="my_kernel.akc:factory", AKC_PROFILE="kernel", AKC_SUITE_REF="v0.1.0"),
        name(AKC_ADAPTER="my_kernel.akc:factory", AKC_PROFILE="commonagent", AKC_SUITE_REF="v0.1.0"),
        name(AKC_ADAPTER="stdio:./target/release/my-kernel-akc", AKC_PROFILE="kernel", AKC_SUITE_REF="v0.1.0"),
        name(AKC_ADAPTER="my_kernel.akc:factory", AKC_PROFILE="kernel", AKC_SUITE_REF="v0.2.0"),
    ]
    assert len(set(cells)) == len(cells)
    for cell in cells:  # upload-artifact@v4 rejects these characters
        assert not set(cell) & set('":<>|*?\\/\r\n'), cell
    assert "steps.artifact.outputs.name" in (ROOT / "action.yml").read_text()
