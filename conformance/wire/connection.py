"""One kernel process speaking the stdio wire protocol: start, line I/O, validation, death.

The kernel starts in a session (and process group) of its own: killing it kills the whole group,
so no grandchild outlives it, and a watcher task notices the kernel's own exit (not only EOF on
stdout, which a grandchild holding the pipe would delay forever) and then kills the group.

A process is bound to the event loop that started it. A keeper task of that loop kills it when
the loop shuts down (so no transport outlives its loop), and an ``atexit`` hook kills whatever is
left when the harness exits. Stderr goes to a temporary file, read back for the tail shown when
the process dies.
"""

from __future__ import annotations

import atexit
import json
import os
import shlex
import signal
import tempfile
import time
from collections.abc import Callable
from typing import Any

import anyio
import anyio.abc
import sniffio

import conformance
from conformance.boundary.adapter import AdapterInfo
from conformance.errors import UsageError
from conformance.wire import codec, reaper, validate
from conformance.wire.lines import LineReader, LineTooLong, close_fd
from conformance.wire.messages import PROTOCOL_VERSION

#: Seconds a kernel process gets to answer ``start`` (it may have a runtime to boot).
START_TIMEOUT_S = float(os.environ.get("AKC_STDIO_START_TIMEOUT", "20"))
#: Longest line accepted from the kernel (a RunResult with a big journal is one line).
MAX_LINE = 64 * 1024 * 1024
STDERR_TAIL_LINES = 15
#: Bytes of writes to the kernel's stdin waiting at once (callbacks answered, the answers not
#: taken) past which the kernel is taken to have stopped reading: the run ends there, so the
#: harness's memory stays bounded.
MAX_UNSENT_BYTES = 8 << 20
GARBAGE_PREVIEW = 200

#: ``AKC_WIRE_LOG=path``: append every line, both ways, to this file (``→`` harness to kernel,
#: ``←`` kernel to harness) — for adapter authors debugging their side.
_WIRE_LOG = os.environ.get("AKC_WIRE_LOG")

_LIVE_PIDS: set[int] = set()
#: Each kernel process's tag (conformance.wire.reaper), by pid.
_TAGS: dict[int, str] = {}
_KEEPERS: set[Any] = set()


class WireError(Exception):
    """The kernel process broke the protocol or died: the scenario's verdict is ``error``."""


class AdapterErrored(Exception):
    """The adapter program answered ``run`` with ``errored``: verdict ``error``."""


def kill_group(pid: int) -> None:
    """SIGKILL the kernel's process group (it leads its own session), the process, and every
    descendant, those that called ``setsid()`` included (:mod:`conformance.wire.reaper`)."""
    reaper.end_all(pid, _TAGS.pop(pid, None))


def _kill_leftovers() -> None:
    """At interpreter exit: no kernel process (nor its descendants) outlives the harness."""
    for pid in list(_LIVE_PIDS):
        kill_group(pid)


atexit.register(_kill_leftovers)


def _log_lines(arrow: str, data: bytes) -> None:
    with open(_WIRE_LOG, "a", encoding="utf-8") as fh:  # type: ignore[arg-type]
        for line in data.decode("utf-8", "replace").splitlines():
            fh.write(f"{arrow} {line}\n")


def loop_token() -> Any:
    """Identifies the running event loop (a process object is bound to the loop that made it)."""
    return anyio.lowlevel.current_token()


class Connection:
    """One running kernel process and its stdin/stdout streams."""

    def __init__(self, command: list[str], validating: bool) -> None:
        self.command = command
        self.validating = validating
        self.process: anyio.abc.Process | None = None
        #: The kernel's stdout: a pipe of ours, read line by line.
        self.stdout: LineReader | None = None
        self.stderr_file: Any = None
        self.token: Any = None
        self.lines_read = 0
        self._next_id = 0
        self._write_lock = anyio.Lock()
        #: POSIX: the write end of the kernel's stdin, ours and non-blocking (see send_many), the
        #: bytes the pipe has not taken yet, and the counts of bytes queued and written so far.
        self._stdin_fd: int | None = None
        self._backlog = bytearray()
        self._queued = 0
        self._written = 0
        #: Writes to stdin not finished yet (and their bytes), and when stdin last took one.
        self.unsent = 0
        self.unsent_bytes = 0
        self._stdin_moved = time.monotonic()
        #: ids of our own pending requests → method (to validate their responses).
        self._ours: dict[int, str] = {}
        self._released = anyio.Event()
        #: Our answered ``run`` requests (id → seq), the seqs whose run has ended, and messages
        #: that arrived for an ended run (seq, what): reported against that run, never the next.
        self.answered: dict[int, int] = {}
        self.finished: set[int] = set()
        self._strays: list[tuple[int, str]] = []

    def stray(self, seq: int, what: str) -> None:
        self._strays.append((seq, what))

    def take_strays(self) -> list[tuple[int, str]]:
        out, self._strays = self._strays, []
        return out

    # ----------------------------------------------------------------- process

    async def open(self) -> None:
        self.stderr_file = tempfile.TemporaryFile(prefix="akc-kernel-stderr-")
        tag = reaper.new_tag()
        env = dict(os.environ, AKC_PROTOCOL=str(PROTOCOL_VERSION), **{reaper.TAG_VAR: tag})
        stdin: int = -1
        stdout_r, stdout = os.pipe()
        if os.name == "posix":
            stdin, self._stdin_fd = os.pipe()
            os.set_blocking(self._stdin_fd, False)
        try:
            self.process = await anyio.open_process(
                self.command, stdin=stdin, stdout=stdout, stderr=self.stderr_file, env=env, start_new_session=os.name == "posix"
            )
        except (FileNotFoundError, PermissionError) as exc:
            os.close(stdout_r)
            self._close_stderr()
            self._close_stdin()
            raise UsageError(f"adapter 'stdio:{shlex.join(self.command)}': cannot start {self.command[0]!r} ({exc.strerror})") from None
        except BaseException:
            os.close(stdout_r)
            self._close_stdin()
            raise
        finally:
            os.close(stdout)  # the kernel's ends
            if stdin != -1:
                os.close(stdin)
        self.token = loop_token()
        _LIVE_PIDS.add(self.process.pid)
        _TAGS[self.process.pid] = tag
        self.stdout = LineReader(stdout_r, MAX_LINE)
        self._spawn_keeper()
        await self.stdout.start()

    def _spawn_keeper(self) -> None:
        """A background task of the event loop itself that kills the process when the loop shuts
        down (asyncio cancels leftover tasks, trio its system tasks): the process then never
        outlives its loop, which would leave a transport to be closed on a closed loop."""
        lib = sniffio.current_async_library()
        if lib == "asyncio":
            import asyncio

            for job in (self._keep(), self._watch_exit()):
                task = asyncio.get_running_loop().create_task(job)
                _KEEPERS.add(task)  # asyncio holds tasks weakly: a collected keeper would run its
                task.add_done_callback(_KEEPERS.discard)  # finally inside whatever task runs the GC
        elif lib == "trio":
            import trio

            trio.lowlevel.spawn_system_task(self._keep)
            trio.lowlevel.spawn_system_task(self._watch_exit)

    async def _watch_exit(self) -> None:
        """When the kernel process itself exits, kill its group: a grandchild still holding its
        stdout would otherwise keep the EOF (and so the kernel's death) from ever being seen."""
        proc = self.process
        if proc is None:
            return
        try:
            await proc.wait()
        except BaseException:  # noqa: BLE001 - the loop is shutting down: the keeper cleans up
            return
        kill_group(proc.pid)

    async def _keep(self) -> None:
        try:
            await self._released.wait()
        finally:
            with anyio.CancelScope(shield=True):
                try:
                    await self.close_gently()
                except Exception:  # noqa: BLE001 - best effort at loop shutdown
                    pass

    def stderr_tail(self) -> str:
        f = self.stderr_file
        if f is None:
            return ""
        try:
            f.flush()
            size = f.seek(0, os.SEEK_END)
            f.seek(max(0, size - 8192))
            text = f.read().decode("utf-8", "replace")
        except (OSError, ValueError):
            return ""
        lines = [ln for ln in text.splitlines() if ln.strip()]
        return "\n".join(lines[-STDERR_TAIL_LINES:])

    def alive(self) -> bool:
        return self.process is not None and self.process.returncode is None

    async def close_gently(self) -> None:
        """End of the suite: close stdin (the kernel exits on EOF), give it a second, then kill."""
        proc = self.process
        if proc is not None and proc.returncode is None and (proc.stdin is not None or self._stdin_fd is not None):
            self._close_stdin()
            if proc.stdin is not None:
                try:
                    await proc.stdin.aclose()
                except Exception:  # noqa: BLE001 - it may be gone already
                    pass
            with anyio.move_on_after(1):
                await proc.wait()
        await self.kill()

    async def kill(self) -> None:
        """Kill the process and release everything (call shielded)."""
        self._released.set()
        proc, self.process = self.process, None
        if proc is not None:
            _LIVE_PIDS.discard(proc.pid)
            kill_group(proc.pid)
            with anyio.move_on_after(2):
                await proc.wait()
            with anyio.move_on_after(1):
                await proc.aclose()
        self._close_stdin()
        self._close_stdout()
        self._close_stderr()

    def abandon(self) -> None:
        """The process belongs to another (finished) event loop: kill it by pid."""
        proc, self.process = self.process, None
        if proc is not None:
            _LIVE_PIDS.discard(proc.pid)
            kill_group(proc.pid)
        self._close_stdin()
        self._close_stdout()
        self._close_stderr()

    def _close_stdin(self) -> None:
        fd, self._stdin_fd = self._stdin_fd, None
        if fd is not None:
            close_fd(fd)  # a task waiting for the pipe to take more wakes up (WireError)

    def _close_stdout(self) -> None:
        if self.stdout is not None:
            self.stdout.close()

    def _close_stderr(self) -> None:
        if self.stderr_file is not None:
            try:
                self.stderr_file.close()
            except OSError:
                pass
            self.stderr_file = None

    async def died(self, during: str) -> WireError:
        """The error for a process that closed its stdout (it exited or crashed)."""
        code = None
        if self.process is not None:
            with anyio.move_on_after(1):
                code = await self.process.wait()
        tail = self.stderr_tail()
        how = f"exited with code {code}" if code is not None else "closed its stdout"
        if code is not None and code < 0:
            try:
                how = f"was killed by {signal.Signals(-code).name}"
            except ValueError:
                pass
        return WireError(
            f"the kernel process {how} during {during}"
            + (f"; its stderr ends with:\n{tail}" if tail else " (its stderr is empty)")
        )

    # ----------------------------------------------------------------- messages

    def new_id(self, method: str) -> int:
        self._next_id += 1
        self._ours[self._next_id] = method
        return self._next_id

    async def send(self, msg: dict[str, Any], answers: str | None = None) -> None:
        await self.send_many([msg], answers)

    async def send_many(self, msgs: list[dict[str, Any]], answers: str | None = None) -> None:
        """Write messages in order, in one write (``answers``: the method the last one answers)."""
        if self.validating:
            for i, msg in enumerate(msgs):
                try:
                    validate.check_message(msg, "harness→kernel", answers if i == len(msgs) - 1 else None)
                except validate.ProtocolViolation as exc:
                    raise WireError(f"protocol violation: {exc}") from None
        data = b"".join(map(codec.dumps_line, msgs))
        if _WIRE_LOG:
            _log_lines("→", data)
        proc = self.process
        if proc is None or (proc.stdin is None and self._stdin_fd is None):
            raise WireError("the kernel process is gone")
        fd = self._stdin_fd
        if fd is not None and not self._backlog:
            # The common case: the pipe takes it all at once, in one system call and no trip
            # through the event loop (an answer per callback: that trip was most of its cost).
            try:
                n = os.write(fd, data)
            except BlockingIOError:
                n = 0
            except OSError:
                raise await self.died("a write to its stdin") from None
            self._queued += n
            self._written += n
            if n == len(data):
                self._stdin_moved = time.monotonic()
                return
            data = data[n:]
        if self.unsent_bytes + len(data) > MAX_UNSENT_BYTES:
            raise WireError(self.stdin_stalled(0.0) or "the kernel stopped reading its stdin")
        if self.unsent == 0:
            self._stdin_moved = time.monotonic()
        self.unsent += 1
        self.unsent_bytes += len(data)
        try:
            if fd is not None:
                self._backlog += data
                self._queued += len(data)
                await self._drain(self._queued)
            else:
                async with self._write_lock:
                    try:
                        await proc.stdin.send(data)  # type: ignore[union-attr]
                    except (anyio.BrokenResourceError, anyio.ClosedResourceError, OSError):
                        raise await self.died("a write to its stdin") from None
            self._stdin_moved = time.monotonic()
        finally:
            self.unsent -= 1
            self.unsent_bytes -= len(data)

    async def _drain(self, upto: int) -> None:
        """Write the backlog until byte ``upto`` (counted from the first sent) is out: one task
        at a time waits for the pipe to take more, and writes everyone's bytes, in order."""
        async with self._write_lock:
            while self._written < upto:
                fd = self._stdin_fd
                if fd is None:
                    raise WireError("the kernel process is gone")
                try:
                    n = os.write(fd, self._backlog)
                except BlockingIOError:
                    try:
                        await anyio.wait_writable(fd)
                    except anyio.ClosedResourceError:
                        raise WireError("the kernel process is gone") from None
                    continue
                except OSError:
                    raise await self.died("a write to its stdin") from None
                del self._backlog[:n]
                self._written += n
                self._stdin_moved = time.monotonic()

    def stdin_stalled(self, after_s: float = 0.5) -> str | None:
        """Says so when writes to the kernel's stdin have waited over ``after_s`` (for a hang
        diagnostic, and the error past :data:`MAX_UNSENT_BYTES`)."""
        stuck = time.monotonic() - self._stdin_moved
        if not self.unsent or stuck < after_s:
            return None
        return (
            f"the kernel has not read its stdin for {stuck:.1f} s; "
            f"{self.unsent} message{'s' if self.unsent != 1 else ''} to it ({self.unsent_bytes} bytes, callback answers) unsent"
        )

    async def receive(self, during: str) -> dict[str, Any]:
        """The next message from the kernel's stdout; WireError on EOF or a line that is not
        a JSON-RPC message."""
        assert self.stdout is not None
        try:
            item = await self.stdout.take()
        except LineTooLong:
            raise WireError(f"the kernel wrote a line longer than {MAX_LINE} bytes on stdout (line {self.lines_read + 1})") from None
        if item is None:
            raise await self.died(during)
        if type(item) is bytes:
            return self.decode(item)
        return item  # decoded as it was read (see take_lines)

    def take_lines(self, handler: Callable[[dict[str, Any]], bool] | None) -> None:
        """``handler(msg)`` sees each message as soon as its line is read, while no earlier one
        waits for :meth:`receive` (asyncio, not validating: elsewhere it sees none); True: it
        took the message, which :meth:`receive` will not return. It must not raise. None:
        every message waits for :meth:`receive`."""
        reader = self.stdout
        if reader is None:
            return
        if handler is None or self.validating:
            reader.set_deliver(None)
            return

        def deliver(raw: bytes) -> Any:
            read = self.lines_read
            try:
                msg = self.decode(raw)
            except WireError:
                self.lines_read = read  # receive decodes it again, and raises
                return raw
            return None if handler(msg) else msg

        reader.set_deliver(deliver)

    def decode(self, raw: bytes) -> dict[str, Any]:
        """One line from the kernel → its message; WireError if it is not a JSON-RPC message."""
        self.lines_read += 1
        msg = codec.fast_loads(raw)
        if msg is codec.UNREAD:
            msg = self._slow_loads(raw)
        elif _WIRE_LOG:
            _log_lines("←", raw + b"\n")
        if not isinstance(msg, dict) or msg.get("jsonrpc") != "2.0":
            text = raw.decode("utf-8").rstrip("\r")
            preview = text if len(text) <= GARBAGE_PREVIEW else text[:GARBAGE_PREVIEW] + "…"
            raise WireError(
                f"the kernel wrote a line on stdout that is not a JSON-RPC 2.0 message "
                f"(line {self.lines_read}): {preview!r}; logs belong on stderr"
            )
        if self.validating:
            answers = None if "method" in msg else self._ours.get(msg.get("id"))  # type: ignore[arg-type]
            try:
                validate.check_message(msg, "kernel→harness", answers)
            except validate.ProtocolViolation as exc:
                raise WireError(f"protocol violation (line {self.lines_read}): {exc}") from None
        return msg

    def _slow_loads(self, raw: bytes) -> Any:
        """A line :func:`codec.fast_loads` declined, read by the standard library: its value,
        None if it is not JSON, WireError if it is not UTF-8 or nested too deeply."""
        try:
            text = raw.decode("utf-8").rstrip("\r")
        except UnicodeDecodeError as exc:
            bad = raw[exc.start : exc.start + 4]
            raise WireError(
                f"protocol error: line {self.lines_read} of the kernel's stdout is not valid UTF-8 "
                f"(byte {bad[:1].hex()} at offset {exc.start}: {exc.reason}); JSON text must be UTF-8"
            ) from None
        if _WIRE_LOG:
            _log_lines("←", raw + b"\n")
        try:
            return json.loads(text)
        except ValueError:
            return None
        except RecursionError:
            raise WireError(f"the kernel's message on line {self.lines_read} is nested too deeply to read ({len(raw)} bytes)") from None

    def pending(self) -> str | None:
        """What the kernel wrote on stdout without a newline yet (for a hang diagnostic)."""
        stream = self.stdout
        size = stream.buffered() if stream is not None else 0
        if not size:
            return None
        return f"{size} bytes on the kernel's stdout with no newline yet (line {self.lines_read + 1} is unfinished)"

    async def request(self, method: str, params: dict[str, Any], during: str) -> dict[str, Any]:
        """Send a request and return its response; only for use outside a run (no callbacks)."""
        rid = self.new_id(method)
        await self.send({"jsonrpc": "2.0", "id": rid, "method": method, "params": params})
        while True:
            msg = await self.receive(during)
            if "method" in msg and isinstance(msg.get("method"), str) and msg["method"].startswith("$/") and "id" not in msg:
                continue
            params = msg.get("params") if "method" in msg else None
            seq = params.get("seq") if isinstance(params, dict) else None
            if "method" in msg and type(seq) is int and seq in self.finished:
                self.stray(seq, f"the kernel sent {msg.get('method')!r} (line {self.lines_read}) after it had answered this scenario's run")
                continue
            if "method" in msg:
                raise WireError(f"the kernel sent {msg['method']!r} while answering {method!r} (line {self.lines_read})")
            if msg.get("id") == rid:
                self._ours.pop(rid, None)
                return msg
            old = self.answered.get(msg.get("id")) if isinstance(msg.get("id"), int) else None
            if old is not None:
                self.stray(old, f"the kernel answered its run request (id {msg.get('id')}) a second time (line {self.lines_read})")
                continue
            raise WireError(f"the kernel answered request id {msg.get('id')!r}, expected {rid} (line {self.lines_read})")

    async def handshake(self) -> AdapterInfo:
        """``start``: check the protocol version and return the kernel's AdapterInfo."""
        where = f"'stdio:{shlex.join(self.command)}'"
        with anyio.fail_after(START_TIMEOUT_S):
            resp = await self.request(
                "start",
                {"protocol": PROTOCOL_VERSION, "harness": {"name": "akc", "version": conformance.__version__}},
                "the start handshake",
            )
        if "error" in resp:
            err = resp.get("error") or {}
            raise UsageError(
                f"adapter {where}: the kernel refused protocol version {PROTOCOL_VERSION} at start "
                f"({err.get('message', 'no message')}; it supports {json.dumps((err.get('data') or {}).get('supported', '?'))})"
            )
        result = resp.get("result")
        if not isinstance(result, dict):
            raise UsageError(f"adapter {where}: the answer to start has no result object")
        version = result.get("protocol")
        if version != PROTOCOL_VERSION:
            raise UsageError(
                f"adapter {where}: the kernel speaks protocol version {version!r}; this harness speaks version {PROTOCOL_VERSION}"
            )
        try:
            return AdapterInfo.model_validate(result.get("info"))
        except Exception as exc:  # pydantic ValidationError: one line
            first = exc.errors()[0] if hasattr(exc, "errors") else {"loc": (), "msg": str(exc)}
            loc = ".".join(str(p) for p in first.get("loc", ())) or "(root)"
            raise UsageError(f"adapter {where}: the info in start's answer is invalid (info.{loc}: {first.get('msg')})") from None

    async def stop(self) -> None:
        with anyio.move_on_after(3):
            try:
                await self.request("stop", {}, "stop")
            except WireError:
                pass
        if self.process is not None:
            with anyio.move_on_after(3):  # let it exit on its own (it may flush or write a profile)
                await self.process.wait()
        await self.kill()
