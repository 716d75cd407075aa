"""`mini-agent mcp`'s server in one process: the MCP SDK's own client (`mcp.Client`, which connects to a
`Server` in memory) against `build_server` over a registry composed as the door composes it, with a
tool the client side runs, so no tool host starts."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from mcp import Client
from mini_agent.app.options import ToolHostOptions
from mini_agent.core.contracts import ToolCall
from mini_agent.mcp.server import build_server

WORD = {"type": "object", "properties": {"word": {"type": "string"}}, "required": ["word"]}


async def shout(session_id: str, call: ToolCall) -> Any:
    return {"said": str(call.arguments["word"]).upper(), "session": session_id}


@pytest.mark.asyncio
async def test_a_tool_is_listed_and_called_and_bad_calls_come_back_as_errors_in_words(tmp_path: Path) -> None:
    registry = ToolHostOptions().registry(tmp_path, client_caller=shout)
    registry.register_client_tool("shout", "Say a word louder.", WORD)
    async with Client(build_server(registry)) as client:
        listed = await client.list_tools()
        called = await client.call_tool("shout", {"word": "hi"})
        wrong = await client.call_tool("shout", {"word": 3})
        unknown = await client.call_tool("whisper", {})
    await registry.aclose()
    (tool,) = [t for t in listed.tools if t.name == "shout"]
    assert tool.description == "Say a word louder." and tool.input_schema["required"] == ["word"]
    assert not called.is_error
    assert [block.text for block in called.content] == ['{"said":"HI","session":"mcp"}']
    assert wrong.is_error and "word" in wrong.content[0].text
    assert unknown.is_error and "whisper" in unknown.content[0].text
