"""Per-call sandbox expansion on the ACP door: after the sandbox refused a tool's connection, the next
call of that tool asks, with "Allow once, with network access" among the once-options; chosen, that
call reaches the service, and the one after it is confined again."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from mini_agent.scripted import ReplayServer

from ...support.acp import acp_agent, calls, text, workspace_config
from ...support.listener import KNOCK, greeting_listener


@pytest.mark.asyncio
async def test_the_network_is_offered_for_the_next_call_once_and_only_that_call_gets_it(
    workspace: Path,
) -> None:
    async with greeting_listener() as port:
        (workspace / "knock.py").write_text(KNOCK, encoding="utf-8")

        def knock(note: str) -> dict[str, str]:
            args = json.dumps({"port": port, "note": note})
            return {"content": f"Thought: knock.\nAction: knock\nAction Input: {args}"}

        script = [knock("first"), knock("granted"), knock("after"), {"content": "Final Answer: done"}]
        async with ReplayServer(script) as model:
            workspace_config(workspace, model.base_url, tools='tools = ["knock.py"]')
            async with acp_agent(workspace, trust=True) as (conn, _, recorder):
                recorder.answer = lambda request: "allow_once_expanded"
                sid = (await conn.new_session(cwd=str(workspace), mcp_servers=[])).session_id
                await conn.prompt(session_id=sid, prompt=text("knock three times"))
    outputs = [c[-1]["rawOutput"]["output"] for c in calls(recorder.of(sid)).values()]
    assert "Permission denied" in outputs[0] and outputs[1] == "hello" and "Permission denied" in outputs[2]
    (asked,) = recorder.permission_requests
    assert [(o["optionId"], o["kind"]) for o in asked["options"]] == [
        ("allow_once", "allow_once"), ("allow_once_expanded", "allow_once"), ("reject_once", "reject_once")
    ]
    assert asked["options"][1]["name"] == "Allow once, with network access"
