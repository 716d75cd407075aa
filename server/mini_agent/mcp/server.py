"""`mini-agent mcp`: the workspace's reflected functions served to any MCP client (stdio or HTTP).

The same `ToolRegistry` the daemon uses does the work (reflection, argument validation, the isolated
tool host, timeouts, output cap), so a tool behaves the same whether a mini-agent session or Claude
Desktop calls it. The SDK's `stdio_server` points fd 1 at stderr while it serves, and tools run in
host subprocesses whose fd 1 is a capture file, so nothing but MCP messages reaches our stdout.

The SDK is bent in two places, each for an answer it leaves out: its stdio reader takes its lines
from `lines.CheckedLines`, which answers those the reader would drop (not JSON, not JSON-RPC, too
deep), and `name_fields` words its -32602 for params that do not validate with the fields at fault.
`results` turns an observation into a `CallToolResult` (structured content, progress), `watch`
reloads a saved file and tells the clients, `http` serves Streamable HTTP.
"""

from __future__ import annotations

import logging
import os
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any, cast

import anyio
import mcp_types as types
from mcp.server.context import CallNext, HandlerResult, ServerRequestContext
from mcp.server.lowlevel import NotificationOptions, Server
from mcp.server.models import InitializationOptions
from mcp.server.stdio import stdio_server
from mcp.shared.exceptions import MCPError
from pydantic import ValidationError

from mini_agent.app import user_settings
from mini_agent.app.options import ToolHostOptions
from mini_agent.core.strict import invalid
from mini_agent.mcp.bounds import HttpBounds
from mini_agent.mcp.lines import CheckedLines
from mini_agent.mcp.results import call_result, mcp_tool, run_call
from mini_agent.mcp.watch import Clients, Watcher
from mini_agent.plumbing.jsonrpc import INVALID_PARAMS
from mini_agent.plumbing.version import VERSION
from mini_agent.telemetry.config import settings
from mini_agent.tools.registry import RegistrationError, ToolRegistry

log = logging.getLogger("mini_agent.mcp.server")

__all__ = ["build_server", "main", "mcp_tool", "name_fields", "serve"]


class ToolServer(Server[Any]):
    """The SDK's low-level server, announcing `tools.listChanged` (a saved file changes the list)."""

    def create_initialization_options(
        self,
        notification_options: NotificationOptions | None = None,
        experimental_capabilities: dict[str, dict[str, Any]] | None = None,
        extensions: dict[str, dict[str, Any]] | None = None,
    ) -> InitializationOptions:
        options = notification_options or NotificationOptions(tools_changed=True)
        return super().create_initialization_options(options, experimental_capabilities, extensions)


def build_server(registry: ToolRegistry, clients: Clients | None = None) -> Server[Any]:
    async def list_tools(
        ctx: ServerRequestContext[Any], params: types.PaginatedRequestParams | None
    ) -> types.ListToolsResult:
        return types.ListToolsResult(tools=[mcp_tool(spec) for spec in registry.list_tools()])

    async def call_tool(
        ctx: ServerRequestContext[Any], params: types.CallToolRequestParams
    ) -> types.CallToolResult:
        observation = await run_call(registry, ctx, params)
        if observation.logs:
            log.info("%s printed:\n%s", params.name, observation.logs.rstrip())
        return call_result(registry.get(params.name), observation)

    server = ToolServer("mini-agent", version=VERSION, on_list_tools=list_tools, on_call_tool=call_tool)
    server.middleware.append(name_fields)
    if clients is not None:
        server.middleware.append(clients.remember)
    return server


async def name_fields(ctx: ServerRequestContext[Any], call_next: CallNext) -> HandlerResult:
    """Params that do not validate: -32602 with one line per field at fault, where the SDK's own
    message ("Invalid request parameters") names none."""
    try:
        return await call_next(ctx)
    except ValidationError as exc:
        raise MCPError(INVALID_PARAMS, str(invalid(ctx.method, exc))) from None


async def serve(
    root: Path,
    files: Sequence[str],
    *,
    tools: ToolHostOptions,
    http: str | None = None,
    http_bounds: HttpBounds | None = None,
) -> int:
    """Register `files` and serve them (stdio until the client closes stdin, or HTTP on `http`,
    `[HOST:]PORT`, within `http_bounds`); 1 if a file does not register or the address is refused.
    The registry is the daemon's (`ToolHostOptions.registry`): every tool-host setting holds here too."""
    registry = tools.registry(root)
    try:
        for path in files:
            try:
                await registry.register_file(path)
            except RegistrationError as exc:
                print(f"mini-agent mcp: {exc}", file=sys.stderr)
                return 1
        clients = Clients()
        server = build_server(registry, clients)
        async with anyio.create_task_group() as group:
            group.start_soon(Watcher(registry, root, files, clients).run)
            bounds = http_bounds or HttpBounds()
            code = await (_serve_http(server, http, bounds) if http is not None else _serve_stdio(server))
            group.cancel_scope.cancel()
        return code
    finally:
        await registry.aclose()


async def _serve_stdio(server: Server[Any]) -> int:
    lines = CheckedLines(anyio.wrap_file(sys.stdin.buffer).__aiter__())
    async with stdio_server(stdin=cast(Any, lines)) as (read_stream, write_stream):
        lines.answer_with(write_stream)
        await server.run(read_stream, write_stream, server.create_initialization_options())
    return 0


async def _serve_http(server: Server[Any], address: str, bounds: HttpBounds) -> int:
    from mini_agent.mcp.http import AddressError, serve_http

    try:
        await serve_http(server, address, token=os.environ.get("MINI_AGENT_MCP_TOKEN") or None, bounds=bounds)
    except AddressError as exc:
        print(f"mini-agent mcp: {exc}", file=sys.stderr)
        return 1
    return 0


def main(
    root: Path,
    files: Sequence[str],
    *,
    timeout_sec: float | None = None,
    max_output_bytes: int | None = None,
    max_memory_mb: int | None = None,
    http: str | None = None,
    http_bounds: HttpBounds | None = None,
) -> int:
    """Defaults are the daemon's (`initializationOptions.tools`), and so is every other tool-host
    setting (the sandbox: the user's settings, `mini-agent setup --sandbox`, or MINI_AGENT_SANDBOX)."""
    given: dict[str, object] = {
        "timeout_sec": timeout_sec, "max_output_bytes": max_output_bytes, "max_memory_mb": max_memory_mb,
        "sandbox": user_settings.sandbox_choice(),
    }  # fmt: skip
    tools = ToolHostOptions.model_validate({k: v for k, v in given.items() if v is not None}, by_name=True)
    logging.basicConfig(level=logging.INFO, stream=sys.stderr, format="%(levelname)s %(name)s: %(message)s")
    logging.getLogger("mcp").setLevel(logging.WARNING)  # the SDK logs every request at INFO
    traced = settings(None, None, os.environ)
    provider = None
    if traced is not None:  # the MCP SDK's own server spans, each a child of the caller's `_meta` context
        from mini_agent.telemetry.otel import install_global

        provider = install_global(traced)
    try:
        result: int = anyio.run(
            lambda: serve(root, files, tools=tools, http=http, http_bounds=http_bounds)
        )
    finally:
        if provider is not None:
            provider.shutdown()
    return result
