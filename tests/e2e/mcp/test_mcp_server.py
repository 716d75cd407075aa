"""`mini-agent mcp` driven by the official MCP SDK's client over the command's real stdin/stdout."""

from __future__ import annotations

import subprocess
import sys
from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import mcp_types
import pytest
from mcp.client.session import ClientSession
from mcp.client.stdio import StdioServerParameters, stdio_client

from ...support.daemon import daemon_env
from ...support.tools import NOISY

MCP_COMMAND = [sys.executable, "-m", "mini_agent.cli", "mcp"]


@asynccontextmanager
async def mcp_command(root: Path, *files: str) -> AsyncIterator[ClientSession]:
    args = [*MCP_COMMAND[1:], "--root", str(root)]
    for path in files:
        args += ["--tools", path]
    server = StdioServerParameters(command=MCP_COMMAND[0], args=args, env=daemon_env())
    async with stdio_client(server) as streams, ClientSession(*streams) as session:
        await session.initialize()
        yield session


def text_of(result: mcp_types.CallToolResult) -> str:
    assert len(result.content) == 1 and isinstance(result.content[0], mcp_types.TextContent)
    return result.content[0].text


@pytest.mark.asyncio
async def test_lists_the_schemas_the_daemon_shows(
    workspace: Path, daemon_factory: Callable[..., Any]
) -> None:
    client = await daemon_factory({"store": {"enabled": False}})
    await client.request("agent/registerTool", {"path": "tools.py"})
    daemon_tools = (await client.request("agent/listTools", None))["tools"]
    async with mcp_command(workspace, "tools.py") as session:
        listed = (await session.list_tools()).tools
    assert [t.name for t in listed] == ["list_python_files", "count_file_lines"]
    dialect = {"$schema": "https://json-schema.org/draft/2020-12/schema"}
    assert [(t.name, t.description, t.input_schema, t.output_schema) for t in listed] == [
        (t["name"], t["description"], dialect | t["inputSchema"], t["outputSchema"]) for t in daemon_tools
    ]


@pytest.mark.asyncio
async def test_calls_are_validated_and_answered(workspace: Path) -> None:
    expected = sum(1 for line in (workspace / "tools.py").read_text().splitlines() if line.strip())
    async with mcp_command(workspace, "tools.py") as session:
        wrong = await session.call_tool("count_file_lines", {"path": "tools.py"})
        right = await session.call_tool("count_file_lines", {"file_path": "tools.py"})
        missing = await session.call_tool("count_file_lines", {"file_path": "nope.txt"})
    assert wrong.is_error and "file_path" in text_of(wrong) and "'path'" in text_of(wrong)
    assert not right.is_error and text_of(right) == str(expected)
    assert missing.is_error and "no file named 'nope.txt'" in text_of(missing)


@pytest.mark.asyncio
async def test_a_tool_writing_to_fd1_or_exiting_leaves_the_stream_intact(workspace: Path) -> None:
    (workspace / "noisy.py").write_text(NOISY)
    async with mcp_command(workspace, "noisy.py", "tools.py") as session:
        loud = await session.call_tool("shout", {"text": "hi"})
        crashed = await session.call_tool("shout", {"text": "exit"})
        after = await session.call_tool("shout", {"text": "again"})
        names = [t.name for t in (await session.list_tools()).tools]
    assert not loud.is_error and text_of(loud) == "HI"
    assert crashed.is_error and "exited with code 3" in text_of(crashed)
    assert not after.is_error and text_of(after) == "AGAIN"
    assert names == ["shout", "list_python_files", "count_file_lines"]


def test_a_file_that_does_not_register_is_refused_before_serving(workspace: Path) -> None:
    command = [*MCP_COMMAND, "--root", str(workspace), "--tools", "x.py"]
    done = subprocess.run(
        command, env=daemon_env(), capture_output=True, text=True, timeout=60, stdin=subprocess.DEVNULL
    )
    assert done.returncode == 1 and done.stdout == ""
    assert "x.py: no such file in the workspace" in done.stderr
