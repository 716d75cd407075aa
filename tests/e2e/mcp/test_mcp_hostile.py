"""Hostile MCP servers against the real daemon: each start is answered, each bound is hit with the
user told which server and tool and why, hints cannot lower the guard, and no server's process
(nor its `setsid` grandchild) outlives the daemon.

The server is tests/support/hostile_mcp_server.py, raw JSON-RPC over stdio so it can misbehave.
"""

from __future__ import annotations

import signal
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from mini_agent.scripted import ReplayServer

from ...support.daemon import AgentTestClient
from ...support.host import process_gone
from ...support.scripted import action
from ...support.waiting import wait_for

HOSTILE = Path(__file__).parents[2] / "support" / "hostile_mcp_server.py"
NO_STORE = {"store": {"enabled": False}}


def hostile(mode: str, *args: str, **settings: Any) -> dict[str, Any]:
    return {
        "name": "hostile",
        "command": sys.executable,
        "args": [str(HOSTILE), mode, *args],
        "requiresApproval": False,
        "startTimeoutSec": 5,
        **settings,
    }


def statuses(client: AgentTestClient, session_id: str) -> list[str]:
    return [
        u["update"]["message"]
        for u in client.updates
        if u["sessionId"] == session_id and u["update"]["kind"] == "status" and "message" in u["update"]
    ]


def announced(client: AgentTestClient) -> bool:
    changes = client.tools_changed
    return any(tool.get("mcpServer") == "hostile" for change in changes for tool in change["tools"])


async def started(
    daemon_factory: Callable[..., Any], server: dict[str, Any], script: list[Any] | None = None
) -> tuple[AgentTestClient, str, set[str]]:
    """A daemon, a session naming `server` (answered at once, whatever the server does), and the
    hostile server's tools as the daemon lists them once its start in the background has ended (its
    tools announced, or a failure said; what a listing left out is said before its tools are)."""
    async with ReplayServer(script or [{"content": "Final Answer: done"}]) as model:
        client = await daemon_factory({**NO_STORE, "llm": {"baseUrl": model.base_url}})
        answer = await client.request("agent/startSession", {"task": "t", "mcpServers": [server]})
        session_id = answer["sessionId"]
        await wait_for(lambda: announced(client) or statuses(client, session_id) != [], timeout=60)
        listed = (await client.request("agent/listTools", None))["tools"]
    names = {tool["name"] for tool in listed if tool.get("mcpServer") == "hostile"}
    return client, answer["sessionId"], names


@pytest.mark.asyncio
async def test_a_server_that_never_answers_initialize(daemon_factory: Callable[..., Any]) -> None:
    client, session_id, names = await started(daemon_factory, hostile("silent"))
    assert names == set()
    assert statuses(client, session_id) == [
        "MCP server 'hostile' could not start: no answer to initialize within 5 s (startTimeoutSec)"
    ]


@pytest.mark.asyncio
async def test_an_invalid_utf8_byte_spoils_one_string_not_the_start(
    daemon_factory: Callable[..., Any],
) -> None:
    client, session_id, names = await started(daemon_factory, hostile("bad-utf8"))
    assert names == {"hostile_ok"} and statuses(client, session_id) == []


@pytest.mark.asyncio
async def test_endless_pagination_is_cut(daemon_factory: Callable[..., Any]) -> None:
    client, session_id, names = await started(daemon_factory, hostile("endless-pages"))
    assert "hostile_ok" in names and len(names) == 32  # the first page's tool, then one a page
    assert statuses(client, session_id) == [
        "MCP server 'hostile': its tool list goes on past 32 pages (MAX_LIST_PAGES); the rest is ignored"
    ]


@pytest.mark.asyncio
@pytest.mark.parametrize(
    ("behaviour", "said"),
    [
        ("deep", "tool 'deep' left out: its inputSchema is nested deeper than 64 levels (MAX_SCHEMA_DEPTH)"),
        ("ref-bomb", "tool 'bomb' left out: its input schema has over 20000 values once its $refs are"
                     " inlined (MAX_SCHEMA_NODES)"),
    ],
    ids=["a schema nested 300 deep", "a $ref bomb"],
)
async def test_a_tool_whose_schema_is_over_a_bound_is_left_out_and_named(
    daemon_factory: Callable[..., Any], behaviour: str, said: str
) -> None:
    client, session_id, names = await started(daemon_factory, hostile(behaviour))
    assert names == {"hostile_ok"}
    assert statuses(client, session_id) == [f"MCP server 'hostile': {said}"]


@pytest.mark.asyncio
async def test_ten_thousand_tools_are_capped(daemon_factory: Callable[..., Any]) -> None:
    client, session_id, names = await started(daemon_factory, hostile("many"))
    assert len(names) == 128 and {"hostile_ok", "hostile_t0", "hostile_t126"} <= names
    assert statuses(client, session_id) == [
        "MCP server 'hostile' offers more than 128 tools (MAX_TOOLS); only the first 128 are used"
    ]


@pytest.mark.asyncio
async def test_a_server_and_its_setsid_grandchild_end_with_the_daemon(
    daemon_factory: Callable[..., Any], tmp_path: Path
) -> None:
    pids_file = tmp_path / "pids"
    client, _, names = await started(daemon_factory, hostile("fork", str(pids_file)))
    pids = [int(pid) for pid in pids_file.read_text().split()]
    assert names == {"hostile_ok"} and len(pids) == 3 and not any(process_gone(pid) for pid in pids)
    client.lsp._server.send_signal(signal.SIGKILL)  # no shutdown: the daemon just dies
    await client.lsp._server.wait()  # reaped here, so the fixture's teardown sees it gone
    await wait_for(lambda: all(process_gone(pid) for pid in pids))


async def asked_for(daemon_factory: Callable[..., Any], server: dict[str, Any], tool: str) -> list[str]:
    """The tools the user was asked about when the model calls `tool` once."""
    script = [action(tool, {}), {"content": "Final Answer: {last_observation}"}]
    async with ReplayServer(script) as model:
        client = await daemon_factory({**NO_STORE, "llm": {"baseUrl": model.base_url}})
        client.permission_answer = lambda params: {"decision": "allow_once"}
        answer = await client.request("agent/startSession", {"task": "t", "mcpServers": [server]})
        final = await client.request("agent/run", {"sessionId": answer["sessionId"]})
    assert final["finalAnswer"] == tool.removeprefix("hostile_")
    return [request["toolCall"]["name"] for request in client.permission_requests]


@pytest.mark.asyncio
async def test_destructive_wins_over_read_only(daemon_factory: Callable[..., Any]) -> None:
    server = hostile("annotated", requiresApproval=True)
    assert await asked_for(daemon_factory, server, "hostile_look") == []
    assert await asked_for(daemon_factory, server, "hostile_wipe") == ["hostile_wipe"]


@pytest.mark.asyncio
async def test_a_server_set_to_always_ask_asks_for_read_only_tools(
    daemon_factory: Callable[..., Any],
) -> None:
    server = hostile("annotated", requiresApproval="always")
    assert await asked_for(daemon_factory, server, "hostile_look") == ["hostile_look"]
