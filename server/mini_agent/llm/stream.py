"""Incremental pieces of reading a streamed completion: SSE framing and stop-sequence cutting.

Both are pure and fed piece by piece, so they behave the same whatever way the network happens to
split the bytes; the client keeps all I/O to itself.
"""

from __future__ import annotations

import codecs
from collections.abc import Sequence


class SSEDecoder:
    """Turns raw Server-Sent-Events bytes into the `data` payload of each complete event.

    Bytes are decoded with an incremental UTF-8 decoder, so a character split across two network
    reads is joined rather than replaced. Lines may end in LF, CRLF or a lone CR (the SSE spec allows
    all three); a CR at the end of a read waits for the next read to show whether an LF follows.
    Each read is split into lines in C, its CRs made LFs first, and an unfinished line is kept as a
    list of pieces, so the work is linear in the input however long a line grows (the client caps
    the bytes it feeds in).
    """

    def __init__(self) -> None:
        self._utf8 = codecs.getincrementaldecoder("utf-8")(errors="replace")
        self._partial: list[str] = []
        self._cr = ""  # a CR that ended the previous read
        self._data: list[str] = []

    def feed(self, raw: bytes) -> list[str]:
        """The payloads of the events that `raw` completed, in order."""
        return self._take_lines(self._utf8.decode(raw), final=False)

    def close(self) -> list[str]:
        """Flush at end of stream: an event not closed by a blank line still counts."""
        return self._take_lines(self._utf8.decode(b"", final=True) + "\n\n", final=True)

    def _take_lines(self, text: str, *, final: bool) -> list[str]:
        text, self._cr = self._cr + text, ""
        if text.endswith("\r") and not final:
            text, self._cr = text[:-1], "\r"
        if "\r" in text:
            text = text.replace("\r\n", "\n").replace("\r", "\n")
        *lines, rest = text.split("\n")
        events: list[str] = []
        if lines:
            self._partial.append(lines[0])
            lines[0] = "".join(self._partial)
            self._partial = []
            for line in lines:
                self._end_line(line, events)
        if rest:
            self._partial.append(rest)
        return events

    def _end_line(self, line: str, events: list[str]) -> None:
        if not line:
            if self._data:
                events.append("\n".join(self._data))
                self._data = []
            return
        if line.startswith(":"):
            return  # a comment (keep-alive ping)
        field, _, value = line.partition(":")
        if field == "data":
            self._data.append(value[1:] if value.startswith(" ") else value)


class StopScanner:
    """Cuts a text stream at the earliest stop string, wherever the chunk boundaries fall.

    `feed` returns the text that is safe to show now. Only a tail that could still grow into a stop
    string is held back, and a match is final only once no stop string could still start earlier —
    so feeding a text in any split gives the same output as feeding it whole.
    """

    def __init__(self, stops: Sequence[str]) -> None:
        self._stops = tuple(s for s in stops if s)
        # every proper prefix of a stop string: a tail in this set may still grow into a match
        self._prefixes = frozenset(s[:k] for s in self._stops for k in range(1, len(s)))
        self._longest = max((len(s) for s in self._stops), default=0)
        self._pending = ""
        self.stopped = False

    def feed(self, text: str) -> str:
        """The newly releasable text; empty once a stop string has matched."""
        if self.stopped:
            return ""
        buf = self._pending + text
        cut = self._earliest_match(buf)
        hold = self._earliest_partial(buf)
        if cut is not None and (hold is None or hold >= cut):
            self.stopped = True
            self._pending = ""
            return buf[:cut]
        keep = len(buf) if hold is None else hold
        self._pending = buf[keep:]
        return buf[:keep]

    def finish(self) -> str:
        """The held-back tail at end of stream (cut if it holds a complete stop string)."""
        if self.stopped:
            return ""
        buf, self._pending = self._pending, ""
        cut = self._earliest_match(buf)
        if cut is not None:
            self.stopped = True
            return buf[:cut]
        return buf

    def _earliest_match(self, buf: str) -> int | None:
        found = [i for i in (buf.find(s) for s in self._stops) if i >= 0]
        return min(found) if found else None

    def _earliest_partial(self, buf: str) -> int | None:
        for i in range(max(0, len(buf) - self._longest + 1), len(buf)):
            if buf[i:] in self._prefixes:
                return i
        return None


def cut_at_stop(text: str, stops: Sequence[str]) -> tuple[str, bool]:
    """A whole text cut the way a stream of it would be: (text before the stop, whether one matched)."""
    scanner = StopScanner(stops)
    kept = scanner.feed(text) + scanner.finish()
    return kept, scanner.stopped
