"""The run's output paths, checked before anything runs: a report that cannot be written must
be a one-line usage error (exit 2) at the start, not a traceback after the whole suite ran.

A report path is a file (an existing one is replaced; a symlink is written through); its folder
is created if missing, so the nearest existing ancestor must be a writable folder. ``--traces``
is a folder.
"""

from __future__ import annotations

import os
import tempfile
from pathlib import Path

from conformance.errors import UsageError


def _nearest_existing(path: Path) -> Path:
    while not path.exists() and path != path.parent:
        path = path.parent
    return path


def _check_folder_creatable(flag: str, raw: str, folder: Path) -> None:
    base = _nearest_existing(folder)
    if not base.is_dir():
        raise UsageError(f"{flag} {raw}: cannot create the folder {folder}: {base} is a file, not a folder")
    if not os.access(base, os.W_OK | os.X_OK):
        raise UsageError(f"{flag} {raw}: the folder {base} is not writable")


def check_report_path(flag: str, raw: str) -> None:
    path = Path(os.path.realpath(raw))
    if raw.endswith(("/", os.sep)) or path.is_dir():
        raise UsageError(f"{flag} {raw}: a folder, not a file (give the report's file name, e.g. {Path(raw) / 'report'}…)")
    if path.exists():
        if not os.access(path, os.W_OK) or not os.access(path.parent, os.W_OK | os.X_OK):
            raise UsageError(f"{flag} {raw}: not writable")
    else:
        _check_folder_creatable(flag, raw, path.parent)
    if path.parent.is_dir():
        _probe(flag, raw, path.parent)


def _probe(flag: str, raw: str, folder: Path) -> None:
    """Create and remove a temp file where the report's temp file will go: permissions do not
    tell everything (``/proc``, ``/sys``, a read-only or full file system pass ``os.access``)."""
    try:
        fd, tmp = tempfile.mkstemp(prefix=".akc-probe-", dir=folder)
    except OSError as exc:
        raise UsageError(f"{flag} {raw}: cannot write in {folder} ({exc.strerror or exc})") from None
    os.close(fd)
    os.unlink(tmp)


def check_output_paths(*, json: str | None = None, junit: str | None = None, markdown: str | None = None, traces: str | None = None,
                       expectations: str | None = None) -> None:
    """Raise UsageError (one line naming the flag and the path) for an output that cannot be
    written, or two outputs at one path (each would overwrite the other)."""
    seen: dict[str, str] = {}
    for flag, raw in (("--json", json), ("--junit", junit), ("--markdown", markdown), ("--write-expectations", expectations)):
        if raw:
            check_report_path(flag, str(raw))
            real = os.path.realpath(str(raw))
            if real in seen:
                raise UsageError(f"{flag} {raw}: the same file as {seen[real]} (each would overwrite the other)")
            seen[real] = f"{flag} {raw}"
    if traces:
        path = Path(os.path.realpath(str(traces)))
        if path.exists() and not path.is_dir():
            raise UsageError(f"--traces {traces}: a file, not a folder")
        if path.is_dir():
            if not os.access(path, os.W_OK | os.X_OK):
                raise UsageError(f"--traces {traces}: the folder is not writable")
        else:
            _check_folder_creatable("--traces", str(traces), path)


def remove_stale(raw: str) -> None:
    """Remove an earlier run's report at this path (through a symlink: the file it points to)."""
    path = Path(os.path.realpath(raw))
    try:
        if path.is_file():
            path.unlink()
    except OSError:
        pass
