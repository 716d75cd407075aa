"""OAuth 2.1 for streamable HTTP MCP servers, on the MCP SDK's own client auth.

Every HTTP server without a static `Authorization` header gets the SDK's `OAuthClientProvider`: a
server that never answers 401 is unaffected; one that does is signed in to with what the SDK does
(protected-resource and authorization-server metadata discovery, a client ID metadata document or
dynamic registration or the pre-registered client of the `oauth` setting, PKCE, the scopes from
`WWW-Authenticate`, step-up on `insufficient_scope`, refresh). This module supplies the three parts
the SDK leaves to its user:

- the token store, `tokens.FileTokenStorage` (the user's state folder, per server URL);
- the browser step: the session asking (the one calling, else the one starting the server) is asked
  to open the authorization URL (`Person.open_url`); with no session there, the sign-in fails at once;
- the redirect: `callback.Listener` on 127.0.0.1, started only for the sign-in, bounded by
  `callback.LOGIN_WAIT_SEC`. Its port is fixed per connection (the `oauth.callbackPort` setting, else
  the port a stored registration was made with, else a free one) so that `redirect_uris` match it.

A token the server refuses leads to one new sign-in, and the request is retried once; a second
refusal fails that request with the server's answer (no loop).
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
from collections.abc import Callable
from contextlib import AbstractContextManager
from urllib.parse import parse_qs, urlsplit

from mcp.client.auth import OAuthClientProvider
from mcp.shared.auth import AuthorizationCodeResult, OAuthClientInformationFull, OAuthClientMetadata

from mini_agent.tools.mcp import callback, sdk_compat
from mini_agent.tools.mcp.asking import Asking
from mini_agent.tools.mcp.config import HttpMcpServer, OAuthSettings
from mini_agent.tools.mcp.tokens import FileTokenStorage

log = logging.getLogger("mini_agent.mcp")

CLIENT_NAME = "mini-agent"

OffClock = Callable[[], AbstractContextManager[None]]


def provider(
    config: HttpMcpServer, asking: Asking, off_clock: OffClock | None = None
) -> OAuthClientProvider | None:
    """The auth for `config`'s HTTP client; None where a static `Authorization` header is set.
    `off_clock` holds the server's start bound while the person signs in."""
    if any(h.name.lower() == "authorization" for h in config.headers):
        return None
    settings = config.oauth or OAuthSettings()
    client = pre_registered(config.name, settings)
    storage = FileTokenStorage(config.url, client=client)
    port = settings.callback_port or stored_port(storage) or callback.free_port()
    login = Login(config.name, asking, callback.Listener(port), off_clock)
    metadata = OAuthClientMetadata(
        redirect_uris=[callback.redirect_uri(port)],  # type: ignore[list-item]  # pydantic parses it
        client_name=CLIENT_NAME,
        scope=" ".join(settings.scopes) if settings.scopes else None,
        token_endpoint_auth_method=client.token_endpoint_auth_method if client else None,  # type: ignore[arg-type]
    )
    return sdk_compat.ExpiryAware(
        config.url,
        metadata,
        storage,
        redirect_handler=login.open,
        callback_handler=login.wait,
        client_metadata_url=settings.client_metadata_url,
    )


def pre_registered(server: str, settings: OAuthSettings) -> OAuthClientInformationFull | None:
    """The configured client, its secret read from the variable `clientSecretEnv` names."""
    if settings.client_id is None:
        return None
    secret = None
    if settings.client_secret_env is not None:
        secret = os.environ.get(settings.client_secret_env)
        if not secret:
            raise ValueError(
                f"MCP server '{server}': oauth.clientSecretEnv names {settings.client_secret_env}, "
                "which is not set in the daemon's environment"
            )
    return OAuthClientInformationFull(
        client_id=settings.client_id,
        client_secret=secret,
        token_endpoint_auth_method="client_secret_basic" if secret else "none",
    )


def stored_port(storage: FileTokenStorage) -> int | None:
    """The loopback port a stored registration's redirect URI names, so a new sign-in matches it."""
    client = storage.stored_client()
    for uri in (client.redirect_uris or []) if client else []:
        parts = urlsplit(str(uri))
        if parts.hostname == callback.HOST and parts.path == callback.CALLBACK_PATH and parts.port:
            return parts.port
    return None


class Login:
    """The person's part of one connection's sign-ins: open the page, wait for the redirect."""

    def __init__(
        self,
        server: str,
        asking: Asking,
        listener: callback.Listener,
        off_clock: OffClock | None,
        wait: float = callback.LOGIN_WAIT_SEC,
    ):
        self.server = server
        self.asking = asking
        self.listener = listener
        self._off_clock = off_clock or contextlib.nullcontext
        self._paused: contextlib.ExitStack | None = None
        self._wait = wait  # for the whole sign-in: the client's answer to "open this" and the redirect
        self._deadline = 0.0

    async def open(self, url: str) -> None:
        """Start the listener and ask the session's person to open `url`."""
        session = self.asking.session()
        if session is None:
            raise callback.LoginFailed(
                f"MCP server '{self.server}' needs a sign-in and no session is there to ask"
            )
        state = parse_qs(urlsplit(url).query).get("state", [""])[0]
        await self.listener.start(state)
        self._paused = contextlib.ExitStack()
        self._paused.enter_context(self._off_clock())
        loop = asyncio.get_running_loop()
        self._deadline = loop.time() + self._wait
        purpose = f"Sign in to MCP server '{self.server}'"
        try:
            async with asyncio.timeout_at(self._deadline):
                opened = await self.asking.person.open_url(session, url, purpose)
        except BaseException as exc:
            await self._end()
            if isinstance(exc, TimeoutError):
                raise callback.LoginFailed(
                    f"MCP server '{self.server}': no sign-in within {self._wait:g} s"
                ) from None
            raise
        # Not opened: the door has shown the link in words where it can; the wait is bounded.
        log.info(
            "MCP server '%s' sign-in: the client %s the page",
            self.server,
            "opened" if opened else "did not open",
        )

    async def wait(self) -> AuthorizationCodeResult:
        """The redirect's code, within what is left of the sign-in's bound (`callback.LOGIN_WAIT_SEC`
        from opening the page); the listener stops either way."""
        left = max(self._deadline - asyncio.get_running_loop().time(), 0.0)
        try:
            return await self.listener.result(wait=left)
        except callback.LoginFailed as exc:
            raise callback.LoginFailed(f"MCP server '{self.server}': {exc}") from None
        finally:
            await self._end()

    async def _end(self) -> None:
        paused, self._paused = self._paused, None
        if paused is not None:
            paused.close()
        await self.listener.stop()
