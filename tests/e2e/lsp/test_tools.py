"""Tools through the real daemon: client-side tools, reload on save, faulty tools, and stdout."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from lsprotocol import types
from mini_agent.scripted import ReplayServer

from ...support.scripted import action
from ...support.tools import NOISY


@pytest.mark.asyncio
async def test_client_tool_round_trip(workspace: Path, daemon_factory: Callable[..., Any]) -> None:
    script = [
        action("editor_selection", {"max_chars": "40"}),
        {"content": "Final Answer: {last_observation}"},
    ]
    async with ReplayServer(script) as model:
        client = await daemon_factory({"llm": {"baseUrl": model.base_url}, "store": {"enabled": False}})
        calls: list[Any] = []

        @client.lsp.feature("agent/executeTool")
        def execute_tool(params: Any) -> Any:
            calls.append(params)
            return {"selection": "def main() -> None: ...", "chars": params.arguments.max_chars}

        schema = {
            "type": "object",
            "properties": {"max_chars": {"type": "integer"}},
            "required": ["max_chars"],
        }
        registered = await client.request(
            "agent/registerTool",
            {
                "name": "editor_selection",
                "description": "The text selected in the editor.",
                "inputSchema": schema,
                "client": True,
            },
        )
        assert registered["tools"][0]["client"] is True
        session_id = (await client.request("agent/startSession", {"task": "what is selected?"}))["sessionId"]
        first = await client.request("agent/step", {"sessionId": session_id})
        # "40" is not an integer: the daemon refuses it before asking the editor
        assert first["observations"][0]["isError"] and "max_chars" in first["observations"][0]["output"]
        assert calls == []
    script = [action("editor_selection", {"max_chars": 40}), {"content": "Final Answer: {last_observation}"}]
    async with ReplayServer(script) as model:
        session_id = (
            await client.request(
                "agent/startSession", {"task": "what is selected?", "llm": {"baseUrl": model.base_url}}
            )
        )["sessionId"]
        result = await client.request("agent/run", {"sessionId": session_id})
    assert calls[0].sessionId == session_id and calls[0].name == "editor_selection"
    assert json.loads(result["finalAnswer"]) == {"selection": "def main() -> None: ...", "chars": 40}


@pytest.mark.asyncio
async def test_saving_a_registered_file_reloads_its_schema(
    workspace: Path, daemon_factory: Callable[..., Any]
) -> None:
    source = workspace / "greet.py"
    source.write_text('def greet(name: str) -> str:\n    """Say hello."""\n    return "hi " + name\n')
    client = await daemon_factory({"store": {"enabled": False}})
    first = await client.request("agent/registerTool", {"path": "greet.py"})
    assert list(first["tools"][0]["inputSchema"]["properties"]) == ["name"]
    source.write_text(
        'def greet(who: str, loud: bool = False) -> str:\n    """Say hello."""\n    return who\n'
    )
    client.lsp.text_document_did_save(
        types.DidSaveTextDocumentParams(text_document=types.TextDocumentIdentifier(uri=source.as_uri()))
    )
    for _ in range(200):
        if client.tools_changed and len(client.tools_changed) >= 2:
            break
        await client.lsp.protocol.send_request_async("agent/listTools", {})
    tools = (await client.request("agent/listTools", {}))["tools"]
    assert list(tools[0]["inputSchema"]["properties"]) == ["who", "loud"]
    assert tools[0]["inputSchema"]["required"] == ["who"]
    assert client.tools_changed[-1]["tools"][0]["inputSchema"]["properties"]["loud"]["default"] is False


@pytest.mark.asyncio
async def test_a_tool_that_writes_to_fd1_and_kills_its_host_leaves_the_protocol_intact(
    workspace: Path, daemon_factory: Callable[..., Any]
) -> None:
    (workspace / "noisy.py").write_text(NOISY)
    script = [
        action("shout", {"text": "hello"}),
        action("shout", {"text": "exit"}),
        action("shout", {"text": "again"}),
        {"content": "Final Answer: ok"},
    ]
    async with ReplayServer(script) as model:
        client = await daemon_factory({"llm": {"baseUrl": model.base_url}, "store": {"enabled": False}})
        await client.request("agent/registerTool", {"path": "noisy.py"})
        session_id = (await client.request("agent/startSession", {"task": "shout"}))["sessionId"]
        steps = [await client.request("agent/step", {"sessionId": session_id}) for _ in range(4)]
    hello, crashed, again = (s["observations"][0] for s in steps[:3])
    assert (
        hello["output"] == "HELLO" and "PRINTED hello" in hello["logs"] and "RAW FD1 WRITE" in hello["logs"]
    )
    assert crashed["isError"] and "3" in crashed["output"]
    assert again["output"] == "AGAIN"
    assert steps[3]["finalAnswer"] == "ok"
    # pytest-lsp parses every byte of the daemon's stdout as frames: stray output would have failed the run
    assert client.lsp.error is None
