"""Reading JSON-RPC messages off stdio, LSP-framed or one per line, with bounded memory.

pygls' own reader trusts its input: a header it cannot read makes it wait forever for a frame that
never starts, a huge `Content-Length` is allocated at once (`OverflowError`/`MemoryError` kill the
daemon), and deep nesting raises a `RecursionError` nobody answers. This reader answers each of
those with a JSON-RPC error (id null), skips what it cannot use without buffering it, and resumes
at the next frame. Each body is read with `plumbing.jsonrpc.read`, the edge all three doors share
(its envelope rules, its depth rule, its messages), and a refusal is answered as the pygls error
class of its code. Everything after that (`structure_message`, `handle_message`) is pygls'.
Writing, and the order frames reach the client in, is `plumbing.pipes`' (its docstring).
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
import re
import stat
import sys
import threading
from collections.abc import Awaitable, Callable
from concurrent.futures import Executor
from typing import Any, Protocol

from lsprotocol.types import ResponseError
from pygls.exceptions import JsonRpcException

from mini_agent.lsp.readahead import READ_CHUNK, InBuffer
from mini_agent.plumbing import jsonrpc
from mini_agent.plumbing.jsonrpc import JsonRpcError

log = logging.getLogger(__name__)

MAX_FRAME_ENV = "MINI_AGENT_MAX_FRAME_BYTES"
DEFAULT_MAX_FRAME_BYTES = 8 * 1024 * 1024
HEADER_LINE_LIMIT = 8192
_LENGTH_HEADER = re.compile(rb"content-length\s*:", re.IGNORECASE)


class Endpoint(Protocol):
    """What the reader hands decoded messages to (the daemon's pygls protocol)."""

    def structure_message(self, data: dict[str, Any]) -> Any: ...

    def handle_message(self, message: Any) -> None: ...

    def answer_error(self, msg_id: Any, error: JsonRpcException) -> None: ...


ErrorReporter = Callable[[Exception, type[JsonRpcException]], None]


def max_frame_bytes() -> int:
    """The frame (and NDJSON line) cap from the environment; a value that is not a positive number
    is reported and the default used, rather than refusing to start an editor's daemon."""
    raw = os.environ.get(MAX_FRAME_ENV)
    if not raw:
        return DEFAULT_MAX_FRAME_BYTES
    try:
        value = int(raw)
    except ValueError:
        value = 0
    if value <= 0:
        log.warning(
            "%s=%r is not a positive byte count; using %d", MAX_FRAME_ENV, raw, DEFAULT_MAX_FRAME_BYTES
        )
        return DEFAULT_MAX_FRAME_BYTES
    return value


class Source:
    """stdin, read into an `InBuffer` that the frame parser takes lines and byte counts from.

    A pipe or a socket (how editors and scripts start the daemon) is read by the event loop when it is
    readable: a burst of messages costs one read, and no thread has to win the GIL back from a busy
    event loop for each one. Anything else (a file, a terminal, Windows) is read by a worker thread,
    a chunk at a time. Bytes are read only when the parser
    needs them, so memory stays bounded by the frame limit.
    """

    def __init__(self, fd: int, buffer: InBuffer, executor: Executor | None) -> None:
        self._fd = fd
        self._buffer = buffer
        self._executor = executor
        self._polled = sys.platform != "win32" and _is_stream(fd)
        self._was_blocking = self._polled and os.get_blocking(fd)
        if self._polled:
            os.set_blocking(fd, False)

    def close(self) -> None:
        """Leave stdin as it was found."""
        if self._was_blocking:
            with contextlib.suppress(OSError):
                os.set_blocking(self._fd, True)

    async def readline(self, limit: int) -> bytes:
        """One line with its newline, or at most `limit` bytes of it (no newline then); b"" at EOF."""
        while (line := self._buffer.take_line(limit)) is None:
            await self._fill()
        return line

    async def read(self, size: int) -> bytes:
        """`size` bytes, fewer only at EOF."""
        while (data := self._buffer.take_bytes(size)) is None:
            await self._fill()
        return data

    async def skip(self, size: int) -> None:
        """Discard `size` bytes (fewer at EOF) a chunk at a time."""
        while size > 0:
            chunk = await self.read(min(size, READ_CHUNK))
            if not chunk:
                return
            size -= len(chunk)

    async def skip_line(self) -> bytes:
        """Discard the rest of an over-long line; returns its last chunk (b"" at EOF)."""
        while True:
            chunk = await self.readline(READ_CHUNK)
            if not chunk or chunk.endswith(b"\n"):
                return chunk

    async def _fill(self) -> None:
        if self._polled:
            self._buffer.add(await self._poll())
        else:
            loop = asyncio.get_running_loop()
            self._buffer.add(await loop.run_in_executor(self._executor, _read, self._fd))

    async def _poll(self) -> bytes:
        loop = asyncio.get_running_loop()
        while True:
            try:
                return _read(self._fd)
            except BlockingIOError:
                readable = loop.create_future()
                loop.add_reader(self._fd, _settle, readable)
                try:
                    await readable
                finally:
                    loop.remove_reader(self._fd)


def _read(fd: int) -> bytes:
    """A chunk of stdin; b"" at its end, or when it fails (EIO: the terminal went away)."""
    try:
        return os.read(fd, READ_CHUNK)
    except BlockingIOError:
        raise
    except OSError as exc:
        log.debug("stdin failed: %s; taking it as ended", exc)
        return b""


def _settle(waiter: asyncio.Future[None]) -> None:
    if not waiter.done():
        waiter.set_result(None)


def _is_stream(fd: int) -> bool:
    try:
        mode = os.fstat(fd).st_mode
    except OSError:
        return False
    return stat.S_ISFIFO(mode) or stat.S_ISSOCK(mode)


async def _deliver(body: bytes, endpoint: Endpoint, report: ErrorReporter) -> None:
    """Hand one message on, then give what it started a turn of the loop before the next is read:
    messages that arrived in one read are handled as they would be one read apart."""
    _decode_and_handle(body, endpoint, report)
    await asyncio.sleep(0)


def _decode_and_handle(body: bytes, endpoint: Endpoint, report: ErrorReporter) -> None:
    """A body the shared edge refuses is answered (with its id where it has one). Only the message
    itself is structured: pygls' own way (a json `object_hook`) takes every object inside params
    that holds a "jsonrpc" key for a message too, and leaves a request carrying one unanswered."""
    try:
        message = endpoint.structure_message(jsonrpc.read(body))
    except JsonRpcError as refusal:
        endpoint.answer_error(refusal.msg_id, pygls_error(refusal))
        return
    except JsonRpcException as exc:
        report(exc, JsonRpcException)
        return
    try:
        endpoint.handle_message(message)
    except Exception as exc:
        log.debug("unable to handle message: %s", exc)
        report(exc, JsonRpcException)


def pygls_error(error: JsonRpcError) -> JsonRpcException:
    """`error` as the pygls exception class of its code (`JsonRpcInvalidRequest`, …)."""
    exc: JsonRpcException = JsonRpcException.from_error(
        ResponseError(code=error.code, message=error.message, data=error.data)
    )
    return exc


def _too_big(size: int | str, limit: int) -> JsonRpcException:
    detail = f"the message is {size} bytes; the daemon takes at most {limit}"
    detail += f" (set {MAX_FRAME_ENV} to change it)"
    return pygls_error(JsonRpcError.invalid_request(detail))


class _Header:
    """One LSP header block as read: its Content-Length, or why the frame cannot be read."""

    def __init__(self) -> None:
        self.length: int | None = None
        self.problem: str | None = None

    def take(self, line: bytes) -> None:
        name, colon, value = line.partition(b":")
        if not colon or not name.strip() or b" " in name.strip():
            self.problem = self.problem or f"not a header line: {line[:80]!r}"
            return
        if name.strip().lower() != b"content-length":
            return
        text = value.strip().decode("ascii", errors="replace")
        if not text.isdigit():
            self.problem = self.problem or f"Content-Length is not a byte count: {text[:40]!r}"
        else:
            self.length = int(text)


async def _read_header(source: Source, first: bytes | None) -> _Header | None:
    """Read header lines up to the blank line that ends them; None at end of input."""
    header = _Header()
    seen = False
    while True:
        if first is not None:
            line, first = first, None
        else:
            line = await source.readline(HEADER_LINE_LIMIT)
        if not line:
            return None
        if not line.endswith(b"\n"):
            header.problem = header.problem or f"a header line is longer than {HEADER_LINE_LIMIT} bytes"
            if not await source.skip_line():
                return None
            seen = True
            continue
        if not line.strip():
            if seen:
                return header
            continue  # blank lines between frames
        seen = True
        header.take(line.strip())


async def _resync(source: Source) -> bytes | None:
    """Discard input up to the next `Content-Length` header; returns that header line (None at EOF).

    A frame whose length is unknown has a body of unknown size: the next header tells where the
    following frame starts, even when the body before it ends without a newline.
    """
    while True:
        line = await source.readline(HEADER_LINE_LIMIT)
        if not line:
            return None
        found = _LENGTH_HEADER.search(line)
        if found is not None and line.endswith(b"\n"):
            return line[found.start() :]


async def read_frames(
    stop: threading.Event, source: Source, endpoint: Endpoint, report: ErrorReporter, limit: int
) -> None:
    """LSP base-protocol frames (`Content-Length: n` CRLF CRLF body) until EOF or `stop`."""
    pending: bytes | None = None
    while not stop.is_set():
        header = await _read_header(source, pending)
        pending = None
        if header is None:
            return
        if header.problem is None and header.length is None:
            header.problem = "the Content-Length header is missing"
        if header.problem is not None:
            bad_header = JsonRpcError.parse_error(f"bad frame header: {header.problem}")
            endpoint.answer_error(None, pygls_error(bad_header))
            pending = await _resync(source)
            if pending is None:
                return
            continue
        assert header.length is not None
        if header.length >= limit:
            endpoint.answer_error(None, _too_big(header.length, limit))
            await source.skip(header.length)
            continue
        body = await source.read(header.length)
        if len(body) < header.length:
            return  # input ended mid-frame
        await _deliver(body, endpoint, report)


async def read_lines(
    stop: threading.Event, source: Source, endpoint: Endpoint, report: ErrorReporter, limit: int
) -> None:
    """One JSON message per line until EOF or `stop`; an over-long line is answered and skipped."""
    while not stop.is_set():
        line = await source.readline(limit)
        if not line:
            return
        if len(line) >= limit and not line.endswith(b"\n"):
            endpoint.answer_error(None, _too_big(f"more than {limit}", limit))
            if not await source.skip_line():
                return
            continue
        if line.strip():
            await _deliver(line, endpoint, report)


Reader = Callable[[threading.Event, Source, Endpoint, ErrorReporter, int], Awaitable[None]]


async def serve(
    stop: threading.Event,
    read: Reader,
    source: Source,
    endpoint: Endpoint,
    report: ErrorReporter,
    on_end: Callable[[], Awaitable[None]],
) -> None:
    """Read until the input ends or `exit` arrives, then let `on_end` release what the daemon holds
    while the loop still runs (so nothing is cancelled halfway and nothing warns about leaks)."""
    try:
        with contextlib.suppress(SystemExit):  # the `exit` notification
            await read(stop, source, endpoint, report, max_frame_bytes())
    finally:
        source.close()
    try:
        await on_end()
    except Exception as exc:  # the client is gone: say what failed, but leave as planned
        log.warning("closing the daemon: %s", exc)
