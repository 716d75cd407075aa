"""The loopback listener an OAuth sign-in comes back to: `http://127.0.0.1:<port>/callback`.

It runs only for one sign-in: started before the person is sent to the authorization page, stopped
when the redirect has come back, failed, or `LOGIN_WAIT_SEC` has passed. It answers only a GET of
`CALLBACK_PATH` carrying the `state` of this sign-in (anything else gets a 400 and is otherwise
ignored), reads at most `MAX_REQUEST_BYTES` of a request, and answers the browser with a short page.
"""

from __future__ import annotations

import asyncio
import contextlib
import html
import socket
from urllib.parse import parse_qs, urlsplit

from mcp.shared.auth import AuthorizationCodeResult

HOST = "127.0.0.1"
CALLBACK_PATH = "/callback"
# How long a sign-in may take, from opening the page to the redirect; past it the server's start
# (or the call that needed the sign-in) fails with "no sign-in within … s".
LOGIN_WAIT_SEC = 300.0
MAX_REQUEST_BYTES = 16 << 10  # of a request's line and headers; a larger request gets a 400
_READ_SEC = 10.0  # per request: a connection that sends nothing is dropped

_PAGE = "<!doctype html><meta charset=utf-8><title>mini-agent</title><p>{}</p>"


class LoginFailed(Exception):
    """The sign-in did not come back with a code; the message says why."""


def free_port() -> int:
    """A loopback port free now (the listener binds it later, for the sign-in)."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as probe:
        probe.bind((HOST, 0))
        return int(probe.getsockname()[1])


def redirect_uri(port: int) -> str:
    return f"http://{HOST}:{port}{CALLBACK_PATH}"


class Listener:
    """One sign-in's listener: `start(state)`, then `result()` (which stops it, whatever happens)."""

    def __init__(self, port: int) -> None:
        self.port = port
        self._server: asyncio.Server | None = None
        self._state = ""
        self._done: asyncio.Future[AuthorizationCodeResult] | None = None

    async def start(self, state: str) -> None:
        await self.stop()
        self._state = state
        self._done = asyncio.get_running_loop().create_future()
        self._server = await asyncio.start_server(self._serve, HOST, self.port, limit=MAX_REQUEST_BYTES)

    async def result(self, wait: float = LOGIN_WAIT_SEC) -> AuthorizationCodeResult:
        """The code the browser brought back, within `wait` seconds."""
        assert self._done is not None  # started
        try:
            async with asyncio.timeout(wait):
                return await self._done
        except TimeoutError:
            raise LoginFailed(f"no sign-in within {wait:g} s") from None
        finally:
            await self.stop()

    async def stop(self) -> None:
        server, self._server = self._server, None
        if server is not None:
            server.close()
            with contextlib.suppress(TimeoutError):
                async with asyncio.timeout(_READ_SEC):
                    await server.wait_closed()

    async def _serve(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        try:
            async with asyncio.timeout(_READ_SEC):
                head = await reader.readuntil(b"\r\n\r\n")
            status, text = self._answer(head.split(b"\r\n", 1)[0].decode("latin-1"))
        except (asyncio.IncompleteReadError, asyncio.LimitOverrunError, TimeoutError, ValueError):
            status, text = "400 Bad Request", "This is not a sign-in reply."
        body = _PAGE.format(html.escape(text)).encode()
        writer.write(
            f"HTTP/1.1 {status}\r\nContent-Type: text/html; charset=utf-8\r\n"
            f"Content-Length: {len(body)}\r\nConnection: close\r\n\r\n".encode()
            + body
        )
        with contextlib.suppress(OSError, TimeoutError):
            async with asyncio.timeout(_READ_SEC):
                await writer.drain()
        writer.close()

    def _answer(self, request_line: str) -> tuple[str, str]:
        method, target, _version = request_line.split(" ", 2)
        parts = urlsplit(target)
        query = {k: v[0] for k, v in parse_qs(parts.query).items()}
        if method != "GET" or parts.path != CALLBACK_PATH or query.get("state") != self._state:
            return "400 Bad Request", "This is not a sign-in reply."
        if self._done is None or self._done.done():
            return "200 OK", "This sign-in is over; you can close this page."
        if "error" in query:
            self._done.set_exception(LoginFailed(f"the sign-in was refused: {query['error'][:200]}"))
            return "200 OK", "The sign-in was refused; you can close this page."
        if not query.get("code"):
            self._done.set_exception(LoginFailed("the sign-in reply carries no code"))
            return "400 Bad Request", "The sign-in reply carries no code."
        self._done.set_result(
            AuthorizationCodeResult(code=query["code"], state=query["state"], iss=query.get("iss"))
        )
        return "200 OK", "Signed in. You can close this page and return to your editor."
