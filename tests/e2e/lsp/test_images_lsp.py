"""Image prompts on the LSP door: `images` on agent/startSession reach the model server as image parts
in native mode, `images` on agent/prompt in react mode become a note to the model and a status update,
the user turn's update names them without their bytes, and a bad image is refused by name."""

from __future__ import annotations

import base64
from collections.abc import Callable
from typing import Any

import pytest
from mini_agent.scripted import ReplayServer

PNG = base64.b64encode(b"\x89PNG\r\n\x1a\n" + b"\x01" * 30).decode()
IMAGE = {"mimeType": "image/png", "data": PNG}


@pytest.mark.asyncio
async def test_images_reach_the_model_in_native_mode_and_are_left_out_with_a_word_in_react(
    daemon_factory: Callable[..., Any],
) -> None:
    script = [{"content": "A picture."}, {"content": "Final Answer: still a picture"}]
    async with ReplayServer(script) as model:
        client = await daemon_factory({"llm": {"baseUrl": model.base_url, "toolMode": "native"}})
        started = await client.request("agent/startSession", {"task": "What is this?", "images": [IMAGE]})
        sid = started["sessionId"]
        assert (await client.request("agent/run", {"sessionId": sid}))["finalAnswer"] == "A picture."
        await client.request("agent/configureSession", {"sessionId": sid, "toolMode": "react"})
        follow_up = {"sessionId": sid, "text": "And this?", "images": [IMAGE, IMAGE]}
        await client.request("agent/prompt", follow_up)
        assert (await client.request("agent/run", {"sessionId": sid}))["finalAnswer"] == "still a picture"
    first = [m for m in model.exchanges[0].body["messages"] if m["role"] == "user"]
    url = f"data:image/png;base64,{PNG}"
    assert first[0]["content"][1] == {"type": "image_url", "image_url": {"url": url}}
    second = [m["content"] for m in model.exchanges[1].body["messages"] if m["role"] == "user"]
    assert second[-1].startswith("And this?\n\n[2 images attached to this message left out")
    assert not isinstance(second[0], list)  # the earlier turn's image is left out too in react
    updates = [u for u in client.updates if u["sessionId"] == sid]
    turns = [u["update"] for u in updates if u["update"]["kind"] == "user_message_chunk"]
    assert turns == [{"kind": "user_message_chunk", "text": "And this?",
                      "images": [{"mimeType": "image/png", "bytes": 38}] * 2}]  # 8 + 30
    told = [u["update"].get("message", "") for u in updates if u["update"]["kind"] == "status"]
    assert any("The 2 images attached were not sent to the model: tool mode react" in m for m in told), told


@pytest.mark.asyncio
async def test_a_bad_image_is_refused_by_name(daemon_factory: Callable[..., Any]) -> None:
    client = await daemon_factory({"llm": {"baseUrl": "http://127.0.0.1:9/v1"}})
    with pytest.raises(Exception, match=r"images\[0\]: mimeType 'text/plain' is not one of"):
        text = {"mimeType": "text/plain", "data": "eA=="}
        await client.request("agent/startSession", {"task": "x", "images": [text]})
