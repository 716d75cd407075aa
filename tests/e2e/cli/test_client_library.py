"""The Python client library against a real daemon (both framings), a real tool host and the replay
model server."""

from __future__ import annotations

import asyncio
import contextlib
import sys
from pathlib import Path
from typing import Any

import pytest
from mini_agent.cli.demo import SCRIPT as SEED_SCRIPT
from mini_agent.cli.demo import TASK as SEED_TASK
from mini_agent.scripted import ReplayServer
from mini_agent_client import AgentClient, Event
from mini_agent_client.rpc import ConnectionClosed, RpcError

from ...support.daemon import daemon_env

SLOW = [{"delay": 60, "content": "Final Answer: too late"}]


def options(model: ReplayServer, **llm: Any) -> dict[str, Any]:
    return {"llm": {"baseUrl": model.base_url, "model": "replay", **llm}, "store": {"enabled": False}}


@pytest.mark.asyncio
@pytest.mark.parametrize(("ndjson", "command"), [
    (False, None),
    (False, [sys.executable, "-m", "mini_agent.cli", "serve"]),
    (True, None),
], ids=["python-m-mini_agent", "mini-agent-serve", "mini-agent-serve-ndjson"])
async def test_run_streams_typed_events_then_the_result(ndjson: bool, command: list[str] | None,
                                                        workspace: Path) -> None:
    async with ReplayServer(SEED_SCRIPT) as model, AgentClient.spawn(
            root=workspace, options=options(model), env=daemon_env(), ndjson=ndjson,
            command=command) as client:
        assert client.server_info["name"] == "mini-agent"
        assert "agent/run" in client.methods
        tools = await client.register_tool("tools.py")
        assert [t["name"] for t in tools] == ["list_python_files", "count_file_lines"]
        events = [event async for event in client.run(SEED_TASK)]

    thought = "".join(e.text for e in events if e.kind == "agent_thought_chunk" and e.step == 0)
    assert thought.startswith("Thought: First I need")
    calls = [e for e in events if e.kind == "tool_call"]
    assert [(c.tool_name, c.status) for c in calls] == [("list_python_files", "pending"),
                                                        ("count_file_lines", "pending"),
                                                        ("count_file_lines", "pending")]
    assert calls[2].arguments == {"file_path": "schema.py", "ignore_empty": True}
    observations = [e.observation for e in events if e.observation is not None]
    assert [o["isError"] for o in observations] == [False, True, False]
    answer = next(e for e in events if e.kind == "agent_message_chunk").text
    result = events[-1]
    assert result.kind == "result" and result.stop_reason == "end_turn" and result.final_answer == answer
    assert result.status == "finished" and result.step == 4 and result.error is None
    assert result.to_json()["kind"] == "result" and result.to_json()["sessionId"] == result.session_id


@pytest.mark.asyncio
async def test_cancel_while_iterating_ends_the_run_with_a_cancelled_result(workspace: Path) -> None:
    async with ReplayServer(SLOW) as model, \
            AgentClient.spawn(root=workspace, options=options(model), env=daemon_env()) as client:
        events: list[Event] = []
        async for event in client.run("wait"):
            events.append(event)
            if event.kind == "status" and event.status == "running":
                await client.cancel(event.session_id)
        result = events[-1]
        assert (result.kind, result.stop_reason, result.status) == ("result", "cancelled", "ready")
        session = await client.get_session(result.session_id)
        assert session["status"] == "ready"


@pytest.mark.asyncio
async def test_leaving_the_loop_early_cancels_the_session(workspace: Path) -> None:
    async with ReplayServer(SLOW) as model, \
            AgentClient.spawn(root=workspace, options=options(model), env=daemon_env()) as client:
        session_id = await client.start_session("wait")
        async with contextlib.aclosing(client.run(session_id=session_id)) as events:
            async for event in events:
                if event.status == "running":
                    break
        summaries = await client.list_sessions()
        assert [(s["sessionId"], s["status"]) for s in summaries] == [(session_id, "ready")]
        assert (await client.list_sessions("finished")) == []


@pytest.mark.asyncio
async def test_client_tools_and_permission_requests_are_answered_by_handlers(workspace: Path) -> None:
    script = [
        {"tool_calls": [{"name": "pick_file", "arguments": {"hint": "the schema"}}]},
        {"tool_calls": [{"name": "count_file_lines", "arguments": {"file_path": "schema.py"}}]},
        {"content": "It has {last_observation} lines."},
    ]
    seen: list[str] = []

    async def pick_file(params: dict[str, Any]) -> str:
        seen.append(f"{params['name']}({params['arguments']['hint']})")
        return "schema.py"

    async def permit(params: dict[str, Any]) -> dict[str, Any]:
        seen.append(f"approve {params['toolCall']['name']} {params['toolCall']['arguments']}")
        return {"decision": "allow_once"}

    async with ReplayServer(script) as model, AgentClient.spawn(
            root=workspace, options=options(model, toolMode="native"), env=daemon_env()) as client:
        client.on_execute_tool(pick_file)
        client.on_permission(permit)
        await client.register_client_tool("pick_file", "Pick a file.", {
            "type": "object", "properties": {"hint": {"type": "string"}}, "required": ["hint"]})
        await client.register_tool("tools.py", function="count_file_lines", requires_approval=True)
        events = [event async for event in client.run("How long is the schema?")]

    assert seen == ["pick_file(the schema)", "approve count_file_lines {'file_path': 'schema.py'}"]
    outputs = [e.observation["output"] for e in events if e.observation is not None]
    assert outputs[0] == "schema.py"
    assert events[-1].final_answer == f"It has {outputs[1]} lines."


@pytest.mark.asyncio
async def test_errors_carry_code_and_data_and_a_dead_daemon_is_reported(workspace: Path) -> None:
    no_store = {"store": {"enabled": False}}
    async with AgentClient.spawn(root=workspace, options=no_store, env=daemon_env()) as client:
        with pytest.raises(RpcError) as caught:
            await client.step("sess_nobody")
        assert caught.value.code == -32602 and caught.value.data["reason"] == "unknown_session"
        with pytest.raises(RpcError) as caught:
            await client.register_tool("../outside.py")
        assert caught.value.code == -32602

        client.process.kill()
        with pytest.raises(ConnectionClosed):
            await asyncio.wait_for(client.list_tools(), 30)
