"""The seed article's 4-step scenario through the real daemon over stdio (pytest-lsp), a real tool
host and a real HTTP model server that replays the model's side — in react and in native mode."""

from __future__ import annotations

import json
from collections.abc import Callable
from itertools import pairwise
from pathlib import Path
from typing import Any

import pytest
from mini_agent.cli.demo import ANSWER, TASK
from mini_agent.cli.demo import SCRIPT as REACT_SCRIPT
from mini_agent.scripted import ReplayServer

from ...support.scripted import non_empty_lines

NATIVE_SCRIPT: list[dict[str, Any]] = [
    {
        "content": "Listing the files first.",
        "tool_calls": [{"name": "list_python_files", "arguments": {"directory": "."}}],
    },
    {"tool_calls": [{"name": "count_file_lines", "arguments": {"path": "schema.py", "ignore_empty": True}}]},
    {
        "tool_calls": [
            {"name": "count_file_lines", "arguments": {"file_path": "schema.py", "ignore_empty": True}}
        ]
    },
    {"content": ANSWER.format(count="{last_observation}")},
]


@pytest.mark.asyncio
@pytest.mark.parametrize(("mode", "script"), [("react", REACT_SCRIPT), ("native", NATIVE_SCRIPT)])
async def test_seed_scenario(
    mode: str, script: list[dict[str, Any]], workspace: Path, daemon_factory: Callable[..., Any]
) -> None:
    expected_count = non_empty_lines(workspace / "schema.py")
    async with ReplayServer(script) as model:
        client = await daemon_factory(
            {
                "llm": {"baseUrl": model.base_url, "model": "replay", "toolMode": mode},
                "store": {"enabled": False},
            }
        )
        registered = await client.request("agent/registerTool", {"path": "tools.py"})
        tools = {tool["name"]: tool for tool in registered["tools"]}
        count_schema = tools["count_file_lines"]["inputSchema"]
        assert count_schema["required"] == ["file_path"]
        assert count_schema["properties"]["ignore_empty"]["type"] == "boolean"
        assert count_schema["properties"]["ignore_empty"]["default"] is True
        assert tools["count_file_lines"]["source"] == {
            "path": "tools.py",
            "function": "count_file_lines",
            "line": tools["count_file_lines"]["source"]["line"],
        }

        started = await client.request("agent/startSession", {"task": TASK})
        session_id = started["sessionId"]
        assert started["status"] == "ready"
        steps = [await client.request("agent/step", {"sessionId": session_id}) for _ in range(4)]

        listing = json.loads(steps[0]["observations"][0]["output"])
        assert "schema.py" in listing and "tools.py" in listing and listing == sorted(listing)

        wrong = steps[1]["observations"][0]
        assert steps[1]["toolCalls"][0]["arguments"] == {"path": "schema.py", "ignore_empty": True}
        assert wrong["isError"] and "file_path" in wrong["output"]

        right = steps[2]["observations"][0]
        assert not right["isError"] and right["output"] == str(expected_count)

        assert steps[3]["finalAnswer"] == ANSWER.format(count=expected_count)
        assert steps[3]["stopReason"] == "end_turn" and steps[3]["status"] == "finished"
        assert [s["stopReason"] for s in steps[:3]] == [None, None, None]
        assert [s["index"] for s in steps] == [0, 1, 2, 3]

        # each request's messages begin with the previous request's messages, byte for byte
        bodies = [json.dumps(r["messages"]) for r in model.requests]
        for earlier, later in pairwise(bodies):
            assert later.startswith(earlier[:-1])

    kinds = client.kinds(session_id)
    per_tool_step = ["tool_call", "tool_call_update", "tool_call_update"]
    compact = [k for k in kinds if k not in ("agent_thought_chunk", "usage_update", "status")]
    assert compact == per_tool_step * 3 + ["agent_message_chunk"]
    if mode == "react":
        first_call = kinds.index("tool_call")
        assert "agent_thought_chunk" in kinds[:first_call]
        thought = "".join(
            u["update"]["text"]
            for u in client.updates
            if u["update"]["kind"] == "agent_thought_chunk" and u["step"] == 0
        )
        assert thought.startswith("Thought: First I need to see")
    statuses = [u["update"] for u in client.updates if u["update"]["kind"] == "status"]
    assert statuses[-1] == {"kind": "status", "status": "finished", "stopReason": "end_turn"}
    updates = [u["update"] for u in client.updates if u["update"]["kind"] == "tool_call_update"]
    assert [u["status"] for u in updates] == [
        "in_progress",
        "completed",
        "in_progress",
        "failed",
        "in_progress",
        "completed",
    ]
