"""The slash commands on the LSP door, end to end through the real daemon over stdio: listed by
`agent/listCommands`, and an `agent/prompt` or `agent/startSession` whose text is one runs it at once,
without a model turn, answering `commandOutput` (docs/protocol.md, "agent/listCommands")."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest
from lsprotocol import types
from mini_agent.scripted import ReplayServer

FIRST = {"turns": [{"content": "Final Answer: ok"}], "repeat_last": True}


def statuses(updates: list[dict[str, Any]], session_id: str) -> list[str]:
    return [
        u["update"].get("message", "")
        for u in updates
        if u["sessionId"] == session_id and u["update"]["kind"] == "status"
    ]


@pytest.mark.asyncio
async def test_list_commands_and_a_command_as_a_new_task(daemon_factory: Callable[..., Any]) -> None:
    async with ReplayServer(FIRST) as model:
        client = await daemon_factory({"llm": {"baseUrl": model.base_url}})
        listed = await client.request("agent/listCommands", {})
        helped = await client.request("agent/startSession", {"task": "/help"})
        compact = await client.request("agent/startSession", {"task": "/compact"})
        tools = await client.request("agent/startSession", {"task": "  /tools"})
    names = [c["name"] for c in listed["commands"]]
    assert {"compact", "tools", "model", "mode", "trust", "help"} <= set(names)
    assert next(c for c in listed["commands"] if c["name"] == "model")["input"] == {"hint": "model name"}
    assert helped["sessionId"] is None and helped["ok"] and "/compact" in helped["commandOutput"]
    assert compact["ok"] is False and compact["command"] == "compact"
    assert tools["ok"] and tools["command"] == "tools"
    assert model.exchanges == []  # no command reached the model server


@pytest.mark.asyncio
async def test_compact_tools_model_mode_and_trust_as_prompts(daemon_factory: Callable[..., Any]) -> None:
    async with ReplayServer(FIRST) as model:
        client = await daemon_factory({"llm": {"baseUrl": model.base_url}, "workspaceTrusted": False})

        @client.lsp.feature(types.WINDOW_SHOW_MESSAGE_REQUEST)
        async def trust_question(params: Any) -> Any:  # /trust asks first: "yes, for this session"
            return types.MessageActionItem(title="Trust for this session")

        sid = (await client.request("agent/startSession", {"task": "hello"}))["sessionId"]
        await client.request("agent/run", {"sessionId": sid})
        for words in ("and then", "and now"):  # older turns for /compact to summarise
            await client.request("agent/prompt", {"sessionId": sid, "text": words})
            await client.request("agent/run", {"sessionId": sid})
        asked = len(model.exchanges)

        async def command(text: str) -> dict[str, Any]:
            answer: dict[str, Any] = await client.request("agent/prompt", {"sessionId": sid, "text": text})
            return answer

        compacted = await command("/compact")
        tools = await command("/tools")
        trusted = await command("/trust")
        again = await command("/trust")
        modelled = await command("/model large")
        moded = await command("/mode ask_always")
        bogus = await command("/mode bogus")
        session = await client.request("agent/getSession", {"sessionId": sid})
        summary_requests = len(model.exchanges) - asked
        plain = await client.request("agent/prompt", {"sessionId": sid, "text": "/etc/hosts is odd"})
    assert compacted["ok"] and compacted["commandOutput"].startswith("Context compacted"), compacted
    assert compacted["status"] == "finished" and compacted["sessionId"] == sid
    assert compacted["commandOutput"] in statuses(client.updates, sid)
    assert summary_requests == 1  # /compact's summary; no other command asked the model
    assert tools["ok"] and "No tools" in tools["commandOutput"]  # untrusted, nothing registered
    assert trusted["ok"] and "Trusted" in trusted["commandOutput"]
    assert "trusted already" in again["commandOutput"]
    assert modelled["commandOutput"] == "Model: large" and session["llm"]["model"] == "large"
    assert moded["ok"] and session["permissionMode"] == "ask_always"
    assert bogus["ok"] is False and "not a permission mode" in bogus["commandOutput"]
    assert plain == {"sessionId": sid, "status": "ready"}  # not a command: an ordinary prompt
    assert "/compact" not in str(model.requests)
