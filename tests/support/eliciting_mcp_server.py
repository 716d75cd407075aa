"""An MCP server that asks the person (run as a script, over stdio): `ask_name` elicits a form with a
required `name` and an optional `greeting` (default "hello"), and answers with what came back;
`ask_link` elicits in URL mode. Each answer is also appended to the file named by argv[1], so a
test sees what reached the server, not only what the model was shown."""

from __future__ import annotations

import sys
import uuid
from pathlib import Path

from mcp.server.mcpserver import Context, MCPServer
from pydantic import BaseModel, Field

ANSWERS = Path(sys.argv[1])
server = MCPServer("eliciting")


class Name(BaseModel):
    name: str = Field(title="Name", description="Your name")
    greeting: str = Field(default="hello", title="Greeting")


def record(line: str) -> str:
    with ANSWERS.open("a") as handle:
        handle.write(line + "\n")
    return line


@server.tool(description="Ask the person for their name and greet them.")
async def ask_name(ctx: Context) -> str:
    answer = await ctx.elicit("What is your name?", Name)
    if answer.action == "accept":
        return record(f"{answer.data.greeting} {answer.data.name}")
    return record(answer.action)


@server.tool(description="Ask the person to open a link.")
async def ask_link(ctx: Context) -> str:
    answer = await ctx.elicit_url("Please sign the form", "https://example.com/form", uuid.uuid4().hex)
    return record(f"link {answer.action}")


if __name__ == "__main__":
    server.run("stdio")
