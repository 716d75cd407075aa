"""Reply frames off a tool host's pipe, read without asyncio's pipe transport.

Reads with `add_reader` into one buffer: asyncio's pipe transport allocates a 256 KiB buffer per read,
which costs more than the whole rest of a tool call's round trip.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
from typing import Any

from mini_agent.tools import protocol

_READ_CHUNK = 65536


class FrameReader:
    """Reply frames from the host's pipe."""

    def __init__(self, fd: int) -> None:
        self._fd = fd
        self._loop = asyncio.get_running_loop()
        self._buffer = bytearray()
        self._waiter: asyncio.Future[None] | None = None
        self._eof = False
        os.set_blocking(fd, False)
        self._loop.add_reader(fd, self._on_readable)

    async def frame(self, timeout: float) -> dict[str, Any]:
        """The next frame; EOFError once the host has closed its end, TimeoutError past `timeout`.

        A timer on the waiter is cheaper than `asyncio.timeout`, and this is on every call's path.
        """
        deadline = self._loop.time() + timeout
        while (message := self._take()) is None:
            if self._eof:
                raise EOFError
            self._waiter = waiter = self._loop.create_future()
            timer = self._loop.call_at(deadline, _expire, waiter)
            try:
                await waiter
            finally:
                self._waiter = None
                timer.cancel()
        return message

    def hang_up(self) -> None:
        """The host has exited: take what it wrote, then read EOF even if a stray child of it still
        holds the pipe open."""
        if self._fd < 0 or self._eof:
            return
        with contextlib.suppress(OSError):
            while data := os.read(self._fd, _READ_CHUNK):
                self._buffer += data
        self._eof = True
        self._loop.remove_reader(self._fd)
        self._wake()

    def close(self) -> None:
        """Stop reading; a request still waiting sees EOF (the host is being killed)."""
        if self._fd >= 0:
            self._loop.remove_reader(self._fd)
            os.close(self._fd)
            self._fd = -1
        self._eof = True
        self._wake()

    def _wake(self) -> None:
        if self._waiter is not None and not self._waiter.done():
            self._waiter.set_result(None)

    def _on_readable(self) -> None:
        try:
            data = os.read(self._fd, _READ_CHUNK)
        except BlockingIOError:
            return
        except OSError:
            data = b""
        if data:
            self._buffer += data
        else:
            self._eof = True
            self._loop.remove_reader(self._fd)
        self._wake()

    def _take(self) -> dict[str, Any] | None:
        size = protocol.HEADER.size
        if len(self._buffer) < size:
            return None
        end = size + protocol.frame_length(bytes(self._buffer[:size]))
        if len(self._buffer) < end:
            return None
        body = bytes(self._buffer[size:end])
        del self._buffer[:end]
        return protocol.decode(body)


def _expire(waiter: asyncio.Future[None]) -> None:
    if not waiter.done():
        waiter.set_exception(TimeoutError())
