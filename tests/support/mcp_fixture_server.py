"""A small MCP server for the tests (run as a script): it records its pid, can die mid-call, can
grow its tool list at runtime, which no published server does on demand, logs the start and the
cancellation of a slow call, reports progress on request, tries a TCP connection on request
(`connect`), and with `--stubborn` outlives the end of its stdin and ignores SIGTERM, as a badly
written server may."""

from __future__ import annotations

import os
import signal
import socket
import sys
import time
from pathlib import Path
from typing import Any

import anyio
import mcp_types as types
from mcp.server.context import ServerRequestContext
from mcp.server.lowlevel import Server
from mcp.server.stdio import stdio_server

PIDS = Path(sys.argv[1])  # one line per start, so a test can count restarts and look for orphans
EVENTS = PIDS.with_suffix(".events")  # "started" and "cancelled" lines of `slow` calls
TOOLS = {
    "ping": types.Tool(
        name="ping",
        description="Answer pong.",
        input_schema={"type": "object", "properties": {}},
        annotations=types.ToolAnnotations(read_only_hint=True),
    ),
    "die": types.Tool(name="die", description="Exit mid-call.", input_schema={"type": "object"}),
    "grow": types.Tool(name="grow", description="Add a tool.", input_schema={"type": "object"}),
    "slow": types.Tool(name="slow", description="Take a minute.", input_schema={"type": "object"}),
    "big": types.Tool(name="big", description="Answer 5000 bytes.", input_schema={"type": "object"}),
    "connect": types.Tool(
        name="connect",
        description="Open a TCP connection to 127.0.0.1:`port` and say what happened.",
        input_schema={"type": "object", "properties": {"port": {"type": "integer"}}},
    ),
    "report": types.Tool(
        name="report",
        description="Report progress `times` times, `every` seconds apart, then wait `hang` seconds.",
        input_schema={
            "type": "object",
            "properties": {
                "times": {"type": "integer"},
                "every": {"type": "number"},
                "hang": {"type": "number"},
            },
        },
    ),
}


def event(line: str) -> None:
    with EVENTS.open("a") as handle:
        handle.write(line + "\n")


async def list_tools(ctx: ServerRequestContext[Any], params: Any) -> types.ListToolsResult:
    return types.ListToolsResult(tools=list(TOOLS.values()))


async def call_tool(
    ctx: ServerRequestContext[Any], params: types.CallToolRequestParams
) -> types.CallToolResult:
    if params.name == "die":
        sys.stderr.write("fixture: giving up on purpose\n")
        sys.stderr.flush()
        os._exit(7)
    if params.name == "grow":
        TOOLS["extra"] = types.Tool(name="extra", description="Added later.", input_schema={"type": "object"})
        await ctx.session.send_tool_list_changed()
        return types.CallToolResult(content=[types.TextContent(text="grown")])
    if params.name == "big":
        return types.CallToolResult(content=[types.TextContent(text="x" * 5000)])
    if params.name == "connect":
        port = int((params.arguments or {}).get("port", 0))
        try:
            socket.create_connection(("127.0.0.1", port), timeout=5).close()
            said = "connected"
        except OSError as exc:
            said = f"refused: {exc}"
        return types.CallToolResult(content=[types.TextContent(text=said)])
    if params.name == "report":
        arguments = params.arguments or {}
        times = int(arguments.get("times", 3))
        for index in range(1, times + 1):
            await ctx.session.report_progress(index, times, f"step {index} of {times}")
            await anyio.sleep(float(arguments.get("every", 0.3)))
        await anyio.sleep(float(arguments.get("hang", 0)))
        return types.CallToolResult(content=[types.TextContent(text=f"reported {times} times")])
    if params.name == "slow":
        event("started")
        try:
            await anyio.sleep(60)
        except anyio.get_cancelled_exc_class():
            event("cancelled")
            raise
    return types.CallToolResult(content=[types.TextContent(text=f"pong from {os.getpid()}")])


async def main() -> None:
    with PIDS.open("a") as handle:
        handle.write(f"{os.getpid()}\n")
    server = Server("fixture", on_list_tools=list_tools, on_call_tool=call_tool)
    async with stdio_server() as (read, write):
        await server.run(read, write, server.create_initialization_options())
    if "--stubborn" in sys.argv:
        signal.signal(signal.SIGTERM, signal.SIG_IGN)
        time.sleep(3600)


anyio.run(main)
