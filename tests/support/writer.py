"""A pygls writer in memory, for the LSP door's tests without a process."""

from __future__ import annotations

import io
import json
from typing import Any


class Sink:
    """A pygls writer that keeps what it is given."""

    def __init__(self) -> None:
        self.buffer = io.BytesIO()

    def write(self, data: bytes) -> None:
        self.buffer.write(data)

    def close(self) -> None:
        pass

    def messages(self) -> list[dict[str, Any]]:
        """The frames written, headers checked and taken off."""
        found, data = [], self.buffer.getvalue()
        while data:
            head, _, rest = data.partition(b"\r\n\r\n")
            lengths = [line for line in head.split(b"\r\n") if line.lower().startswith(b"content-length:")]
            assert len(lengths) == 1, head
            length = int(lengths[0].partition(b":")[2])
            found.append(json.loads(rest[:length]))
            data = rest[length:]
        return found
