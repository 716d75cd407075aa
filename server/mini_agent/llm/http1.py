"""A plain HTTP/1.1 client on asyncio streams, for model servers at `http://` URLs.

Local and LAN model servers (vLLM, llama.cpp, Ollama) are plain HTTP, and a step makes one request to
them: aiohttp's client spent about 0.27 ms of CPU on each, this one about 0.15 (bench/README.md). It
speaks only what those servers need: one POST at a time per connection, kept alive and reused, a
body sized by Content-Length, chunked, or running to the end of the connection. `https://` goes to
aiohttp (`AiohttpTransport`), which does TLS properly.

Fault model: the server may be gone, slow, or hostile. Every read waits at most `timeout_sec` (its
phase named in the error), the response head is capped at `MAX_HEAD_BYTES`, a body that ends early is
an error, and a kept-alive connection the server closed while idle is replaced once, before anything
of the answer arrived. A reply not read to its end closes its connection.
"""

from __future__ import annotations

import asyncio
import contextlib
import socket
import time
from collections.abc import AsyncIterator, Iterator, Mapping
from dataclasses import dataclass, field
from urllib.parse import urlsplit

from multidict import CIMultiDict, CIMultiDictProxy

from .transport import LOOPBACK, AiohttpTransport, Reply, TransportError

MAX_HEAD_BYTES = 64 * 1024
READ_BYTES = 64 * 1024
IDLE_SEC = 60.0  # how long a kept-alive connection waits for its next request


@dataclass(slots=True)
class _Connection:
    reader: asyncio.StreamReader
    writer: asyncio.StreamWriter
    idle_since: float = field(default_factory=time.monotonic)

    def usable(self) -> bool:
        fresh = time.monotonic() - self.idle_since < IDLE_SEC
        return fresh and not self.reader.at_eof() and not self.writer.is_closing()

    def close(self) -> None:
        self.writer.close()


class Http1Transport:
    """`Transport` for `http://` URLs on asyncio streams; `https://` is handed to aiohttp."""

    def __init__(self) -> None:
        self._idle: dict[tuple[str, int], list[_Connection]] = {}
        self._tls = AiohttpTransport()

    @contextlib.asynccontextmanager
    async def post(
        self, url: str, body: bytes, headers: Mapping[str, str], timeout_sec: float
    ) -> AsyncIterator[Reply]:
        parts = urlsplit(url)
        if parts.scheme != "http":
            async with self._tls.post(url, body, headers, timeout_sec) as reply:
                yield reply
            return
        host, port = parts.hostname or "localhost", parts.port or 80
        target = (parts.path or "/") + (f"?{parts.query}" if parts.query else "")
        request = _request(target, parts.netloc, body, headers)
        reply = await self._exchange((host, port), request, timeout_sec)
        try:
            yield reply
        finally:
            if reply.reusable:
                reply.connection.idle_since = time.monotonic()
                self._idle.setdefault((host, port), []).append(reply.connection)
            else:
                reply.connection.close()

    async def _exchange(self, address: tuple[str, int], request: bytes, timeout_sec: float) -> _Http1Reply:
        kept = self._kept(address)
        if kept is not None:
            try:
                return await _send(kept, request, timeout_sec)
            except _Stale:
                kept.close()  # closed by the server while idle: once more on a new connection
            except BaseException:
                kept.close()
                raise
        connection = await _connect(address, timeout_sec)
        try:
            return await _send(connection, request, timeout_sec)
        except _Stale as exc:
            connection.close()
            raise TransportError("the server closed the connection without answering") from exc
        except BaseException:
            connection.close()
            raise

    def _kept(self, address: tuple[str, int]) -> _Connection | None:
        pool = self._idle.get(address, [])
        while pool:
            connection = pool.pop()
            if connection.usable():
                return connection
            connection.close()
        return None

    async def aclose(self) -> None:
        for pool in self._idle.values():
            for connection in pool:
                connection.close()
        self._idle.clear()
        await self._tls.aclose()


class _Stale(Exception):
    """The connection ended before a byte of the answer came: it can be tried again elsewhere."""


class _Http1Reply:
    def __init__(
        self, connection: _Connection, status: int, headers: CIMultiDict[str], timeout_sec: float, keep: bool
    ) -> None:
        self.connection = connection
        self.status = status
        self.headers: Mapping[str, str] = CIMultiDictProxy(headers)
        declared = headers.get("Content-Type", "application/octet-stream")
        self.content_type = declared.split(";")[0].strip().lower()
        bodiless = status in (204, 304)
        chunked = "chunked" in headers.get("Transfer-Encoding", "").lower() and not bodiless
        length = "0" if bodiless else headers.get("Content-Length")
        self.content_length = int(length) if length is not None and length.isdigit() and not chunked else None
        self._chunked = chunked
        self._to_eof = not chunked and self.content_length is None
        self._keep = keep and not self._to_eof
        self._timeout = timeout_sec
        self._done = False

    @property
    def reusable(self) -> bool:
        return self._done and self._keep

    async def read(self) -> bytes:
        return b"".join([chunk async for chunk in self.chunks()])

    async def chunks(self) -> AsyncIterator[bytes]:
        with _reading():
            if self._chunked:
                async for chunk in self._chunked_body():
                    yield chunk
            elif self.content_length is not None:
                async for chunk in self._sized_body(self.content_length):
                    yield chunk
            else:
                while chunk := await self._read(READ_BYTES):
                    yield chunk
        self._done = True

    async def _sized_body(self, left: int) -> AsyncIterator[bytes]:
        while left:
            chunk = await self._read(min(left, READ_BYTES))
            if not chunk:
                raise TransportError(f"the connection closed with {left} bytes of the reply still to come")
            left -= len(chunk)
            yield chunk

    async def _chunked_body(self) -> AsyncIterator[bytes]:
        body = Dechunker()
        while not body.done:
            data = await self._read(READ_BYTES)
            if not data:
                raise TransportError("the connection closed in the middle of the reply")
            if pieces := body.feed(data):  # what one read brought, as one piece: fewer turns downstream
                yield b"".join(pieces)

    async def _read(self, size: int) -> bytes:
        async with asyncio.timeout(self._timeout):
            return await self.connection.reader.read(size)

    def close(self) -> None:
        self._keep = False
        self.connection.close()


class Dechunker:
    """The chunked transfer coding, decoded from whatever bytes arrive (one network read may hold many
    chunks, or part of one): `feed` returns the payload so far; `done` once the last chunk and the
    trailers are in. A malformed body is a TransportError."""

    def __init__(self) -> None:
        self._held = b""
        self._left = 0  # payload bytes still to come in the current chunk
        self._step = self._size
        self.done = False

    def feed(self, data: bytes) -> list[bytes]:
        self._held += data
        out: list[bytes] = []
        while not self.done and self._step(out):
            pass
        if len(self._held) > MAX_HEAD_BYTES:
            raise TransportError("a chunk size or trailer line of the reply never ends")
        return out

    def _size(self, out: list[bytes]) -> bool:
        line = self._line()
        if line is None:
            return False
        try:
            self._left = int(line.split(b";", 1)[0].strip(), 16)
        except ValueError:
            raise TransportError(f"a chunk of the reply has no valid size ({line[:40]!r})") from None
        self._step = self._payload if self._left else self._trailer
        return True

    def _payload(self, out: list[bytes]) -> bool:
        piece, self._held = self._held[: self._left], self._held[self._left :]
        if piece:
            out.append(piece)
            self._left -= len(piece)
        if self._left:
            return False
        self._step = self._end_of_chunk
        return True

    def _end_of_chunk(self, out: list[bytes]) -> bool:
        if len(self._held) < 2:
            return False
        if self._held[:2] != b"\r\n":
            raise TransportError("a chunk of the reply is longer than its size")
        self._held = self._held[2:]
        self._step = self._size
        return True

    def _trailer(self, out: list[bytes]) -> bool:
        line = self._line()
        if line is None:
            return False
        self.done = not line  # trailers end at an empty line
        return True

    def _line(self) -> bytes | None:
        end = self._held.find(b"\r\n")
        if end < 0:
            return None
        line, self._held = self._held[:end], self._held[end + 2 :]
        return line


@contextlib.contextmanager
def _reading() -> Iterator[None]:
    try:
        yield
    except TimeoutError as exc:
        raise TransportError("the server stopped sending", phase="reading") from exc
    except (ConnectionError, asyncio.LimitOverrunError, ValueError) as exc:
        raise TransportError(f"the reply broke off ({type(exc).__name__}: {exc})") from exc


def _request(target: str, netloc: str, body: bytes, headers: Mapping[str, str]) -> bytes:
    lines = [f"POST {target} HTTP/1.1", f"Host: {netloc}", f"Content-Length: {len(body)}", "Accept: */*"]
    for name, value in headers.items():
        if any(c in f"{name}{value}" for c in "\r\n\0"):
            raise TransportError(f"the header {name!r} holds a line break or NUL; it was not sent")
        lines.append(f"{name}: {value}")
    return ("\r\n".join(lines) + "\r\n\r\n").encode("latin-1", "strict") + body


async def _connect(address: tuple[str, int], timeout_sec: float) -> _Connection:
    host, port = address
    try:
        async with asyncio.timeout(timeout_sec):
            reader, writer = await asyncio.open_connection(host, port, limit=MAX_HEAD_BYTES)
    except TimeoutError as exc:
        why = f"connecting to {host}:{port} timed out"
        raise TransportError(why, phase="connecting", unreachable=True) from exc
    except socket.gaierror as exc:
        raise TransportError(f"the host name {host!r} could not be resolved", unreachable=True) from exc
    except ConnectionRefusedError as exc:
        why = f"the connection was refused: nothing is listening on {host}:{port}"
        raise TransportError(why, unreachable=True, refused_nearby=host in LOOPBACK) from exc
    except OSError as exc:
        why = f"could not connect to {host}:{port} ({exc.strerror or exc})"
        raise TransportError(why, unreachable=True) from exc
    return _Connection(reader, writer)


async def _send(connection: _Connection, request: bytes, timeout_sec: float) -> _Http1Reply:
    """Write the request and read the answer's head (skipping any 1xx)."""
    try:
        connection.writer.write(request)
        async with asyncio.timeout(timeout_sec):
            await connection.writer.drain()
            head = await connection.reader.readuntil(b"\r\n\r\n")
            while head[9:10] == b"1" and head.startswith(b"HTTP/1."):  # 100 Continue and the like
                head = await connection.reader.readuntil(b"\r\n\r\n")
    except asyncio.IncompleteReadError as exc:
        if exc.partial:
            raise TransportError("the connection closed in the middle of the reply's head") from exc
        raise _Stale from exc
    except (ConnectionResetError, BrokenPipeError) as exc:
        raise _Stale from exc
    except TimeoutError as exc:
        raise TransportError("the server did not answer", phase="reading") from exc
    except asyncio.LimitOverrunError as exc:
        raise TransportError(f"the reply's head is longer than {MAX_HEAD_BYTES} bytes") from exc
    return _parse_head(connection, head, timeout_sec)


def _parse_head(connection: _Connection, head: bytes, timeout_sec: float) -> _Http1Reply:
    status_line, *header_lines = head[:-4].decode("latin-1").split("\r\n")
    version, _, rest = status_line.partition(" ")
    code = rest[:3]
    if not version.startswith("HTTP/1.") or not code.isdigit():
        raise TransportError(f"the server's answer is not HTTP/1.x ({status_line[:60]!r})")
    headers: CIMultiDict[str] = CIMultiDict()
    for line in header_lines:
        name, colon, value = line.partition(":")
        if not colon or not name.strip():
            raise TransportError(f"the server sent a malformed header line ({line[:60]!r})")
        headers.add(name.strip(), value.strip())
    says = headers.get("Connection", "").lower()
    keep = "close" not in says if version == "HTTP/1.1" else "keep-alive" in says
    return _Http1Reply(connection, int(code), headers, timeout_sec, keep)
