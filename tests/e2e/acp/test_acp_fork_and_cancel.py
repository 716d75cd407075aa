"""Forks across the doors (`session/fork`, `agent/forkSession`: a copy in the shared store, resumed on
the other door), and ACP's `$/cancel_request` on raw lines: a prompt ends `cancelled`, another request
answers -32800, and the agent goes on."""

from __future__ import annotations

import asyncio
import json
import socket
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from mini_agent.scripted import ReplayServer

from ...support.acp import AGENT, acp_agent, said, text, workspace_config
from ...support.ndjson import RawLines


def final(words: str) -> dict[str, str]:
    return {"content": f"Thought: done.\nFinal Answer: {words}"}


@pytest.mark.asyncio
async def test_a_fork_made_over_acp_takes_a_side_question_and_resumes_over_lsp(
    workspace: Path, daemon_factory: Callable[..., Any]
) -> None:
    script = [final("the main answer"), final("the side answer"), final("continued over LSP")]
    async with ReplayServer(script) as model:
        workspace_config(workspace, model.base_url)
        async with acp_agent(workspace, trust=True) as (conn, _, recorder):
            source = (await conn.new_session(cwd=str(workspace), mcp_servers=[])).session_id
            await conn.prompt(session_id=source, prompt=text("the main task"))
            fork = (await conn.fork_session(cwd=str(workspace), session_id=source, mcp_servers=[])).session_id
            side = await conn.prompt(session_id=fork, prompt=text("a side question"))
            assert side.stop_reason == "end_turn" and said(recorder.of(fork)) == "the side answer"
        side_request = model.exchanges[1].body["messages"]
        users = [m["content"] for m in side_request if m["role"] == "user"]
        assert users == ["the main task", "a side question"]

        lsp = await daemon_factory({"llm": {"baseUrl": model.base_url}})
        rows = (await lsp.request("agent/listSessions", {}))["sessions"]
        answers = {row["sessionId"]: row["finalAnswer"] for row in rows}
        assert answers == {source: "the main answer", fork: "the side answer"}  # the source is untouched
        resumed = await lsp.request("agent/resumeSession", {"sessionId": fork})
        assert resumed["task"] == "the main task" and len(resumed["steps"]) == 2
        await lsp.request("agent/prompt", {"sessionId": fork, "text": "go on"})
        run = await lsp.request("agent/run", {"sessionId": fork})
        assert run["finalAnswer"] == "continued over LSP"


@pytest.mark.asyncio
async def test_a_fork_at_a_step_made_over_lsp_is_loaded_over_acp_with_that_history_only(
    workspace: Path, daemon_factory: Callable[..., Any]
) -> None:
    listing = {"content": 'Thought: list.\nAction: list_python_files\nAction Input: {"directory": "."}'}
    async with ReplayServer([listing, final("three files"), final("later")]) as model:
        lsp = await daemon_factory({"llm": {"baseUrl": model.base_url}, "workspaceTrusted": True})
        await lsp.request("agent/registerTool", {"path": "tools.py"})
        sid = (await lsp.request("agent/startSession", {"task": "which files?"}))["sessionId"]
        await lsp.request("agent/run", {"sessionId": sid})
        await lsp.request("agent/prompt", {"sessionId": sid, "text": "and later?"})
        await lsp.request("agent/run", {"sessionId": sid})
        fork = await lsp.request("agent/forkSession", {"sessionId": sid, "step": 0})
        assert (fork["status"], len(fork["steps"])) == ("ready", 1) and fork["sessionId"] != sid
        with pytest.raises(Exception, match="has no finished step 7: it has steps 0 to 2"):
            await lsp.request("agent/forkSession", {"sessionId": sid, "step": 7})
        await lsp.lsp.shutdown_session()
        workspace_config(workspace, model.base_url)
        async with acp_agent(workspace, trust=True) as (conn, _, recorder):
            await conn.load_session(cwd=str(workspace), session_id=fork["sessionId"], mcp_servers=[])
    loaded = recorder.of(fork["sessionId"])
    users = [u["content"]["text"] for u in loaded if u["sessionUpdate"] == "user_message_chunk"]
    assert users == ["which files?"]
    titles = [u["title"] for u in loaded if u["sessionUpdate"] == "tool_call"]
    assert titles == ['list_python_files(directory=".")']
    assert said(loaded) == ""  # the answer came in step 1, which the fork left out


def read_until(agent: RawLines, request_id: int) -> tuple[dict[str, Any], list[dict[str, Any]]]:
    """The answer to `request_id`, and the notifications before it."""
    seen: list[dict[str, Any]] = []
    while True:
        message = agent.read()
        if message.get("id") == request_id and "method" not in message:
            return message, seen
        seen.append(message)


def send(agent: RawLines, request_id: int | None, method: str, params: dict[str, Any]) -> None:
    message = {"jsonrpc": "2.0", "method": method, "params": params}
    agent.send_line(json.dumps(message if request_id is None else {**message, "id": request_id}).encode())


@pytest.mark.asyncio
async def test_cancel_request_ends_a_running_prompt_as_cancelled_and_the_session_goes_on(
    workspace: Path,
) -> None:
    def drive(agent: RawLines) -> list[str]:
        agent.request("initialize", {"protocolVersion": 1})
        sid = agent.request("session/new", {"cwd": str(workspace), "mcpServers": []})["result"]["sessionId"]
        send(agent, 100, "session/prompt", {"sessionId": sid, "prompt": [{"type": "text", "text": "slowly"}]})
        while agent.read().get("params", {}).get("update", {}).get("sessionUpdate") != "agent_thought_chunk":
            pass
        send(agent, None, "$/cancel_request", {"requestId": 100})
        cancelled = read_until(agent, 100)[0]["result"]["stopReason"]
        send(agent, 101, "session/prompt", {"sessionId": sid, "prompt": [{"type": "text", "text": "quick"}]})
        return [cancelled, read_until(agent, 101)[0]["result"]["stopReason"]]

    slow = {"chunks": ["Thought: thinking", " slowly..."], "chunk_delay": 30}
    async with ReplayServer([slow, final("quick")]) as model:
        workspace_config(workspace, model.base_url)
        agent = RawLines((*AGENT, "--trust"), workspace)
        assert await asyncio.to_thread(drive, agent) == ["cancelled", "end_turn"]
        assert await asyncio.to_thread(agent.close) == 0
        assert model.exchanges[0].aborted


def test_cancel_request_answers_another_request_with_minus_32800_and_loses_nothing(workspace: Path) -> None:
    with socket.socket() as silent:  # a model server that takes the connection and never answers
        silent.bind(("127.0.0.1", 0))
        silent.listen()
        workspace_config(workspace, f"http://127.0.0.1:{silent.getsockname()[1]}/v1")
        agent = RawLines((*AGENT, "--trust"), workspace)
        agent.request("initialize", {"protocolVersion": 1})
        send(agent, 7, "session/new", {"cwd": str(workspace), "mcpServers": []})  # waits on the model list
        time.sleep(0.2)
        send(agent, None, "$/cancel_request", {"requestId": 7})
        answer, _ = read_until(agent, 7)
        assert answer["error"]["code"] == -32800 and "session/new" in answer["error"]["message"], answer
        send(agent, None, "$/cancel_request", {"requestId": "never sent"})  # nothing to cancel: ignored
        send(agent, None, "$/cancel_request", {"id": 7})  # malformed: dropped (a notification has no answer)
        again = agent.request("session/new", {"cwd": str(workspace), "mcpServers": []})
        assert again["result"]["sessionId"].startswith("sess_")
        assert agent.close() == 0
