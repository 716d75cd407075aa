"""The loopback listener an OAuth sign-in comes back to: `http://127.0.0.1:<port>/callback`.

It runs only for one sign-in, on aiohttp's server: started before the person is sent to the
authorization page, stopped when the redirect has come back, failed, or `LOGIN_WAIT_SEC` has passed
(its connections go with it, so none outlives that bound). It answers only a GET of `CALLBACK_PATH`
carrying the `state` of this sign-in (anything else gets a 400 and is otherwise ignored), takes request
lines and header fields of at most `MAX_REQUEST_BYTES`, and answers the browser with a short page.
"""

from __future__ import annotations

import asyncio
import contextlib
import html
import socket

from aiohttp import web
from mcp.shared.auth import AuthorizationCodeResult

HOST = "127.0.0.1"
CALLBACK_PATH = "/callback"
# How long a sign-in may take, from opening the page to the redirect; past it the server's start
# (or the call that needed the sign-in) fails with "no sign-in within … s".
LOGIN_WAIT_SEC = 300.0
MAX_REQUEST_BYTES = 16 << 10  # of a request's line, and of each header field; a larger one gets a 400
_STOP_SEC = 5.0  # for the listener to close, open connections included

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
        self._runner: web.AppRunner | None = None
        self._state = ""
        self._done: asyncio.Future[AuthorizationCodeResult] | None = None

    async def start(self, state: str) -> None:
        await self.stop()
        self._state = state
        self._done = asyncio.get_running_loop().create_future()
        app = web.Application()
        app.router.add_route("*", "/{tail:.*}", self._serve)
        runner = web.AppRunner(
            app,
            handle_signals=False,
            access_log=None,
            shutdown_timeout=_STOP_SEC,
            max_line_size=MAX_REQUEST_BYTES,
            max_field_size=MAX_REQUEST_BYTES,
        )
        await runner.setup()
        try:
            await web.TCPSite(runner, HOST, self.port).start()
        except BaseException:
            await runner.cleanup()
            raise
        self._runner = runner

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
        runner, self._runner = self._runner, None
        if runner is not None:
            with contextlib.suppress(TimeoutError):
                async with asyncio.timeout(_STOP_SEC * 2):
                    await runner.cleanup()

    async def _serve(self, request: web.Request) -> web.Response:
        status, text = self._answer(request)
        return web.Response(status=status, text=_PAGE.format(html.escape(text)), content_type="text/html")

    def _answer(self, request: web.Request) -> tuple[int, str]:
        query = request.query
        if request.method != "GET" or request.path != CALLBACK_PATH or query.get("state") != self._state:
            return 400, "This is not a sign-in reply."
        if self._done is None or self._done.done():
            return 200, "This sign-in is over; you can close this page."
        if "error" in query:
            self._done.set_exception(LoginFailed(f"the sign-in was refused: {query['error'][:200]}"))
            return 200, "The sign-in was refused; you can close this page."
        if not query.get("code"):
            self._done.set_exception(LoginFailed("the sign-in reply carries no code"))
            return 400, "The sign-in reply carries no code."
        self._done.set_result(
            AuthorizationCodeResult(code=query["code"], state=query["state"], iss=query.get("iss"))
        )
        return 200, "Signed in. You can close this page and return to your editor."
