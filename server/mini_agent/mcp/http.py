"""`mini-agent mcp --http [HOST:]PORT`: the tool server over Streamable HTTP (the SDK's transport).

Bound to 127.0.0.1 unless a host is given; a host that is not loopback is served with a warning.
The SDK's DNS-rebinding protection admits only `Host`/`Origin` headers naming the bound host (the
loopback names when bound to loopback). With `MINI_AGENT_MCP_TOKEN` set (read from the environment,
never from the command line), a request without `Authorization: Bearer <that token>` gets 401 and
`WWW-Authenticate: Bearer`. Once listening, the URL goes to stderr (port 0: the one picked).

Held within `HttpBounds` (docs/mcp.md): at most `max_sessions` live MCP sessions, each closed after
`session_idle_sec` with no request in flight (both the SDK's own `StreamableHTTPSessionManager`
limits; `SessionCap` words its refusal), and `header_timeout_sec` for a connection to send a request
(`RequestClock`: uvicorn has no header read timeout, so a connection that sends nothing is otherwise
held for ever).

The SDK is bent in one place, `SessionCap`: it answers a new session past the limit with a bare 503
"Too many open sessions" and logs a warning for every one; the refusal is rewritten to name the cap and
carry `Retry-After`, and the SDK's warning is replaced by one per `CAP_LOG_EVERY_SEC`.
"""

from __future__ import annotations

import asyncio
import hmac
import ipaddress
import json
import logging
import socket
import sys
import time
from typing import Any

import anyio
import uvicorn
from mcp.server.lowlevel import Server
from mcp.server.streamable_http import MCP_SESSION_ID_HEADER
from mcp.server.transport_security import TransportSecuritySettings
from mcp_types import INTERNAL_ERROR
from starlette.responses import PlainTextResponse
from starlette.types import ASGIApp, Message, Receive, Scope, Send
from uvicorn.protocols.http.auto import AutoHTTPProtocol

from mini_agent.mcp.bounds import HttpBounds

log = logging.getLogger(__name__)

DEFAULT_HOST = "127.0.0.1"
ENDPOINT = "/mcp"
LOOPBACK_NAMES = ("127.0.0.1", "localhost", "[::1]")
START_TIMEOUT_SEC = 30.0  # starting the server once bound; past it `mini-agent mcp` exits with 1
STARTED_POLL_SEC = 0.05
BACKLOG = 128  # connections waiting to be accepted
RETRY_AFTER_SEC = 10  # what a new session refused at the cap is told to wait
CAP_LOG_EVERY_SEC = 60.0  # one warning about refusals at the cap per this long, with their count
SDK_MANAGER_LOGGER = "mcp.server.streamable_http_manager"
SDK_REFUSAL_LOG = "Refusing to open a new session"  # the SDK's warning per refusal, replaced by ours


class AddressError(Exception):
    """The `--http` address cannot be served; the message names the part at fault."""


def parse_address(address: str) -> tuple[str, int]:
    """`[HOST:]PORT` → (host, port); the host defaults to 127.0.0.1, `[::1]:PORT` takes IPv6."""
    host, _, port = address.rpartition(":")
    host = host.strip("[]") or DEFAULT_HOST
    try:
        number = int(port)
    except ValueError:
        raise AddressError(f"--http: the port must be a number, got {port!r}") from None
    if not 0 <= number <= 65535:
        raise AddressError(f"--http: the port must be between 0 and 65535, got {number}")
    return host, number


def is_loopback(host: str) -> bool:
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


def security(host: str) -> TransportSecuritySettings:
    """DNS-rebinding protection admitting the names the server is reached by."""
    names = LOOPBACK_NAMES if is_loopback(host) else (f"[{host}]" if ":" in host else host,)
    return TransportSecuritySettings(
        enable_dns_rebinding_protection=True,
        allowed_hosts=[f"{name}:*" for name in names],
        allowed_origins=[f"{scheme}://{name}:*" for name in names for scheme in ("http", "https")],
    )


class BearerToken:
    """ASGI middleware: only requests carrying `Authorization: Bearer <token>` reach `app`."""

    def __init__(self, app: ASGIApp, token: str) -> None:
        self._app = app
        self._expected = f"Bearer {token}".encode()

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "http" and not self._admits(scope):
            refusal = PlainTextResponse(
                "a bearer token is required (Authorization: Bearer ...)",
                status_code=401,
                headers={"WWW-Authenticate": 'Bearer realm="mini-agent mcp"'},
            )
            await refusal(scope, receive, send)
            return
        await self._app(scope, receive, send)

    def _admits(self, scope: Scope) -> bool:
        given = dict(scope.get("headers") or []).get(b"authorization", b"")
        return hmac.compare_digest(given, self._expected)


class SessionCap:
    """ASGI middleware: the SDK's refusal of a new session past `max_sessions` (a bare 503) becomes a
    503 with `Retry-After` and a JSON-RPC error that names the cap; one warning per `CAP_LOG_EVERY_SEC`."""

    def __init__(self, app: ASGIApp, bounds: HttpBounds) -> None:
        self._app = app
        self._bounds = bounds
        self._refused = 0
        self._logged_at = -CAP_LOG_EVERY_SEC
        message = (
            f"too many open MCP sessions: this server holds at most {bounds.max_sessions} "
            f"(mini-agent mcp --max-sessions); a session with no request for {bounds.session_idle_sec:g} s "
            "is closed (--session-idle-sec), and a client can end its own with DELETE"
        )
        error = {
            "code": INTERNAL_ERROR,
            "message": message,
            "data": {"maxSessions": bounds.max_sessions, "retryAfterSec": RETRY_AFTER_SEC},
        }
        refusal = {"jsonrpc": "2.0", "id": None, "error": error}
        self._body = json.dumps(refusal, separators=(",", ":")).encode()

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http" or _header(scope, MCP_SESSION_ID_HEADER.lower().encode()) is not None:
            await self._app(scope, receive, send)
            return
        refusing = False

        async def reworded(message: Message) -> None:
            nonlocal refusing
            if message["type"] == "http.response.start" and message["status"] == 503:
                refusing = True
                return
            if not refusing:
                await send(message)
            elif message["type"] == "http.response.body" and not message.get("more_body", False):
                await self._refuse(send)

        await self._app(scope, receive, reworded)

    async def _refuse(self, send: Send) -> None:
        self._refused += 1
        now = time.monotonic()
        if now - self._logged_at >= CAP_LOG_EVERY_SEC:
            log.warning("refused %d new MCP session(s) at the cap of %d open (--max-sessions)",
                        self._refused, self._bounds.max_sessions)  # fmt: skip
            self._refused, self._logged_at = 0, now
        headers = [
            (b"content-type", b"application/json"),
            (b"content-length", str(len(self._body)).encode()),
            (b"retry-after", str(RETRY_AFTER_SEC).encode()),
        ]
        await send({"type": "http.response.start", "status": 503, "headers": headers})
        await send({"type": "http.response.body", "body": self._body})


class _SdkRefusals(logging.Filter):
    """Drops the SDK's warning per refused session (`SessionCap` logs them together)."""

    def filter(self, record: logging.LogRecord) -> bool:
        return not str(record.msg).startswith(SDK_REFUSAL_LOG)


_SDK_REFUSALS = _SdkRefusals()
Peer = tuple[str, int]


class RequestClock:
    """Drops a connection that does not send a request in time: `seconds` for a request's head, from when
    the connection opens or its previous response ends, and `seconds` again for the body the head
    announces. uvicorn times out only an idle kept-alive connection, never one that sends nothing or
    a byte at a time (slowloris), so the clock sits on both sides of it: `protocol` wraps uvicorn's
    protocol (asyncio's interface only) to start the clock when a connection opens and drop it when
    its time is up; `app` wraps the ASGI app, where a request's head has arrived, to stop or restart
    it. The two meet on the peer address (uvicorn's `scope["client"]`, so proxy headers must be off)."""

    def __init__(self, seconds: float) -> None:
        self.seconds = seconds
        self._open: dict[Peer, tuple[asyncio.Transport, asyncio.TimerHandle | None]] = {}

    def protocol(self, inner: type[asyncio.Protocol]) -> type[asyncio.Protocol]:
        """A protocol class for `uvicorn.Config(http=...)`: `inner`, with the clock started per connection."""
        clock = self

        class Clocked(asyncio.Protocol):
            def __init__(self, **options: Any) -> None:
                self._inner = inner(**options)
                self._peer: Peer | None = None

            def connection_made(self, transport: asyncio.BaseTransport) -> None:
                self._peer = clock._opened(transport)
                self._inner.connection_made(transport)

            def connection_lost(self, exc: Exception | None) -> None:
                if self._peer is not None:
                    clock._closed(self._peer)
                self._inner.connection_lost(exc)

            def data_received(self, data: bytes) -> None:
                self._inner.data_received(data)

            def eof_received(self) -> bool | None:
                return self._inner.eof_received()

            def pause_writing(self) -> None:
                self._inner.pause_writing()

            def resume_writing(self) -> None:
                self._inner.resume_writing()

        return Clocked

    def app(self, inner: ASGIApp) -> ASGIApp:
        """`inner`, the clock stopped for a request that has arrived and restarted once it is answered."""

        async def clocked(scope: Scope, receive: Receive, send: Send) -> None:
            peer = _peer(scope.get("client")) if scope["type"] == "http" else None
            if peer is None or peer not in self._open:
                await inner(scope, receive, send)
                return
            if _has_body(scope):
                self._start(peer)  # the body's own time
            else:
                self._stop(peer)

            async def watched() -> Message:
                message = await receive()
                if message["type"] != "http.request" or not message.get("more_body", False):
                    self._stop(peer)
                return message

            try:
                await inner(scope, watched, send)
            finally:
                self._start(peer)  # the next request's head

        return clocked

    def _opened(self, transport: asyncio.BaseTransport) -> Peer | None:
        peer = _peer(transport.get_extra_info("peername"))
        if peer is not None and isinstance(transport, asyncio.Transport):
            self._open[peer] = (transport, None)
            self._start(peer)
        return peer

    def _closed(self, peer: Peer) -> None:
        self._stop(peer)
        self._open.pop(peer, None)

    def _start(self, peer: Peer) -> None:
        if peer in self._open:
            self._stop(peer)
            transport, _ = self._open[peer]
            timer = asyncio.get_running_loop().call_later(self.seconds, self._expired, peer)
            self._open[peer] = (transport, timer)

    def _stop(self, peer: Peer) -> None:
        if (held := self._open.get(peer)) is not None and held[1] is not None:
            held[1].cancel()
            self._open[peer] = (held[0], None)

    def _expired(self, peer: Peer) -> None:
        if (held := self._open.pop(peer, None)) is not None:
            log.debug("dropped %s:%d: no request within %g s (--header-timeout-sec)", *peer, self.seconds)
            held[0].abort()


def _peer(address: object) -> Peer | None:
    """(host, port) of a socket address, as uvicorn puts it in `scope["client"]`."""
    if isinstance(address, list | tuple) and len(address) >= 2:
        return str(address[0]), int(address[1])
    return None


def _header(scope: Scope, name: bytes) -> bytes | None:
    return next((value for key, value in scope.get("headers") or [] if key == name), None)


def _has_body(scope: Scope) -> bool:
    length = _header(scope, b"content-length")
    return _header(scope, b"transfer-encoding") is not None or (length is not None and length.strip() != b"0")


async def serve_http(
    server: Server[Any], address: str, *, token: str | None, bounds: HttpBounds | None = None
) -> None:
    """Serve `server` on `address` within `bounds` (the defaults when None) until cancelled or interrupted."""
    bounds = bounds or HttpBounds()
    host, port = parse_address(address)
    listening = _bind(host, port)
    if not is_loopback(host):
        unguarded = "" if token else " (set MINI_AGENT_MCP_TOKEN to require a token)"
        log.warning("serving on %s, which is not a loopback address: whoever reaches it can call the tools%s",
                    host, unguarded)  # fmt: skip
    app: ASGIApp = server.streamable_http_app(
        streamable_http_path=ENDPOINT,
        host=host,
        transport_security=security(host),
        max_sessions=bounds.max_sessions,
        session_idle_timeout=bounds.session_idle_sec,
    )
    app = SessionCap(app, bounds)
    logging.getLogger(SDK_MANAGER_LOGGER).addFilter(_SDK_REFUSALS)
    if token:
        app = BearerToken(app, token)
    clock = RequestClock(bounds.header_timeout_sec)
    config = uvicorn.Config(
        clock.app(app),
        log_level="warning",
        lifespan="on",
        http=clock.protocol(AutoHTTPProtocol),
        ws="none",  # an upgraded connection would leave the clock's protocol
        proxy_headers=False,  # scope["client"] stays the socket's peer, which the clock keys on
    )
    web = uvicorn.Server(config)
    async with anyio.create_task_group() as group:
        group.start_soon(web.serve, [listening])
        with anyio.move_on_after(START_TIMEOUT_SEC):
            while not web.started and not web.should_exit:
                await anyio.sleep(STARTED_POLL_SEC)
        if not web.started:
            group.cancel_scope.cancel()
            raise AddressError(f"--http: the server on {host}:{port} did not start")
        shown = f"[{host}]" if ":" in host else host
        bound = listening.getsockname()[1]
        print(f"mini-agent mcp: serving on http://{shown}:{bound}{ENDPOINT}", file=sys.stderr, flush=True)


def _bind(host: str, port: int) -> socket.socket:
    """A listening socket on `host:port`; an address that cannot be bound is an AddressError."""
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    listening = socket.socket(family, socket.SOCK_STREAM)
    try:
        listening.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        listening.bind((host, port))
        listening.listen(BACKLOG)
    except OSError as exc:
        listening.close()
        raise AddressError(f"--http: cannot listen on {host}:{port} ({exc.strerror or exc})") from None
    listening.set_inheritable(False)
    return listening
