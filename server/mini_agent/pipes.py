"""Writing protocol messages to the real stdout, shared by both doors (and free of pygls, so the ACP
door starts without loading it)."""

from __future__ import annotations

import asyncio
import contextlib
import logging
import threading
from typing import BinaryIO

log = logging.getLogger(__name__)


class SafeWriter:
    """pygls' writer, for a client that may already be gone, writing frames in batches.

    Editors often exit right after `shutdown` (Neovim 0.11 does); answering it then meets a closed
    pipe. That is the normal end of a session, so later writes are dropped instead of raising.

    A step sends several notifications from one turn of the event loop; each write to the pipe wakes
    the client, and on a busy machine those writes were the largest cost of a step. Frames written
    on the loop are therefore held until the loop's next turn and go out in one write, in order;
    frames written off the loop (and `flush`, `close`) go out at once.
    """

    def __init__(self, stream: BinaryIO, *, newline: bool) -> None:
        self._stream = stream
        self._end = b"\n" if newline else b""
        self._held: list[bytes] = []
        self._lock = threading.Lock()
        self.gone = False

    def close(self) -> None:
        self.flush()
        if not self.gone:
            with contextlib.suppress(OSError):
                self._stream.close()
        self.gone = True

    def write(self, data: bytes) -> None:
        if self.gone:
            return
        with self._lock:
            self._held.append(data + self._end)
            first = len(self._held) == 1
        try:
            loop = asyncio.get_running_loop()
        except RuntimeError:
            self.flush()
            return
        if first:
            loop.call_soon(self.flush)

    def flush(self) -> None:
        with self._lock:
            held, self._held = self._held, []
            if not held or self.gone:
                return
            try:
                self._stream.write(b"".join(held))
                self._stream.flush()
            except (BrokenPipeError, ValueError):  # ValueError: already closed
                log.debug("the client closed its end; dropping further output")
                self.gone = True
