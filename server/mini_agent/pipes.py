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

    Each write to the pipe wakes the client, and on a busy machine those wake-ups were the largest
    cost of a step. So frames written on the loop are held and go out together, in order: a response
    at the loop's next turn; a notification (`linger=True`) within `LINGER_SEC`, or with the next
    response, whichever comes first — a step's updates then share one write. Frames written off the
    loop (and `flush`, `close`) go out at once.
    """

    LINGER_SEC = 0.002  # a notification's longest wait for company: far below what a person notices

    def __init__(self, stream: BinaryIO, *, newline: bool) -> None:
        self._stream = stream
        self._end = b"\n" if newline else b""
        self._held: list[bytes] = []
        self._lock = threading.Lock()
        self._soon = False  # a flush at the loop's next turn is scheduled
        self._timer: asyncio.TimerHandle | None = None
        self.gone = False

    def close(self) -> None:
        self.flush()
        if not self.gone:
            with contextlib.suppress(OSError):
                self._stream.close()
        self.gone = True

    def write(self, data: bytes, *, linger: bool = False) -> None:
        if self.gone:
            return
        with self._lock:
            self._held.append(data + self._end)
        try:
            loop = asyncio.get_running_loop()
        except RuntimeError:
            self.flush()
            return
        if not linger and not self._soon:
            self._soon = True
            loop.call_soon(self.flush)
        elif linger and not self._soon and self._timer is None:
            self._timer = loop.call_later(self.LINGER_SEC, self.flush)

    def flush(self) -> None:
        with self._lock:
            if self._timer is not None:
                self._timer.cancel()
                self._timer = None
            self._soon = False
            held, self._held = self._held, []
            if not held or self.gone:
                return
            try:
                self._stream.write(b"".join(held))
                self._stream.flush()
            except (BrokenPipeError, ValueError):  # ValueError: already closed
                log.debug("the client closed its end; dropping further output")
                self.gone = True
