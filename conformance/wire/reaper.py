"""Every descendant of a stdio kernel ends with it, those that left its process group too.

Killing the kernel's process group is not enough: a child that calls ``setsid()`` (a daemon, a
double fork) leaves the group, and outlives ``akc``. Each kernel process gets a tag in its
environment (``AKC_KERNEL_TAG``), which its descendants inherit wherever they move; ending a
kernel ends its group, every process still below it in the process tree, and every process that
carries its tag (Linux: read from ``/proc``; elsewhere the group alone). A descendant that both
clears its environment and leaves the tree (its parent gone) is the one that can escape.
"""

from __future__ import annotations

import os
import signal
import uuid

TAG_VAR = "AKC_KERNEL_TAG"
_PROC = "/proc"


def new_tag() -> str:
    return uuid.uuid4().hex


def _processes() -> dict[int, tuple[int, bytes]]:
    """pid → (parent pid, environment) of every process we may read (Linux); {} elsewhere."""
    out: dict[int, tuple[int, bytes]] = {}
    try:
        names = os.listdir(_PROC)
    except OSError:
        return out
    for name in names:
        if not name.isdigit():
            continue
        try:
            with open(f"{_PROC}/{name}/stat", "rb") as fh:
                stat = fh.read()
            ppid = int(stat[stat.rindex(b")") + 2 :].split()[1])
            with open(f"{_PROC}/{name}/environ", "rb") as fh:
                environ = fh.read()
        except (OSError, ValueError):
            continue
        out[int(name)] = (ppid, environ)
    return out


def descendants(pid: int, tag: str | None) -> set[int]:
    """The processes below ``pid`` in the tree, and those carrying ``tag`` (never this process)."""
    procs = _processes()
    marker = f"{TAG_VAR}={tag}\0".encode() if tag else None
    found = {p for p, (_, env) in procs.items() if marker is not None and marker in env + b"\0"}
    children: dict[int, list[int]] = {}
    for p, (ppid, _) in procs.items():
        children.setdefault(ppid, []).append(p)
    todo = [pid]
    while todo:
        for child in children.get(todo.pop(), []):
            if child not in found:
                found.add(child)
                todo.append(child)
    found.discard(os.getpid())
    found.discard(pid)
    return found


def end_all(pid: int, tag: str | None) -> None:
    """SIGKILL the kernel ``pid``'s process group, the kernel, and every descendant (tree and tag)."""
    below = descendants(pid, tag)
    for target in (pid, *below):
        try:
            os.killpg(target, signal.SIGKILL) if target == pid else os.kill(target, signal.SIGKILL)
        except (OSError, AttributeError):
            try:
                os.kill(target, signal.SIGKILL)
            except OSError:
                pass
