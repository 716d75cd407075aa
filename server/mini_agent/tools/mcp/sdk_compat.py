"""Every use of a private member of the MCP SDK (and of anyio under it), in one place.

Where the MCP client needs more than the SDK's public API, the access is made here and nowhere else.
Each bend has a test in `tests/unit/tools/test_mcp_sdk_compat.py` that fails when an SDK release
changes what it relies on; pyproject pins `mcp` to `MCP_MINOR`, the minor version those tests were
written for. The module imports the SDK, so it is loaded off the event loop with the rest of it
(`connection._SDK`).

The bends, and why:

1. `mcp.client.stdio._create_platform_compatible_process` is the module global `stdio_client` calls to
   spawn the server. `install_stdio_hooks` wraps it so the session reads the server's stdout through
   `stdio.Lines`: whole lines found in linear time, each bounded. The SDK joins every chunk to the
   partial line before it, quadratic in the length of a message spread over many chunks, and has no
   bound; a linear split with a bound is a change worth offering upstream (`stdio_client`'s reader),
   after which this bend goes.
2. `mcp.client.stdio._parse_line` is the global that turns one line into a message. It is wrapped so a
   line nested deeper than the SDK's JSON parser reads is read with Python's (`stdio.parse_deep`).
3. anyio's `Process._process`, the asyncio process under it: the SDK's shutdown walks to it to close
   the subprocess transport, so the framed process that stands in for anyio's (`stdio.FramedProcess`)
   carries it too (`asyncio_process`).
4. `OAuthClientProvider._initialize` loads the stored tokens before the first request. `ExpiryAware`
   overrides it to learn when those tokens expire, which the SDK learns only from a token response, so
   a token that expired while no daemon ran is refreshed rather than sent.
5. `mcp.shared._httpx_utils.create_mcp_http_client` is the SDK's HTTP client with its transports'
   timeouts, in a private module (its own `session_group` imports it from there). `http_client` is the
   one place it is named.

Everything else keeps to the SDK's public API: `stdio_client`, `streamable_http_client`,
`ClientSession` and its callbacks, `OAuthClientProvider` and `TokenStorage`.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import httpx2
from mcp.client import stdio
from mcp.client.auth import OAuthClientProvider
from mcp.shared import _httpx_utils

MCP_MINOR = "2.3"  # the SDK these bends were written and tested for

Wrap = Callable[[Callable[..., Any]], Callable[..., Any]]

_HOOKED = ("_create_platform_compatible_process", "_parse_line")
_sdk_own: dict[str, Callable[..., Any]] = {}  # the SDK's functions, once wrapped


def install_stdio_hooks(spawn: Wrap, parse: Wrap) -> None:
    """Wrap the SDK's process creation (bend 1) and line parsing (bend 2), once for the process: each
    wrapper is given the SDK's own function."""
    if _sdk_own:
        return
    _sdk_own.update({name: getattr(stdio, name) for name in _HOOKED})
    stdio._create_platform_compatible_process = spawn(_sdk_own["_create_platform_compatible_process"])
    stdio._parse_line = parse(_sdk_own["_parse_line"])


def sdk_own(name: str) -> Callable[..., Any]:
    """The SDK's own function behind a hook (bends 1 and 2), whether or not it is wrapped yet."""
    return _sdk_own.get(name) or getattr(stdio, name)


def asyncio_process(process: object) -> object | None:
    """What anyio keeps under its `Process` (bend 3); None where there is none (trio, Windows)."""
    return getattr(process, "_process", None)


class ExpiryAware(OAuthClientProvider):
    """The SDK's provider, knowing when stored tokens expire (bend 4)."""

    async def _initialize(self) -> None:
        await super()._initialize()
        if self.context.current_tokens is not None:
            self.context.update_token_expiry(self.context.current_tokens)


def http_client(headers: dict[str, str], auth: httpx2.Auth | None) -> httpx2.AsyncClient:
    """The SDK's HTTP client for streamable HTTP (bend 5)."""
    return _httpx_utils.create_mcp_http_client(headers=headers, auth=auth)
