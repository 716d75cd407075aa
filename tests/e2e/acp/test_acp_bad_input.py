"""Bad input to `mini-agent acp` is answered, with the error that names it, and the agent stays up: a
line nested too deeply, params too long or odd, a corrupt row in the store; a store that cannot be
opened is told in the session; session/cancel ends a prompt still starting its MCP servers."""

from __future__ import annotations

import asyncio
import sqlite3
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest
from acp.schema import McpServerStdio
from mini_agent.core.session import AgentConfig, AgentSession
from mini_agent.scripted import ReplayServer
from mini_agent.store.sqlite import SqliteStore

from ...support.acp import AGENT, acp_agent, said, text, workspace_config
from ...support.ndjson import RawLines
from ...support.waiting import wait_for

FINAL = {"content": "Thought: done.\nFinal Answer: done"}
# An MCP server that starts (it leaves `sys.argv[1]` behind) and never answers `initialize`.
STUCK_SERVER = "import pathlib, sys; pathlib.Path(sys.argv[1]).touch(); sys.stdin.buffer.read()"


@pytest.fixture
def agent(workspace: Path) -> Iterator[RawLines]:
    raw = RawLines(AGENT, workspace)
    assert "result" in raw.request("initialize", {"protocolVersion": 1})
    yield raw
    assert raw.close() == 0


def test_a_line_nested_too_deeply_is_an_invalid_request_and_the_agent_stays_up(agent: RawLines) -> None:
    """The depth rule of `plumbing.jsonrpc`, the same on all three doors (was -32700 here)."""
    deep = agent.answer(b"[" * 5000 + b"]" * 5000)
    assert deep["id"] is None and deep["error"]["code"] == -32600, deep
    assert "nested deeper than 200 levels" in deep["error"]["message"]
    assert "result" in agent.request("initialize", {"protocolVersion": 1})


def test_params_too_long_or_odd_are_refused_naming_the_field(agent: RawLines, workspace: Path) -> None:
    refusals = {
        "cwd": agent.request("session/new", {"cwd": "/" + "a" * 5000, "mcpServers": []}),
        "cursor": agent.request("session/list", {"cwd": str(workspace), "cursor": "9" * 400}),
    }
    refusals["cursor "] = agent.request("session/list", {"cwd": str(workspace), "cursor": "²"})
    for field, answer in refusals.items():
        error = answer["error"]
        assert error["code"] == -32602 and field.strip() in error["message"], (field, error)
        assert len(error["message"]) < 300, error["message"]  # the value is cut, not echoed whole
    assert "result" in agent.request("initialize", {"protocolVersion": 1})


def test_a_corrupt_row_is_skipped_and_the_others_listed(agent: RawLines, workspace: Path) -> None:
    with SqliteStore.for_workspace(workspace) as store:
        for n in range(3):
            store.save(AgentSession(session_id=f"sess_{n}", task=f"task {n}", config=AgentConfig(), tools=[]))
        path = store.path
    with sqlite3.connect(path) as conn:
        conn.execute("UPDATE sessions SET status = 'garbage' WHERE id = 'sess_1'")
        conn.execute("UPDATE sessions SET updated_at = 'garbage' WHERE id = 'sess_2'")
    listed = agent.request("session/list", {"cwd": str(workspace)})["result"]
    assert [s["sessionId"] for s in listed["sessions"]] == ["sess_0"]
    assert "nextCursor" not in listed
    log = agent.stderr_path.read_text()
    assert "sess_1" in log and "sess_2" in log  # each skipped row named


@pytest.mark.asyncio
async def test_a_store_that_cannot_be_opened_is_told_in_the_session(workspace: Path) -> None:
    (workspace / ".mini-agent").mkdir()
    (workspace / ".mini-agent" / "sessions.db").write_text("not a database\n" * 100)
    async with ReplayServer([FINAL]) as model:
        workspace_config(workspace, model.base_url)
        async with acp_agent(workspace, trust=True) as (conn, _, recorder):
            session_id = (await conn.new_session(cwd=str(workspace), mcp_servers=[])).session_id
            stop = (await conn.prompt(session_id=session_id, prompt=text("go"))).stop_reason
    assert stop == "end_turn"
    first = next(u for u in recorder.of(session_id) if u["sessionUpdate"] != "available_commands_update")
    assert first["sessionUpdate"] == "agent_message_chunk", first
    assert "sessions will not be saved" in said([first]) and "sessions.db" in said([first])
    assert said(recorder.of(session_id)).count("will not be saved") == 1


@pytest.mark.asyncio
async def test_cancel_ends_a_prompt_still_starting_its_mcp_servers(workspace: Path, tmp_path: Path) -> None:
    started = tmp_path / "stuck-started"
    args = ["-c", STUCK_SERVER, str(started)]
    stuck = McpServerStdio(name="stuck", command=sys.executable, args=args, env=[])
    async with ReplayServer([FINAL]) as model:
        workspace_config(workspace, model.base_url)  # not trusted: the environment names the server
        async with acp_agent(workspace, OPENAI_BASE_URL=model.base_url) as (conn, _, _recorder):
            session_id = (await conn.new_session(cwd=str(workspace), mcp_servers=[stuck])).session_id
            prompting = asyncio.ensure_future(conn.prompt(session_id=session_id, prompt=text("go")))
            await wait_for(started.exists)
            await conn.cancel(session_id=session_id)
            answer = await asyncio.wait_for(prompting, 20)  # well within the MCP start's own bound
    assert answer.stop_reason == "cancelled"
    assert model.exchanges == []  # the turn ended before its first step
