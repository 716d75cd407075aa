"""One running call's live output, bounded: what it prints and reports, coalesced and capped.

Every tool source feeds a `LiveOutput` (printed text, progress reports); it hands the running call's
sink (`core.events.LIVE_SINK`) at most one update per `LIVE_INTERVAL_SEC` and at most
`LIVE_OUTPUT_MAX_BYTES` of printed text per call. What is printed past the cap is only counted; the
last update then ends with a summary line ("… 3,214 more lines not shown (1.2 MB)").
"""

from __future__ import annotations

import asyncio
import codecs
import os

from mini_agent.core.events import LIVE_SINK, LiveSink, LiveUpdate

LIVE_INTERVAL_SEC = 0.1  # at most 10 updates a second per call
LIVE_OUTPUT_MAX_BYTES = 64 * 1024  # printed text shown per call; the rest is counted and summarized
PROGRESS_MESSAGE_MAX_CHARS = 1000  # a progress message longer than this is cut
READ_CHUNK_BYTES = 64 * 1024  # what is printed past the cap is counted in chunks of this size
SUMMARY = "\n… {lines:,} more lines not shown ({size} more)"


class LiveOutput:
    """Coalesces one call's printed text and progress reports into rate-limited, capped updates."""

    def __init__(self, sink: LiveSink, *, max_bytes: int = LIVE_OUTPUT_MAX_BYTES) -> None:
        self._sink = sink
        self._max_bytes = max_bytes
        self._decoder = codecs.getincrementaldecoder("utf-8")(errors="replace")
        self._shown_bytes = 0
        self._shown: list[str] = []
        self._pending = ""
        self._message: str | None = None
        self._fraction: float | None = None
        self._changed = False
        self._hidden_bytes = 0
        self._hidden_lines = 0
        self._loop = asyncio.get_running_loop()
        self._last = -LIVE_INTERVAL_SEC
        self._timer: asyncio.TimerHandle | None = None
        self._closed = False

    @classmethod
    def for_running_call(cls) -> LiveOutput | None:
        """A live output for the call this task runs, if anyone is watching it."""
        sink = LIVE_SINK.get()
        return cls(sink) if sink is not None else None

    @property
    def room(self) -> int:
        """How many more printed bytes would be shown."""
        return max(0, self._max_bytes - self._shown_bytes)

    def printed(self, data: bytes) -> None:
        """Bytes the tool printed (at most `room` of them are shown; pass the rest to `hidden`)."""
        if not data:
            return
        shown = data[: self.room]
        self.hidden(data[len(shown) :])
        if shown:
            self._shown_bytes += len(shown)
            self._pending += self._decoder.decode(shown)
            self._changed = True
            self._schedule()

    def hidden(self, data: bytes) -> None:
        """Printed bytes past the cap: counted, never kept."""
        self._hidden_bytes += len(data)
        self._hidden_lines += data.count(b"\n")

    def hidden_size(self, size: int, lines: int) -> None:
        """Printed bytes past the cap that were counted elsewhere (never read whole)."""
        self._hidden_bytes += size
        self._hidden_lines += lines

    def progress(self, message: str | None, fraction: float | None) -> None:
        """The tool's own report; a message is cut to `PROGRESS_MESSAGE_MAX_CHARS`."""
        if message is not None:
            self._message = message[:PROGRESS_MESSAGE_MAX_CHARS]
        if fraction is not None:
            self._fraction = min(1.0, max(0.0, fraction))
        self._changed = True
        self._schedule()

    def close(self) -> None:
        """Send what is pending, and the summary of what the cap left out; nothing is sent after."""
        if self._closed:
            return
        if self._timer is not None:
            self._timer.cancel()
        self._pending += self._decoder.decode(b"", final=True)
        truncated = self._hidden_bytes > 0
        if truncated:
            lines = max(1, self._hidden_lines)
            self._pending += SUMMARY.format(lines=lines, size=_size(self._hidden_bytes))
            self._changed = True
        self._flush(truncated)
        self._closed = True

    def _schedule(self) -> None:
        if self._closed or self._timer is not None:
            return
        delay = self._last + LIVE_INTERVAL_SEC - self._loop.time()
        if delay <= 0:
            self._flush()
        else:
            self._timer = self._loop.call_later(delay, self._flush)

    def _flush(self, truncated: bool = False) -> None:
        self._timer = None
        if not self._changed or self._closed:
            return
        self._changed = False
        self._last = self._loop.time()
        text, self._pending = self._pending, ""
        if text:
            self._shown.append(text)
        shown = "".join(self._shown)
        self._shown = [shown]
        self._sink(LiveUpdate(text, self._message, self._fraction, truncated, shown))


class CaptureTail:
    """Follows a tool host's capture file while a call runs: the shown part is read, the rest only counted."""

    def __init__(self, fd: int, live: LiveOutput) -> None:
        self._fd = fd
        self._live = live
        self._offset = 0

    async def follow(self) -> None:
        while True:
            await asyncio.sleep(LIVE_INTERVAL_SEC)
            self.read()

    def read(self) -> None:
        try:
            size = os.fstat(self._fd).st_size
            if size < self._offset:  # cut by someone: start over
                self._offset = 0
            shown = min(size - self._offset, self._live.room)
            if shown > 0:
                data = os.pread(self._fd, shown, self._offset)
                self._offset += len(data)
                self._live.printed(data)
            while self._offset < size:  # past the cap: read in chunks, counted, never kept
                chunk = os.pread(self._fd, min(READ_CHUNK_BYTES, size - self._offset), self._offset)
                if not chunk:
                    break
                self._offset += len(chunk)
                self._live.hidden(chunk)
        except OSError:
            return


def _size(count: int) -> str:
    for unit, scale in (("MB", 1_000_000), ("kB", 1_000)):
        if count >= scale:
            return f"{count / scale:.1f} {unit}"
    return f"{count} bytes"
