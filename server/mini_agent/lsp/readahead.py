"""The bytes read from stdin and not yet parsed. Standard library only, and no asyncio: boot.py reads
the first message with it before answering `initialize`, which must not wait for an event loop to
load."""

from __future__ import annotations

READ_CHUNK = 1 << 16  # what one read of stdin asks for


class InBuffer:
    """Bytes read from stdin and not yet parsed; lines and byte counts are taken off the front.

    It never reads: each `take_*` answers None when it needs more, and the reader around it (boot's
    blocking read of the first message, `framing.Source` on the event loop) adds a chunk and asks
    again. So both read the same way, and what one read past is left for the other.
    """

    def __init__(self) -> None:
        self.data = bytearray()
        self.eof = False
        self._scanned = 0  # no newline before this offset: a long line is searched once, not per chunk

    def add(self, chunk: bytes) -> None:
        """A chunk as read; empty means end of input."""
        if chunk:
            self.data += chunk
        else:
            self.eof = True

    def take_line(self, limit: int) -> bytes | None:
        """A line with its newline, or `limit` bytes of it, or what is left at end of input."""
        end = self.data.find(b"\n", self._scanned, limit)
        if end >= 0:
            return self._take(end + 1)
        if len(self.data) >= limit or self.eof:
            return self._take(limit)
        self._scanned = len(self.data)
        return None

    def take_bytes(self, size: int) -> bytes | None:
        """`size` bytes, or what is left at end of input."""
        return self._take(size) if len(self.data) >= size or self.eof else None

    def _take(self, size: int) -> bytes:
        head = bytes(self.data[:size])
        del self.data[:size]
        self._scanned = 0
        return head
