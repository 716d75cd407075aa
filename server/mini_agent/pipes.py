"""Writing protocol messages to the real stdout, shared by both doors (and free of pygls, so the ACP
door starts without loading it)."""

from __future__ import annotations

import contextlib
import logging
from typing import BinaryIO

log = logging.getLogger(__name__)


class SafeWriter:
    """pygls' writer, for a client that may already be gone.

    Editors often exit right after `shutdown` (Neovim 0.11 does); answering it then meets a closed
    pipe. That is the normal end of a session, so later writes are dropped instead of raising.
    """

    def __init__(self, stream: BinaryIO, *, newline: bool) -> None:
        self._stream = stream
        self._end = b"\n" if newline else b""
        self.gone = False

    def close(self) -> None:
        if not self.gone:
            with contextlib.suppress(OSError):
                self._stream.close()
        self.gone = True

    def write(self, data: bytes) -> None:
        if self.gone:
            return
        try:
            self._stream.write(data + self._end)
            self._stream.flush()
        except (BrokenPipeError, ValueError):  # ValueError: already closed
            log.debug("the client closed its end; dropping further output")
            self.gone = True
