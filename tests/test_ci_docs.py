"""docs/ci.md's commands run as written (issue 26 §3): its install command in a fresh virtual
environment — the git URL at a tag pointed at this checkout's committed HEAD, as a user's CI
would fetch the tag — then its record / gate / golden commands with the guide's adapter replaced by
the reference kernel's (and ``--smoke``, to keep it short).

Marked ``install`` (a fresh environment installs akc's dependencies: ~30 s): deselected by
``python -m pytest``, run by ``.ci/run`` with the whole-suite tier.
"""

from __future__ import annotations

import os
import re
import shlex
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
GUIDE = ROOT / "docs" / "ci.md"
#: The guide's placeholder source and adapter, and what the test puts in their place.
URL = "git+https://github.com/<owner>/agent-kernel-conformance@v0.1.0"
ADAPTER = "my_kernel.akc:factory"


def shell_lines(text: str) -> list[str]:
    """The commands of the guide's ``sh`` blocks, continuation lines joined."""
    out: list[str] = []
    for block in re.findall(r"```sh\n(.*?)```", text, flags=re.S):
        for line in block.replace("\\\n", " ").splitlines():
            command = line.split("  #")[0].strip()
            if command:
                out.append(command)
    return out


def test_no_install_of_an_unpublished_package() -> None:
    """akc is not on the package index: every install in the guide names a source that exists."""
    text = GUIDE.read_text(encoding="utf-8")
    assert "agent-kernel-conformance==" not in text
    installs = [ln for ln in text.splitlines() if "pip install" in ln and "agent-kernel-conformance" in ln]
    assert installs and all("git+https://" in ln for ln in installs), installs


@pytest.mark.install
def test_the_guides_commands_run_as_written(tmp_path: Path) -> None:
    head = subprocess.run(["git", "-C", str(ROOT), "rev-parse", "HEAD"], capture_output=True, text=True, check=True).stdout.strip()
    lines = shell_lines(GUIDE.read_text(encoding="utf-8"))
    install = next(ln for ln in lines if ln.startswith("pip install") and URL in ln)
    record = next(ln for ln in lines if ln.startswith("akc run") and "--write-expectations" in ln)
    gate = next(ln for ln in lines if ln.startswith("akc run") and "--expect " in ln and "--junit" in ln)
    goldens = [ln for ln in lines if ln.startswith("akc run") and "--golden" in ln]
    assert len(goldens) == 2

    venv = tmp_path / "venv"
    subprocess.run([sys.executable, "-m", "venv", str(venv)], check=True)
    env = {**os.environ, "PATH": f"{venv / 'bin'}{os.pathsep}{os.environ['PATH']}", "VIRTUAL_ENV": str(venv)}
    env.pop("PYTHONPATH", None)
    env["PIP_DISABLE_PIP_VERSION_CHECK"] = "1"

    def sh(command: str, *, code: int = 0) -> subprocess.CompletedProcess[str]:
        ran = subprocess.run(["bash", "-c", command], cwd=tmp_path, env=env, capture_output=True, text=True, timeout=600)
        assert ran.returncode == code, f"{command}\n{ran.stdout[-3000:]}\n{ran.stderr[-3000:]}"
        return ran

    sh("python -m pip install -q -U pip")  # as the guide says: Python 3.11's bundled pip 23.2 rejects a git URL with a ref
    sh(install.replace(URL, f"git+file://{ROOT}@{head}").replace("pip install", "python -m pip install -q", 1))
    assert (venv / "bin" / "akc").exists()
    smoke = f"{shlex.quote('reference_kernel.adapter:factory')} --smoke"
    sh(record.replace(ADAPTER, smoke))
    assert (tmp_path / "akc-expectations.toml").is_file()
    sh(gate.replace(ADAPTER, smoke).replace('"$GITHUB_STEP_SUMMARY"', "summary.md"))
    assert (tmp_path / "akc-junit.xml").is_file() and (tmp_path / "summary.md").is_file()
    sh(goldens[0].split("  #")[0].replace(ADAPTER, smoke))
    assert list((tmp_path / "akc-golden").glob("*.json"))
    sh(goldens[1].split("  #")[0].replace(ADAPTER, smoke))
