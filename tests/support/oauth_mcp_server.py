"""An OAuth-protected streamable HTTP MCP server for the tests (run as a script), built on the MCP SDK's
own authorization-server and bearer-auth pieces:
`python oauth_mcp_server.py PORT RECORD [--open | --reject | --short-lived] [--host ::1]`.

It serves, on 127.0.0.1:PORT (or HOST), both the authorization server (metadata, dynamic registration, an
`/authorize` that approves at once and redirects back with a code, `/token`) and the MCP endpoint
`/mcp`, which answers 401 without a valid bearer token (`--reject`: with any token; `--short-lived`: tokens
said to last one second). Its tools:
`whoami` says the caller is signed in, `revoke_all` revokes every token issued so far. Every access
and refresh token it issues is appended to RECORD (one per line), so a test can look for them where
they must not be.
"""

from __future__ import annotations

import secrets
import sys
import time
from pathlib import Path

import uvicorn
from mcp.server.auth.provider import (
    AccessToken,
    AuthorizationCode,
    AuthorizationParams,
    RefreshToken,
    construct_redirect_uri,
)
from mcp.server.auth.settings import AuthSettings, ClientRegistrationOptions
from mcp.server.mcpserver.server import MCPServer
from mcp.shared.auth import OAuthClientInformationFull, OAuthToken

PORT = int(sys.argv[1])
RECORD = Path(sys.argv[2])
# Listened on and advertised; `--host ::1` keeps the sign-in page off 127.0.0.1 (code-server proxies that).
HOST = sys.argv[sys.argv.index("--host") + 1] if "--host" in sys.argv else "127.0.0.1"
BASE = f"http://[{HOST}]:{PORT}" if ":" in HOST else f"http://{HOST}:{PORT}"
REJECT = "--reject" in sys.argv  # every token is refused, even one just issued
EXPIRES_IN = 1 if "--short-lived" in sys.argv else 3600  # seconds an access token is said to last


class ApprovingProvider:
    """An in-memory authorization server that approves every request at once."""

    def __init__(self) -> None:
        self.clients: dict[str, OAuthClientInformationFull] = {}
        self.codes: dict[str, AuthorizationCode] = {}
        self.access: dict[str, AccessToken] = {}
        self.refresh: dict[str, RefreshToken] = {}

    async def get_client(self, client_id: str) -> OAuthClientInformationFull | None:
        return self.clients.get(client_id)

    async def register_client(self, client_info: OAuthClientInformationFull) -> None:
        assert client_info.client_id is not None
        self.clients[client_info.client_id] = client_info

    async def authorize(self, client: OAuthClientInformationFull, params: AuthorizationParams) -> str:
        code = secrets.token_urlsafe(16)
        self.codes[code] = AuthorizationCode(
            code=code,
            scopes=params.scopes or [],
            expires_at=time.time() + 300,
            client_id=client.client_id or "",
            code_challenge=params.code_challenge,
            redirect_uri=params.redirect_uri,
            redirect_uri_provided_explicitly=params.redirect_uri_provided_explicitly,
            resource=params.resource,
        )
        return construct_redirect_uri(str(params.redirect_uri), code=code, state=params.state)

    async def load_authorization_code(
        self, client: OAuthClientInformationFull, code: str
    ) -> AuthorizationCode | None:
        return self.codes.get(code)

    async def exchange_authorization_code(
        self, client: OAuthClientInformationFull, authorization_code: AuthorizationCode
    ) -> OAuthToken:
        self.codes.pop(authorization_code.code, None)
        return self._issue(client.client_id or "", authorization_code.scopes, authorization_code.resource)

    async def load_refresh_token(
        self, client: OAuthClientInformationFull, refresh_token: str
    ) -> RefreshToken | None:
        return self.refresh.get(refresh_token)

    async def exchange_refresh_token(
        self, client: OAuthClientInformationFull, refresh_token: RefreshToken, scopes: list[str]
    ) -> OAuthToken:
        self.refresh.pop(refresh_token.token, None)
        return self._issue(client.client_id or "", scopes or refresh_token.scopes, refresh_token.resource)

    async def load_access_token(self, token: str) -> AccessToken | None:
        return None if REJECT else self.access.get(token)

    async def revoke_token(self, token: AccessToken | RefreshToken) -> None:
        self.access.pop(token.token, None)
        self.refresh.pop(token.token, None)

    def _issue(self, client_id: str, scopes: list[str], resource: str | None) -> OAuthToken:
        access, refresh = f"at-{secrets.token_hex(16)}", f"rt-{secrets.token_hex(16)}"
        self.access[access] = AccessToken(token=access, client_id=client_id, scopes=scopes, resource=resource)
        self.refresh[refresh] = RefreshToken(
            token=refresh, client_id=client_id, scopes=scopes, resource=resource
        )
        with RECORD.open("a") as record:
            record.write(f"{access}\n{refresh}\n")
        return OAuthToken(
            access_token=access, refresh_token=refresh, expires_in=EXPIRES_IN, scope=" ".join(scopes) or None
        )


provider = ApprovingProvider()
settings = AuthSettings(
    issuer_url=BASE,  # type: ignore[arg-type]
    resource_server_url=f"{BASE}/mcp",  # type: ignore[arg-type]
    client_registration_options=ClientRegistrationOptions(enabled=True),
    validate_token_resource=True,
)
server = (
    MCPServer(name="open-test")  # `--open`: the same tool with no sign-in at all
    if "--open" in sys.argv
    else MCPServer(name="oauth-test", auth_server_provider=provider, auth=settings)
)


@server.tool()
def whoami() -> str:
    """Say that the caller is signed in."""
    return "signed in"


@server.tool()
def revoke_all() -> str:
    """Revoke every token issued so far: the next request with one is refused."""
    provider.access.clear()
    provider.refresh.clear()
    return "revoked"


if __name__ == "__main__":
    uvicorn.run(server.streamable_http_app(), host=HOST, port=PORT, log_level="warning")
