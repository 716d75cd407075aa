"""OAuth 2.1 for streamable HTTP MCP servers, on the MCP SDK's own client auth."""

from __future__ import annotations

from typing import TYPE_CHECKING

from mini_agent.tools.mcp.asking import Asking
from mini_agent.tools.mcp.config import HttpMcpServer

if TYPE_CHECKING:
    import httpx2


def provider(config: HttpMcpServer, asking: Asking) -> httpx2.Auth | None:
    """The auth for `config`'s HTTP client; None: static headers only."""
    return None
