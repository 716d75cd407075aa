"""The model client's transport seam: one HTTP POST, answered with a status, headers and a body that
can be read whole or in chunks as they arrive.

The real ones: `http1.Http1Transport` for `http://` servers (asyncio streams), which hands `https://`
to `AiohttpTransport` here (aiohttp, imported on first use: it costs a quarter of a second the daemon
should not spend before answering `initialize`). Tests hand the client a fake, so what the client
makes of replies, errors and cut streams is tested without a socket.
"""

from __future__ import annotations

import contextlib
import socket
from collections.abc import AsyncIterator, Iterator, Mapping
from typing import TYPE_CHECKING, Protocol

if TYPE_CHECKING:
    import aiohttp


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


LOOPBACK = ("localhost", "127.0.0.1", "::1", "[::1]")


@contextlib.contextmanager
def _network_errors() -> Iterator[None]:
    """aiohttp's errors (its timeouts included) as a TransportError that says what happened."""
    import aiohttp

    try:
        yield
    except aiohttp.ConnectionTimeoutError as exc:
        raise TransportError(str(exc), phase="connecting", unreachable=True) from exc
    except (aiohttp.ServerTimeoutError, TimeoutError) as exc:
        raise TransportError(str(exc), phase="reading") from exc
    except aiohttp.ClientConnectorError as exc:
        refused = isinstance(exc.os_error, ConnectionRefusedError)
        nearby = refused and exc.host in LOOPBACK
        raise TransportError(_connect_failure(exc), unreachable=True, refused_nearby=nearby) from exc
    except aiohttp.ClientError as exc:
        raise TransportError(f"{type(exc).__name__}: {exc}") from exc


def _connect_failure(exc: aiohttp.ClientConnectorError) -> str:
    if isinstance(exc.os_error, socket.gaierror):
        return f"the host name {exc.host!r} could not be resolved"
    if isinstance(exc.os_error, ConnectionRefusedError):
        return f"the connection was refused: nothing is listening on {exc.host}:{exc.port}"
    return f"could not connect to {exc.host}:{exc.port} ({exc.os_error.strerror or exc.os_error})"


class _AiohttpReply:
    def __init__(self, resp: aiohttp.ClientResponse) -> None:
        self._resp = resp
        self.status = resp.status
        self.content_type = resp.content_type
        self.content_length = resp.content_length
        self.headers: Mapping[str, str] = resp.headers

    async def read(self) -> bytes:
        with _network_errors():
            return await self._resp.read()

    async def chunks(self) -> AsyncIterator[bytes]:
        with _network_errors():
            async for raw in self._resp.content.iter_any():
                yield raw

    def close(self) -> None:
        self._resp.close()


class AiohttpTransport:
    """One aiohttp session for the whole daemon, kept alive, so a step costs one request on a warm
    connection."""

    def __init__(self) -> None:
        self._http: aiohttp.ClientSession | None = None

    @contextlib.asynccontextmanager
    async def post(
        self, url: str, body: bytes, headers: Mapping[str, str], timeout_sec: float
    ) -> AsyncIterator[Reply]:
        import aiohttp

        timeout = aiohttp.ClientTimeout(total=None, sock_connect=timeout_sec, sock_read=timeout_sec)
        with _network_errors():
            async with self._session().post(url, data=body, headers=dict(headers), timeout=timeout) as resp:
                yield _AiohttpReply(resp)

    def _session(self) -> aiohttp.ClientSession:
        import aiohttp

        if self._http is None or self._http.closed:
            self._http = aiohttp.ClientSession(connector=aiohttp.TCPConnector(keepalive_timeout=60))
        return self._http

    async def aclose(self) -> None:
        if self._http is not None:
            await self._http.close()
            self._http = None
