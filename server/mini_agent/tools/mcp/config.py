"""How an MCP server is described to this source: started over stdio, or reached over streamable HTTP.

The shapes are ACP's `McpServerStdio` / `McpServerHttp` plus `requiresApproval`, `startTimeoutSec` and
`firstTurnTimeoutSec`; the LSP door, the ACP door and the workspace file all hand servers over in this form.
"""

from __future__ import annotations

from typing import Any, Literal

from pydantic import Field

from mini_agent.core.strict import parse
from mini_agent.plumbing.wiremodel import Params

START_TIMEOUT_SEC = 60.0  # initialize plus the first complete tools/list, unless a server says otherwise
MAX_START_TIMEOUT_SEC = 600.0
# How long a session's first model turn waits for the server while it is still starting; the session
# itself never waits (it begins at once), and the server goes on starting up to its start bound.
FIRST_TURN_TIMEOUT_SEC = 10.0
# true: tools ask unless annotated readOnlyHint (and not destructiveHint); false: none asks;
# "always": every tool asks, whatever its annotations say.
Approval = bool | Literal["always"]


class NameValue(Params):
    name: str = Field(min_length=1)
    value: str


class StdioMcpServer(Params):
    """An MCP server we start as a subprocess."""

    type: Literal["stdio"] = "stdio"
    name: str = Field(min_length=1)
    command: str = Field(min_length=1)
    args: list[str] = Field(default_factory=list)
    env: list[NameValue] = Field(default_factory=list)
    requires_approval: Approval = True
    start_timeout_sec: float = Field(default=START_TIMEOUT_SEC, gt=0, le=MAX_START_TIMEOUT_SEC)
    first_turn_timeout_sec: float = Field(default=FIRST_TURN_TIMEOUT_SEC, ge=0, le=MAX_START_TIMEOUT_SEC)
    # The server's sandbox (docs/sandbox.md): the network (most servers need it), and where it may write
    # beyond the workspace, the temp folder and its usual state (~/.cache, ~/.npm, ~/.local/state).
    network: bool = True
    writable: list[str] = Field(default_factory=list)


class OAuthSettings(Params):
    """How this client signs in to an HTTP server behind OAuth, where the defaults (dynamic
    registration, the scopes the server asks for) do not fit: a pre-registered client, a client ID
    metadata document, fixed scopes, a fixed port for the loopback redirect listener."""

    client_id: str | None = Field(default=None, min_length=1)
    # The name of the environment variable holding a pre-registered client's secret, never the secret.
    client_secret_env: str | None = Field(default=None, min_length=1)
    scopes: list[str] | None = None
    client_metadata_url: str | None = Field(default=None, min_length=1)
    callback_port: int | None = Field(default=None, ge=1, le=65535)


class HttpMcpServer(Params):
    """An MCP server reached over streamable HTTP. Without an `Authorization` header, a 401 from it
    starts an OAuth login (`tools.mcp.auth`); `oauth` tunes that login."""

    type: Literal["http"]
    name: str = Field(min_length=1)
    url: str = Field(min_length=1)
    headers: list[NameValue] = Field(default_factory=list)
    oauth: OAuthSettings | None = None
    requires_approval: Approval = True
    start_timeout_sec: float = Field(default=START_TIMEOUT_SEC, gt=0, le=MAX_START_TIMEOUT_SEC)
    first_turn_timeout_sec: float = Field(default=FIRST_TURN_TIMEOUT_SEC, ge=0, le=MAX_START_TIMEOUT_SEC)


McpServer = StdioMcpServer | HttpMcpServer
# What a session may set for itself without naming another server: not part of a server's identity.
PER_SESSION = frozenset({"first_turn_timeout_sec"})


def server_key(config: McpServer) -> str:
    """The identity of the server `config` describes: sessions whose configurations agree on it share one."""
    return config.model_dump_json(exclude=set(PER_SESSION))


class _Servers(Params):
    mcp_servers: list[McpServer] = Field(default_factory=list)


def parse_servers(where: str, raw: list[Any]) -> list[McpServer]:
    """A list of server descriptions, refused with the one error every door maps (`InvalidParams`)."""
    return parse(where, {"mcpServers": raw}, _Servers).mcp_servers
