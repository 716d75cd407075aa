"""Resources in a turn's words on the LSP door: a linked file and an embedded one reach the model as
words where they stand, the live `user_message_chunk` names them, and `agent/loadSession` names them
again from the store."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest
from mini_agent.scripted import ReplayServer

LINK = {"uri": "file:///w/schema.py", "name": "schema.py", "mimeType": "text/x-python"}
EMBEDDED = {"uri": "file:///w/notes.md", "text": "remember the milk"}


@pytest.mark.asyncio
async def test_resources_reach_the_model_as_words_and_are_named_live_and_in_a_replay(
    daemon_factory: Callable[..., Any],
) -> None:
    script = [{"content": "Final Answer: seen"}, {"content": "Final Answer: seen again"}]
    async with ReplayServer(script) as model:
        client = await daemon_factory({"llm": {"baseUrl": model.base_url}})
        started = await client.request("agent/startSession", {"task": "Read this:", "resources": [LINK]})
        sid = started["sessionId"]
        await client.request("agent/run", {"sessionId": sid})
        await client.request("agent/prompt", {"sessionId": sid, "text": "And this:", "resources": [EMBEDDED]})
        await client.request("agent/run", {"sessionId": sid})
        live = [u["update"] for u in client.updates if u["update"]["kind"] == "user_message_chunk"]
        client.updates.clear()
        await client.request("agent/loadSession", {"sessionId": sid})
        replayed = [u["update"] for u in client.updates if u["update"]["kind"] == "user_message_chunk"]
    users = [m["content"] for m in model.exchanges[1].body["messages"] if m["role"] == "user"]
    assert users == [
        "Read this:\n\n[schema.py](file:///w/schema.py)",
        'And this:\n\n<context uri="file:///w/notes.md">\nremember the milk\n</context>',
    ]
    turn = {"kind": "user_message_chunk", "text": users[1],
            "resources": [{"uri": "file:///w/notes.md", "name": "", "chars": 17}]}
    assert live == [turn]
    assert replayed == [turn]


@pytest.mark.asyncio
async def test_a_resource_without_a_uri_is_refused_by_name(daemon_factory: Callable[..., Any]) -> None:
    client = await daemon_factory({"llm": {"baseUrl": "http://127.0.0.1:9/v1"}})
    with pytest.raises(Exception, match=r"resources\.0\.uri"):
        await client.request("agent/startSession", {"task": "x", "resources": [{"name": "a.py"}]})
