"""An MCP server that asks the person and does not let go (run as a script, over stdio): its `ask_name`
puts the same form as tests/support/eliciting_mcp_server.py, but the question outlives the call — a
`notifications/cancelled` for the call is ignored for it, as MCP lets a receiver do; `ask_and_go`
puts it and answers its call at once, leaving the question open — so whatever answer comes back,
however late, is appended to the file named by argv[1]. A client that relies on the
server to withdraw its questions is caught by it: only the client can end them."""

from __future__ import annotations

import asyncio
import sys
from pathlib import Path

from mcp.server.mcpserver import Context, MCPServer
from pydantic import BaseModel, Field

ANSWERS = Path(sys.argv[1])
server = MCPServer("stubborn")
_kept: set[asyncio.Task[None]] = set()


class Name(BaseModel):
    name: str = Field(title="Name", description="Your name")


def record(line: str) -> None:
    with ANSWERS.open("a") as handle:
        handle.write(line + "\n")


def _ask(ctx: Context) -> asyncio.Task[None]:
    async def ask() -> None:
        answer = await ctx.elicit("What is your name?", Name)
        record(f"hello {answer.data.name}" if answer.action == "accept" else answer.action)

    task = asyncio.ensure_future(ask())
    _kept.add(task)
    return task


@server.tool(description="Ask the person for their name and greet them.")
async def ask_name(ctx: Context) -> str:
    await asyncio.shield(_ask(ctx))
    return "asked"


@server.tool(description="Ask the person for their name, and go on without waiting.")
async def ask_and_go(ctx: Context) -> str:
    _ask(ctx)
    await asyncio.sleep(0.5)  # the question is out before the call's answer
    return "asked, not waiting"


if __name__ == "__main__":
    server.run("stdio")
