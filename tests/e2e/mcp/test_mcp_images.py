"""Images an MCP tool returns, through the real daemon and a real MCP server (server-everything's
`get-tiny-image`, a PNG between two text blocks): in native mode they reach the model server as image
parts in a user message after the tool result; in react mode the model is told they were left out and
the person gets a status update; the step's observation names them on the wire."""

from __future__ import annotations

import re
from collections.abc import Callable
from typing import Any

import pytest
from mini_agent.scripted import ReplayServer

from ...support.scripted import action
from .test_mcp import NO_STORE, NPM_BIN, everything_server, first_step, statuses

TOOL = "every_get-tiny-image"


def tiny_image() -> str:
    """The PNG server-everything sends, read from its own source."""
    package = NPM_BIN.parent / "@modelcontextprotocol" / "server-everything"
    source = package / "dist" / "tools" / "get-tiny-image.js"
    found = re.search(r'MCP_TINY_IMAGE = "([A-Za-z0-9+/=]+)"', source.read_text())
    assert found is not None, source
    return found[1]


def size(data: str) -> int:
    return len(data) * 3 // 4 - data[-2:].count("=")


@pytest.mark.asyncio
async def test_a_tools_image_reaches_a_native_model_as_an_image_part_after_the_tool_result(
    daemon_factory: Callable[..., Any],
) -> None:
    script = [{"tool_calls": [{"name": TOOL, "arguments": {}}]}, {"content": "The MCP logo."}]
    async with ReplayServer(script) as model:
        options = {**NO_STORE, "llm": {"baseUrl": model.base_url, "toolMode": "native"}}
        client = await daemon_factory(options)
        session_id, step = await first_step(client, "show me the logo", [everything_server()])
        final = await client.request("agent/run", {"sessionId": session_id})
    png = tiny_image()
    observation = step["observations"][0]
    assert not observation["isError"], observation["output"]
    assert observation["images"] == [{"mimeType": "image/png", "bytes": size(png)}]
    named = f"[image: image/png, {size(png)} bytes]"
    said = f"Here's the image you requested:\n{named}\nThe image above is the MCP logo."
    assert observation["output"] == said
    sent = model.exchanges[1].body["messages"]
    result = next(i for i, m in enumerate(sent) if m["role"] == "tool")
    assert sent[result]["content"] == observation["output"]  # the tool message holds the text only
    assert sent[result + 1] == {
        "role": "user",
        "content": [
            {"type": "text", "text": "The images the tool results above returned:"},
            {"type": "image_url", "image_url": {"url": f"data:image/png;base64,{png}"}},
        ],
    }
    assert final["finalAnswer"] == "The MCP logo."
    assert not any("not sent to the model" in m for m in statuses(client, session_id))


@pytest.mark.asyncio
async def test_a_tools_image_is_left_out_in_react_with_a_word_to_the_model_and_to_the_person(
    daemon_factory: Callable[..., Any],
) -> None:
    script = [action(TOOL, {}), {"content": "Final Answer: I cannot see it."}]
    async with ReplayServer(script) as model:
        client = await daemon_factory({**NO_STORE, "llm": {"baseUrl": model.base_url, "toolMode": "react"}})
        session_id, step = await first_step(client, "show me the logo", [everything_server()])
        await client.request("agent/run", {"sessionId": session_id})
    observed = model.exchanges[1].body["messages"][-1]["content"]
    assert observed.startswith("Observation: Here's the image you requested:\n[image: image/png, ")
    assert observed.endswith(
        "The image above is the MCP logo.\n\n[1 image attached to this message left out: this tool mode "
        "sends the model text only. Say so if the task needs what it shows.]"
    )
    assert "image_url" not in str(model.exchanges[1].body)
    assert step["observations"][0]["images"][0]["mimeType"] == "image/png"
    told = statuses(client, session_id)
    said = f"The 1 image {TOOL} returned was not sent to the model: tool mode react sends it text only"
    assert any(said in message for message in told), told
