"""`mini-agent mcp --http [HOST:]PORT`: the tool server over Streamable HTTP (the SDK's transport).

Bound to 127.0.0.1 unless a host is given; a host that is not loopback is served with a warning.
The SDK's DNS-rebinding protection admits only `Host`/`Origin` headers naming the bound host (the
loopback names when bound to loopback). With `MINI_AGENT_MCP_TOKEN` set (read from the environment,
never from the command line), a request without `Authorization: Bearer <that token>` gets 401 and
`WWW-Authenticate: Bearer`. Once listening, the URL goes to stderr (port 0: the one picked).
"""

from __future__ import annotations

import hmac
import ipaddress
import logging
import socket
import sys
from typing import Any

import anyio
import uvicorn
from mcp.server.lowlevel import Server
from mcp.server.transport_security import TransportSecuritySettings
from starlette.responses import PlainTextResponse
from starlette.types import ASGIApp, Receive, Scope, Send

log = logging.getLogger(__name__)

DEFAULT_HOST = "127.0.0.1"
ENDPOINT = "/mcp"
LOOPBACK_NAMES = ("127.0.0.1", "localhost", "[::1]")
START_TIMEOUT_SEC = 30.0  # starting the server once bound; past it `mini-agent mcp` exits with 1
STARTED_POLL_SEC = 0.05
BACKLOG = 128  # connections waiting to be accepted


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


async def serve_http(server: Server[Any], address: str, *, token: str | None) -> None:
    """Serve `server` on `address` until cancelled or interrupted."""
    host, port = parse_address(address)
    listening = _bind(host, port)
    if not is_loopback(host):
        unguarded = "" if token else " (set MINI_AGENT_MCP_TOKEN to require a token)"
        log.warning("serving on %s, which is not a loopback address: whoever reaches it can call the tools%s",
                    host, unguarded)  # fmt: skip
    app: ASGIApp = server.streamable_http_app(
        streamable_http_path=ENDPOINT, host=host, transport_security=security(host)
    )
    if token:
        app = BearerToken(app, token)
    web = uvicorn.Server(uvicorn.Config(app, log_level="warning", lifespan="on"))
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
