"""Where the data folders are: inside the wheel (conformance/_data/...) or, in a checkout or an
editable install, at the top of the repository."""

from __future__ import annotations

from pathlib import Path

_PACKAGE = Path(__file__).resolve().parent


def data_dir(name: str) -> Path:
    """Path of the ``features``, ``schemas`` or ``fixtures`` folder, wherever the package runs."""
    for candidate in (_PACKAGE / "_data" / name, _PACKAGE.parent / name):
        if candidate.is_dir():
            return candidate
    raise FileNotFoundError(f"data folder {name!r} not found next to {_PACKAGE}")


def features_dir() -> Path:
    return data_dir("features")


def schemas_dir() -> Path:
    return data_dir("schemas")


def fixtures_dir() -> Path:
    return data_dir("fixtures")
