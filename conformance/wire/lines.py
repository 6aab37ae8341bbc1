"""Complete lines from the kernel's stdout, a pipe the harness owns (as it owns the write end of
the kernel's stdin).

On asyncio the pipe is read by a protocol: the loop calls it with what it read, lines are cut
there, and ``take`` hands over a line already read without a trip through the event loop (the
process's stream, a buffered stream over it and a wait per read cost more than the line's own
handling). A ``deliver`` callback may take a line as soon as it is read, or decode it for
``take`` (see :meth:`LineReader.set_deliver`). Elsewhere (trio) the pipe is read with
``wait_readable``.
"""

from __future__ import annotations

import asyncio
import os
from collections import deque
from collections.abc import Callable
from typing import Any

import anyio
import sniffio


class LineTooLong(Exception):
    """More than the reader's ``max_line`` bytes with no newline."""


class LineReader:
    """Lines (without their newline) from the read end ``fd`` of a pipe; closes ``fd``."""

    def __init__(self, fd: int, max_line: int) -> None:
        self.fd: int | None = fd
        self.max_line = max_line
        self._lines: deque[Any] = deque()
        self._partial = bytearray()
        self._eof = False
        self._waiter: Any = None
        self._deliver: Callable[[bytes], Any] | None = None
        self._transport: Any = None
        self._loop: Any = None
        self._asyncio = False
        self._too_long = False

    async def start(self) -> None:
        """Attach to the running event loop."""
        fd = self.fd
        assert fd is not None
        os.set_blocking(fd, False)
        if sniffio.current_async_library() == "asyncio":
            loop = self._loop = asyncio.get_running_loop()
            pipe = os.fdopen(fd, "rb", buffering=0)  # the transport closes it
            self._transport, _ = await loop.connect_read_pipe(lambda: _Protocol(self), pipe)
            self._asyncio = True

    def set_deliver(self, deliver: Callable[[bytes], Any] | None) -> None:
        """``deliver(line)`` is called with each line as it is read, while no earlier line waits
        to be taken: it returns None when it took the line, else what :meth:`take` is to return
        for it (the line, or what it decoded). It must not raise. None: every line waits for
        :meth:`take`. Only on asyncio (elsewhere lines are only taken)."""
        self._deliver = deliver if self._asyncio else None

    def buffered(self) -> int:
        """Bytes read that are not a complete line yet."""
        return len(self._partial)

    def feed(self, data: bytes) -> None:
        if self._too_long:
            return
        self._partial += data
        if b"\n" not in data:
            if len(self._partial) > self.max_line:
                self._too_long = True
                self._lines.append(LineTooLong())
                self._wake()
            return  # a long line arrives in many reads: no copy until it is complete
        *complete, rest = self._partial.split(b"\n")
        self._partial = rest
        lines = self._lines
        deliver = self._deliver
        for line in complete:
            item: Any = bytes(line)
            if not lines and deliver is not None:
                item = deliver(item)
                if item is None:
                    continue
            lines.append(item)
        if lines:
            self._wake()

    def end(self) -> None:
        self._eof = True
        self._wake()

    def _wake(self) -> None:
        waiter = self._waiter
        if waiter is not None and not waiter.done():
            waiter.set_result(None)

    async def take(self) -> Any:
        """The next line (or what ``deliver`` made of it); None at the end of the stream.
        :class:`LineTooLong` past ``max_line``."""
        while True:
            if self._lines:
                line = self._lines.popleft()
                if isinstance(line, LineTooLong):
                    self._lines.appendleft(line)
                    raise line
                return line
            if self._eof:
                return None
            if self._asyncio:
                self._waiter = asyncio.get_running_loop().create_future()
                try:
                    await self._waiter
                finally:
                    self._waiter = None
            else:
                await self._read()

    async def _read(self) -> None:
        fd = self.fd
        if fd is None:
            self.end()
            return
        try:
            await anyio.wait_readable(fd)
        except anyio.ClosedResourceError:
            self.end()
            return
        try:
            data = os.read(fd, 1 << 16)
        except BlockingIOError:
            return
        except OSError:
            data = b""
        if data:
            self.feed(data)
        else:
            self.end()

    def close(self) -> None:
        """Stop reading and close the pipe (any event loop, or none)."""
        fd, self.fd = self.fd, None
        transport, self._transport = self._transport, None
        self._deliver = None
        if transport is not None:
            loop = self._loop
            try:
                here = asyncio.get_running_loop() is loop
            except RuntimeError:
                here = False
            try:
                if here:
                    transport.close()
                else:  # from another thread (an abandoned connection): the loop's own thread closes it
                    loop.call_soon_threadsafe(transport.close)
                return
            except RuntimeError:  # its loop is closed: close the pipe itself
                pipe = transport.get_extra_info("pipe")
                if pipe is not None:
                    try:
                        pipe.close()
                    except OSError:
                        pass
                return
        if fd is not None:
            close_fd(fd)


def close_fd(fd: int) -> None:
    """Close a pipe end a task may be waiting on: that task wakes first (``anyio.notify_closing``)
    instead of waiting on a closed descriptor."""
    try:
        anyio.notify_closing(fd)
    except Exception:  # noqa: BLE001 - not in the event loop: no task of it can be waiting
        pass
    try:
        os.close(fd)
    except OSError:
        pass


class _Protocol(asyncio.Protocol):
    """asyncio's read-pipe protocol, feeding a LineReader."""

    def __init__(self, reader: LineReader) -> None:
        self.reader = reader

    def data_received(self, data: bytes) -> None:
        self.reader.feed(data)

    def eof_received(self) -> bool:
        self.reader.end()
        return False

    def connection_lost(self, exc: Exception | None) -> None:
        self.reader.end()
