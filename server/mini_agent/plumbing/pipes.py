"""Writing protocol messages to the real stdout, shared by both doors (and free of pygls, so the ACP
door starts without loading it).

The frame-ordering contract: this module owns it, and `tests/unit/plumbing/test_pipes_order.py` holds
it. For one `SafeWriter`:

* A client reads frames in exactly the order `write` was called: held frames sit in one queue and go
  out front to back in a single write to the stream, under a lock, so frames never interleave or reorder,
  also when threads write.
* Only a frame written with `linger=True` may wait; the doors pass it for notifications alone (the
  LSP door's `agent/update` and `agent/toolsChanged`, every ACP notification). It waits until
  `LINGER_SEC` has passed, or until the next frame without `linger` goes out, whichever comes first,
  and then goes out with that frame and before it: a response never overtakes a notification written
  earlier, and a client that has the answer to a request has every notification written before it.
* Every other frame (responses, errors, requests to the client, and on the LSP door pygls' own
  notifications such as `$/progress` and `window/showMessage`) written on the event loop goes out at
  the loop's next turn, together with whatever was held before it and whatever else is written in
  the same turn.
* A frame written off the event loop, and `flush` and `close`, write out everything held at once.
* Once the client has closed its end, frames are dropped, not raised.
"""

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

    Each write to the pipe wakes the client, so frames written on the loop are held and go out
    together, in the order written (the module docstring states the contract): a step's updates then
    share one write.
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
