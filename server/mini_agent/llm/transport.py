"""The model client's transport seam: one HTTP POST, answered with a status, headers and a body that
can be read whole or in chunks as they arrive.

`AiohttpTransport` is the one that ships, for `http://` and `https://` alike: aiohttp, imported on
first use (importing it takes long enough to delay the daemon's answer to `initialize`). `fake.py`
holds its stand-in for tests, which answers from a function instead of a socket.

What every transport promises, the fake included (tests/support/llm_contract.py checks both):

- any status is an answer, not an error: a 4xx or 5xx is a `Reply` with its body; redirects are not
  followed;
- `content_type` is the media type alone, lower-cased; `headers` are looked up case-insensitively;
- each wait (connecting, the answer's head, each piece of the body) lasts at most `timeout_sec`;
- a header value holding CR, LF or NUL is refused before anything is sent;
- every failure is a `TransportError` worded by the functions below, the same whoever raised it.
"""

from __future__ import annotations

import contextlib
import socket
from collections.abc import AsyncIterator, Iterator, Mapping
from typing import TYPE_CHECKING, Protocol
from urllib.parse import urlsplit

if TYPE_CHECKING:
    import aiohttp

LOOPBACK = ("localhost", "127.0.0.1", "::1", "[::1]")
IDLE_SEC = 60.0  # how long a kept-alive connection waits for its next request

BROKE_OFF = "the reply broke off before its end"
NOT_ANSWERED = "the server closed the connection without answering"


class TransportError(ConnectionError):
    """The request did not get through, or its answer broke off, said in words (`str()`).

    `phase` is "connecting" or "reading" when the server stayed silent past the timeout; `unreachable`
    when no connection was made at all; `refused_nearby` when a server on this machine refused it, so
    none is running there and retrying will not start one.
    """

    def __init__(
        self,
        reason: str,
        *,
        phase: str | None = None,
        unreachable: bool = False,
        refused_nearby: bool = False,
    ) -> None:
        super().__init__(reason)
        self.phase = phase
        self.unreachable = unreachable
        self.refused_nearby = refused_nearby

    def __str__(self) -> str:
        return str(self.args[0])


class Reply(Protocol):
    status: int
    content_type: str
    content_length: int | None  # as the server announced it
    headers: Mapping[str, str]

    async def read(self) -> bytes: ...

    def chunks(self) -> AsyncIterator[bytes]: ...

    def close(self) -> None:
        """Hang up before the body ends (a server that ignores `stop` would keep generating)."""


class Transport(Protocol):
    def post(
        self, url: str, body: bytes, headers: Mapping[str, str], timeout_sec: float
    ) -> contextlib.AbstractAsyncContextManager[Reply]: ...

    async def aclose(self) -> None: ...


# --- the words of the seam: every transport raises these ------------------------------------------


def address(url: str) -> tuple[str, int]:
    """The host and port a URL names (the scheme's port when it names none)."""
    parts = urlsplit(url)
    return parts.hostname or "localhost", parts.port or (443 if parts.scheme == "https" else 80)


def check_headers(headers: Mapping[str, str]) -> None:
    """A line break in a header (an API key pasted with its newline) would end the header early."""
    for name, value in headers.items():
        if any(c in f"{name}{value}" for c in "\r\n\0"):
            raise TransportError(f"the header {name!r} holds a line break or NUL; it was not sent")


def connect_failure(host: str, port: int, error: OSError) -> TransportError:
    """No connection was made: the name did not resolve, nothing listens, or the network said no."""
    if isinstance(error, socket.gaierror):
        return TransportError(f"the host name {host!r} could not be resolved", unreachable=True)
    if isinstance(error, ConnectionRefusedError):
        why = f"the connection was refused: nothing is listening on {host}:{port}"
        return TransportError(why, unreachable=True, refused_nearby=host in LOOPBACK)
    why = f"could not connect to {host}:{port} ({error.strerror or error})"
    return TransportError(why, unreachable=True)


def connect_timeout(host: str, port: int) -> TransportError:
    return TransportError(f"connecting to {host}:{port} timed out", phase="connecting", unreachable=True)


def silence(timeout_sec: float) -> TransportError:
    """The server took longer than `timeout_sec` to send the answer's head or its next piece."""
    return TransportError(f"the server sent nothing for {timeout_sec:g} s", phase="reading")


def not_http(what: str) -> TransportError:
    first = what.strip().splitlines()[0] if what.strip() else "unreadable"
    return TransportError(f"the server's answer is not valid HTTP ({first[:80]})")


# --- the one that ships ----------------------------------------------------------------------------


@contextlib.contextmanager
def _network_errors(host: str, port: int, timeout_sec: float, *, body: bool) -> Iterator[None]:
    """aiohttp's errors (its timeouts included) as the seam's TransportErrors; `body` once the head
    is in, when any break is the reply breaking off."""
    import aiohttp

    try:
        yield
    except aiohttp.ConnectionTimeoutError as exc:
        raise connect_timeout(host, port) from exc
    except (aiohttp.ServerTimeoutError, TimeoutError) as exc:
        raise silence(timeout_sec) from exc
    except aiohttp.ClientConnectorError as exc:
        raise connect_failure(host, port, exc.os_error) from exc
    except aiohttp.ClientResponseError as exc:  # the status line, a header or a chunk size is garbage
        raise not_http(exc.message) from exc
    except (aiohttp.ClientPayloadError, aiohttp.ClientConnectionError) as exc:
        if body:
            raise TransportError(BROKE_OFF) from exc
        if isinstance(exc, aiohttp.ServerDisconnectedError):
            raise TransportError(NOT_ANSWERED) from exc
        raise TransportError(f"the connection broke before the answer came ({exc})") from exc
    except aiohttp.ClientError as exc:
        raise TransportError(f"{type(exc).__name__}: {exc}") from exc


class _AiohttpReply:
    def __init__(self, resp: aiohttp.ClientResponse, host: str, port: int, timeout_sec: float) -> None:
        self._resp = resp
        self._where = (host, port, timeout_sec)
        self.status = resp.status
        self.content_type = resp.content_type
        self.content_length = resp.content_length
        self.headers: Mapping[str, str] = resp.headers

    async def read(self) -> bytes:
        return b"".join([chunk async for chunk in self.chunks()])

    async def chunks(self) -> AsyncIterator[bytes]:
        with _network_errors(*self._where, body=True):
            async for raw in self._resp.content.iter_any():
                yield raw

    def close(self) -> None:
        self._resp.close()


class AiohttpTransport:
    """One aiohttp session for the whole daemon, its connections kept alive for `IDLE_SEC`, so a
    step costs one request on a warm connection. Connections are not capped in number: each session
    in flight holds one, as long as its reply streams. aiohttp bounds the answer's head (the length of
    each line, the number of headers) and refuses one past its bounds as not valid HTTP."""

    def __init__(self) -> None:
        self._http: aiohttp.ClientSession | None = None

    @contextlib.asynccontextmanager
    async def post(
        self, url: str, body: bytes, headers: Mapping[str, str], timeout_sec: float
    ) -> AsyncIterator[Reply]:
        import aiohttp

        check_headers(headers)
        host, port = address(url)
        # `connect` covers resolving the name too; `sock_read` each wait for the head or a piece.
        timeout = aiohttp.ClientTimeout(
            total=None, connect=timeout_sec, sock_connect=timeout_sec, sock_read=timeout_sec
        )
        with _network_errors(host, port, timeout_sec, body=False):
            async with self._session().post(
                url, data=body, headers=dict(headers), timeout=timeout, allow_redirects=False
            ) as resp:
                yield _AiohttpReply(resp, host, port, timeout_sec)

    def _session(self) -> aiohttp.ClientSession:
        import aiohttp

        if self._http is None or self._http.closed:
            connector = aiohttp.TCPConnector(limit=0, keepalive_timeout=IDLE_SEC)
            self._http = aiohttp.ClientSession(connector=connector)
        return self._http

    async def aclose(self) -> None:
        if self._http is not None:
            await self._http.close()
            self._http = None
