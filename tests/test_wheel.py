"""The wheel carries the data folders, so an installed copy works from any directory."""

import subprocess
import sys
import zipfile
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent


@pytest.fixture(scope="module")
def wheel(tmp_path_factory: pytest.TempPathFactory) -> zipfile.ZipFile:
    out = tmp_path_factory.mktemp("dist")
    subprocess.run(
        [sys.executable, "-m", "build", "--wheel", "--no-isolation", "--outdir", str(out), str(ROOT)],
        check=True,
        capture_output=True,
    )
    (path,) = out.glob("*.whl")
    return zipfile.ZipFile(path)


def test_wheel_ships_the_data_folders(wheel: zipfile.ZipFile) -> None:
    names = set(wheel.namelist())
    for folder in ("features", "schemas"):
        shipped = {n for n in names if n.startswith(f"conformance/_data/{folder}/")}
        on_disk = {p.name for p in (ROOT / folder).iterdir() if p.is_file()}
        assert {n.rsplit("/", 1)[1] for n in shipped} >= on_disk, folder
    assert "conformance/catalog/catalog.toml" in names


def test_wheel_ships_both_packages_and_the_entry_points(wheel: zipfile.ZipFile) -> None:
    names = wheel.namelist()
    assert any(n.startswith("reference_kernel/") for n in names)
    (entry_points,) = [n for n in names if n.endswith("entry_points.txt")]
    text = wheel.read(entry_points).decode()
    assert "akc = conformance.cli:main" in text
    assert "akc = conformance.harness.plugin" in text
