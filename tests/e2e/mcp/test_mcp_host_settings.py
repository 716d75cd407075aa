"""Tool-host settings reach `mini-agent mcp` as they reach the daemon's doors (`ToolHostOptions`, one
place): the memory cap, and the sandbox with the user's way out of it."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest
from mcp.client.session import ClientSession
from mcp.client.stdio import StdioServerParameters, stdio_client

from ...support.daemon import daemon_env

TOOLS = '''
from pathlib import Path

def hog(mb: int) -> str:
    """Hold `mb` MiB."""
    block = bytearray(mb * 1024 * 1024)
    return f"held {len(block) >> 20} MiB"

def leave(path: str) -> str:
    """Write a file."""
    Path(path).write_text("x")
    return "written"
'''


async def call(root: Path, tool: str, arguments: dict[str, object], *flags: str, **env: str) -> str:
    args = ["-m", "mini_agent.cli", "mcp", "--root", str(root), "--tools", "tools.py", *flags]
    server = StdioServerParameters(command=sys.executable, args=args, env=daemon_env(**env))
    async with stdio_client(server) as streams, ClientSession(*streams) as session:
        await session.initialize()
        result = await session.call_tool(tool, arguments)
    text = result.content[0]
    assert text.type == "text"
    return text.text


@pytest.mark.asyncio
async def test_the_memory_cap_reaches_mini_agent_mcp(tmp_path: Path) -> None:
    (tmp_path / "tools.py").write_text(TOOLS)
    said = await call(tmp_path, "hog", {"mb": 400}, "--max-memory-mb", "128")
    assert "ran out of memory (the limit is tools.maxMemoryMB = 128)" in said
    assert await call(tmp_path, "hog", {"mb": 400}) == "held 400 MiB"  # under the default 1024


@pytest.mark.asyncio
async def test_the_sandbox_reaches_mini_agent_mcp_and_the_users_off_switch_too(tmp_path: Path) -> None:
    root, temp, outside = tmp_path / "ws", tmp_path / "tmp", tmp_path / "outside.txt"
    root.mkdir()
    temp.mkdir()
    (root / "tools.py").write_text(TOOLS)
    refused = await call(root, "leave", {"path": str(outside)}, TMPDIR=str(temp))
    assert "Permission denied" in refused and "runs in the sandbox" in refused and not outside.exists()
    unconfined = await call(root, "leave", {"path": str(outside)}, TMPDIR=str(temp), MINI_AGENT_SANDBOX="off")
    assert unconfined == "written" and outside.exists()
