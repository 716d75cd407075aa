"""MCP servers never hold a session's start, through the real daemon over stdio: `agent/startSession`
answers while a server is still starting, the first model turn waits for it at most its
`firstTurnTimeoutSec`, a server ready within that bound has its tools in the first turn, and one that
fails is reported to the session as before.

The servers are tests/support/hostile_mcp_server.py: `silent` never answers `initialize`, `gated`
answers once the test creates a file (so "still starting" is the test's doing, not a race).
"""

from __future__ import annotations

import asyncio
import json
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from mini_agent.scripted import ReplayServer

from ...support.daemon import AgentTestClient
from ...support.waiting import wait_for

HOSTILE = Path(__file__).parents[2] / "support" / "hostile_mcp_server.py"
NO_STORE = {"store": {"enabled": False}}
FINAL = {"content": "Thought: done.\nFinal Answer: done"}
# Far below the 60 s start bound these servers keep, far above what answering takes: a regression
# fails here instead of hanging, and a slow machine does not fail it.
GENEROUS = 30.0


def hostile(mode: str, *args: str, **settings: Any) -> dict[str, Any]:
    return {
        "name": "hostile",
        "command": sys.executable,
        "args": [str(HOSTILE), mode, *args],
        "requiresApproval": False,
        **settings,
    }


def statuses(client: AgentTestClient, session_id: str) -> list[str]:
    return [
        u["update"]["message"]
        for u in client.updates
        if u["sessionId"] == session_id and u["update"]["kind"] == "status" and "message" in u["update"]
    ]


async def listed(client: AgentTestClient) -> set[str]:
    tools = (await client.request("agent/listTools", None))["tools"]
    return {tool["name"] for tool in tools if tool.get("mcpServer") == "hostile"}


@pytest.mark.asyncio
async def test_a_server_that_never_answers_initialize_delays_the_first_turn_by_its_bound_only(
    daemon_factory: Callable[..., Any], tmp_path: Path
) -> None:
    pid_file = tmp_path / "pid"
    server = hostile("silent", str(pid_file), firstTurnTimeoutSec=1)  # the start bound stays 60 s
    async with ReplayServer([FINAL]) as model:
        client = await daemon_factory({**NO_STORE, "llm": {"baseUrl": model.base_url}})
        async with asyncio.timeout(GENEROUS):
            answer = await client.request("agent/startSession", {"task": "t", "mcpServers": [server]})
        session_id = answer["sessionId"]
        assert answer["status"] == "ready"
        await wait_for(pid_file.exists)  # it is starting, in the background
        asked = time.monotonic()
        async with asyncio.timeout(GENEROUS):
            final = await client.request("agent/run", {"sessionId": session_id})
        delay = model.exchanges[0].arrived - asked if model.exchanges else float("nan")
    print(f"first model turn {delay:.2f} s after agent/run, with a hung server and a 1 s bound")
    assert final["stopReason"] == "end_turn" and final["finalAnswer"] == "done"
    assert len(model.exchanges) == 1 and "hostile_ok" not in json.dumps(model.exchanges[0].body)
    assert statuses(client, session_id) == [
        "MCP server 'hostile' is still starting after 1 s (firstTurnTimeoutSec): the turn goes on without"
        " its tools"
    ]


@pytest.mark.asyncio
async def test_a_slow_server_ready_within_the_bound_has_its_tools_in_the_first_turn(
    daemon_factory: Callable[..., Any], tmp_path: Path
) -> None:
    go = tmp_path / "go"
    server = hostile("gated", str(go), firstTurnTimeoutSec=GENEROUS)
    async with ReplayServer([FINAL]) as model:
        client = await daemon_factory({"llm": {"baseUrl": model.base_url}})  # stored: the joined tools too
        async with asyncio.timeout(GENEROUS):
            answer = await client.request("agent/startSession", {"task": "t", "mcpServers": [server]})
        session_id = answer["sessionId"]
        assert await listed(client) == set()  # not ready: it waits for `go`
        running = asyncio.ensure_future(client.request("agent/run", {"sessionId": session_id}))
        await asyncio.sleep(0.5)
        assert not running.done() and model.exchanges == []  # the first turn waits for it
        go.touch()
        async with asyncio.timeout(GENEROUS):
            final = await running
    assert final["stopReason"] == "end_turn"
    assert len(model.exchanges) == 1 and "hostile_ok" in json.dumps(model.exchanges[0].body)
    assert any("hostile_ok" in json.dumps(change) for change in client.tools_changed)  # announced
    # (and gone again: a session that ended its turn lets its servers go)
    assert statuses(client, session_id) == []
    session = await client.request("agent/getSession", {"sessionId": session_id})
    assert "hostile_ok" in session["tools"]


@pytest.mark.asyncio
async def test_a_server_that_fails_to_start_is_reported_to_the_session_that_began_without_it(
    daemon_factory: Callable[..., Any],
) -> None:
    server = hostile("silent", startTimeoutSec=5)
    async with ReplayServer([FINAL]) as model:
        client = await daemon_factory({**NO_STORE, "llm": {"baseUrl": model.base_url}})
        async with asyncio.timeout(GENEROUS):
            answer = await client.request("agent/startSession", {"task": "t", "mcpServers": [server]})
        session_id = answer["sessionId"]
        assert statuses(client, session_id) == []  # answered before the server's start ran out
        failed = "MCP server 'hostile' could not start: no answer to initialize within 5 s (startTimeoutSec)"
        await wait_for(lambda: statuses(client, session_id) == [failed], timeout=GENEROUS)
        assert await listed(client) == set()
