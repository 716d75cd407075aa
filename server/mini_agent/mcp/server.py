"""`mini-agent mcp`: the workspace's reflected functions served to any MCP client over stdio.

The same `ToolRegistry` the daemon uses does the work (reflection, argument validation, the isolated
tool host, timeouts, output cap), so a tool behaves the same whether a mini-agent session or Claude
Desktop calls it. The SDK's `stdio_server` points fd 1 at stderr while it serves, and tools run in
host subprocesses whose fd 1 is a capture file, so nothing but MCP messages reaches our stdout.

The SDK is bent in two places, each for an answer it leaves out: its stdio reader takes its lines
from `lines.CheckedLines`, which answers those the reader would drop (not JSON, not JSON-RPC, too
deep), and `name_fields` words its -32602 for params that do not validate with the fields at fault.
"""

from __future__ import annotations

import itertools
import logging
import os
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any, cast

import anyio
import mcp_types as types
from mcp.server.context import CallNext, HandlerResult, ServerRequestContext
from mcp.server.lowlevel import Server
from mcp.server.stdio import stdio_server
from mcp.shared.exceptions import MCPError
from pydantic import ValidationError

from mini_agent import __version__
from mini_agent.app.options import ToolHostOptions
from mini_agent.core.contracts import ToolCall, ToolSpec
from mini_agent.core.strict import invalid
from mini_agent.mcp.lines import INVALID_PARAMS, CheckedLines
from mini_agent.telemetry.config import settings
from mini_agent.tools.registry import RegistrationError, ToolRegistry

log = logging.getLogger("mini_agent.mcp.server")


def mcp_tool(spec: ToolSpec) -> types.Tool:
    """The MCP `Tool` for a registered workspace function, with the schema `agent/listTools` shows."""
    annotations = types.ToolAnnotations(idempotent_hint=True) if spec.idempotent else None
    return types.Tool(
        name=spec.name,
        title=spec.title,
        description=spec.description,
        input_schema=spec.input_schema,
        annotations=annotations,
    )


def build_server(registry: ToolRegistry) -> Server[Any]:
    call_ids = itertools.count(1)

    async def list_tools(
        ctx: ServerRequestContext[Any], params: types.PaginatedRequestParams | None
    ) -> types.ListToolsResult:
        return types.ListToolsResult(tools=[mcp_tool(spec) for spec in registry.list()])

    async def call_tool(
        ctx: ServerRequestContext[Any], params: types.CallToolRequestParams
    ) -> types.CallToolResult:
        call = ToolCall(id=f"mcp-{next(call_ids)}", name=params.name, arguments=params.arguments or {})
        observation = await registry.execute(call, session_id="mcp")
        if observation.logs:
            log.info("%s printed:\n%s", params.name, observation.logs.rstrip())
        return types.CallToolResult(
            content=[types.TextContent(text=observation.output)], is_error=observation.is_error
        )

    server = Server("mini-agent", version=__version__, on_list_tools=list_tools, on_call_tool=call_tool)
    server.middleware.append(name_fields)
    return server


async def name_fields(ctx: ServerRequestContext[Any], call_next: CallNext) -> HandlerResult:
    """Params that do not validate: -32602 with one line per field at fault, where the SDK's own
    message ("Invalid request parameters") names none."""
    try:
        return await call_next(ctx)
    except ValidationError as exc:
        raise MCPError(INVALID_PARAMS, str(invalid(ctx.method, exc))) from None


async def serve(root: Path, files: Sequence[str], *, timeout_sec: float, max_output_bytes: int) -> int:
    """Register `files` and serve them until the client closes stdin; 1 if a file does not register."""
    registry = ToolRegistry(root, timeout_sec=timeout_sec, max_output_bytes=max_output_bytes)
    try:
        for path in files:
            try:
                await registry.register_file(path)
            except RegistrationError as exc:
                print(f"mini-agent mcp: {exc}", file=sys.stderr)
                return 1
        server = build_server(registry)
        lines = CheckedLines(anyio.wrap_file(sys.stdin.buffer).__aiter__())
        async with stdio_server(stdin=cast(Any, lines)) as (read_stream, write_stream):
            lines.answer_with(write_stream)
            await server.run(read_stream, write_stream, server.create_initialization_options())
        return 0
    finally:
        await registry.aclose()


def main(
    root: Path, files: Sequence[str], *, timeout_sec: float | None = None, max_output_bytes: int | None = None
) -> int:
    """Defaults are the daemon's (`initializationOptions.tools`)."""
    defaults = ToolHostOptions()
    timeout = defaults.timeout_sec if timeout_sec is None else timeout_sec
    cap = defaults.max_output_bytes if max_output_bytes is None else max_output_bytes
    logging.basicConfig(level=logging.INFO, stream=sys.stderr, format="%(levelname)s %(name)s: %(message)s")
    logging.getLogger("mcp").setLevel(logging.WARNING)  # the SDK logs every request at INFO
    traced = settings(None, None, os.environ)
    provider = None
    if traced is not None:  # the MCP SDK's own server spans, each a child of the caller's `_meta` context
        from mini_agent.telemetry.otel import install_global

        provider = install_global(traced)
    try:
        result: int = anyio.run(lambda: serve(root, files, timeout_sec=timeout, max_output_bytes=cap))
    finally:
        if provider is not None:
            provider.shutdown()
    return result
