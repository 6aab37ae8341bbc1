"""Files written whole or not at all: a temp file in the same folder, then a rename. Every file
akc writes (reports, expectations, traces, goldens) goes through here, so a reader never sees half
of one and an existing file keeps its permissions."""

from __future__ import annotations

import os
import tempfile
from pathlib import Path


def _mode_for(target: Path) -> int:
    """An existing file keeps its mode; a new one gets what ``open`` would give (0666 less the umask)."""
    try:
        return target.stat().st_mode & 0o7777
    except OSError:
        mask = os.umask(0)
        os.umask(mask)
        return 0o666 & ~mask


def write_atomic(path: str | os.PathLike[str], text: str) -> Path:
    """Write ``text`` to ``path`` via a temp file in the same folder and a rename (a symlinked
    path is written through, to the file it points to)."""
    target = Path(os.path.realpath(path))
    target.parent.mkdir(parents=True, exist_ok=True)
    mode = _mode_for(target)
    fd, tmp = tempfile.mkstemp(prefix=f".{target.name}.", suffix=".tmp", dir=target.parent)
    try:
        os.fchmod(fd, mode)
        with os.fdopen(fd, "w", encoding="utf-8") as fh:
            fh.write(text)
        os.replace(tmp, target)
    except BaseException:
        try:
            os.unlink(tmp)
        except OSError:
            pass
        raise
    return target
