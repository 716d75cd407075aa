"""MCP servers as tool sources, through the real daemon, real MCP servers and a scripted model.

The third-party servers are installed by scripts/test.sh: `mcp-server-time` into the venv and the
npm ones under .venv/npm. `mcp_fixture_server.py` covers what no published server does on demand
(dying mid-call, growing its tool list) and records its pids so orphans can be looked for.
"""

from __future__ import annotations

import asyncio
import os
import signal
import socket
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from mini_agent.scripted import ReplayServer

from ...support.daemon import ROOT, AgentTestClient
from ...support.scripted import action

VENV_BIN = Path(sys.executable).parent
NPM_BIN = ROOT / ".venv" / "npm" / "node_modules" / ".bin"
FIXTURE = Path(__file__).parents[2] / "support" / "mcp_fixture_server.py"
NO_STORE = {"store": {"enabled": False}}


def time_server() -> dict[str, Any]:
    return {"name": "time", "command": str(VENV_BIN / "mcp-server-time"), "args": []}


def everything_server() -> dict[str, Any]:
    return {
        "name": "every",
        "command": str(NPM_BIN / "mcp-server-everything"),
        "args": ["stdio"],
        "requiresApproval": False,
    }


def fixture_server(pids: Path, *options: str) -> dict[str, Any]:
    return {
        "name": "fix",
        "command": sys.executable,
        "args": [str(FIXTURE), str(pids), *options],
        "env": [{"name": "PYTHONPATH", "value": os.pathsep.join(sys.path)}],
        "requiresApproval": False,
    }


def alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    # a zombie has exited; only its parent has not reaped it yet
    try:
        return Path(f"/proc/{pid}/stat").read_text().split()[2] != "Z"
    except FileNotFoundError:  # reaped between the two looks
        return False


def processes_mentioning(marker: str) -> list[int]:
    found = []
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                cmdline = (entry / "cmdline").read_bytes().decode(errors="replace")
            except OSError:
                continue
            if marker in cmdline and alive(int(entry.name)):
                found.append(int(entry.name))
    return found


async def gone(check: Callable[[], bool]) -> bool:
    """Poll until `check` holds; a process exit takes a moment to be reaped (not a speed assert)."""
    for _ in range(200):
        if check():
            return True
        await asyncio.sleep(0.05)
    return check()


def statuses(client: AgentTestClient, session_id: str) -> list[str]:
    return [
        u["update"]["message"]
        for u in client.updates
        if u["sessionId"] == session_id and u["update"]["kind"] == "status" and "message" in u["update"]
    ]


async def first_step(client: AgentTestClient, task: str, servers: list[dict[str, Any]]) -> tuple[str, Any]:
    started = await client.request("agent/startSession", {"task": task, "mcpServers": servers})
    step = await client.request("agent/step", {"sessionId": started["sessionId"]})
    return started["sessionId"], step


@pytest.mark.asyncio
async def test_time_server_answers_through_a_session(daemon_factory: Callable[..., Any]) -> None:
    script = [action("time_get_current_time", {"timezone": "Europe/Paris"}), {"content": "Final Answer: ok"}]
    async with ReplayServer(script) as model:
        client = await daemon_factory({**NO_STORE, "llm": {"baseUrl": model.base_url}})
        session_id, step = await first_step(client, "what time is it in Paris?", [time_server()])
        listed = {t["name"]: t for t in (await client.request("agent/listTools", None))["tools"]}
        final = await client.request("agent/run", {"sessionId": session_id})
    observation = step["observations"][0]
    assert not observation["isError"], observation["output"]
    assert '"timezone": "Europe/Paris"' in observation["output"] and '"datetime": "' in observation["output"]
    tool = listed["time_get_current_time"]
    assert tool["mcpServer"] == "time" and "source" not in tool
    assert tool["requiresApproval"] is False  # the server marks it readOnlyHint
    assert "timezone" in tool["inputSchema"]["properties"]
    assert client.permission_requests == [] and final["finalAnswer"] == "ok"


@pytest.mark.asyncio
async def test_filesystem_server_from_initialization_options(
    workspace: Path, daemon_factory: Callable[..., Any]
) -> None:
    server = {"name": "fs", "command": str(NPM_BIN / "mcp-server-filesystem"), "args": [str(workspace)]}
    target = str(workspace / "tools.py")
    script = [action("fs_read_text_file", {"path": target}), {"content": "Final Answer: read"}]
    async with ReplayServer(script) as model:
        options = {**NO_STORE, "llm": {"baseUrl": model.base_url}, "mcpServers": [server]}
        client = await daemon_factory(options)
        session_id, step = await first_step(client, "show tools.py", [])
        assert processes_mentioning(str(workspace)) != []
        final = await client.request("agent/run", {"sessionId": session_id})
    observation = step["observations"][0]
    assert not observation["isError"], observation["output"]
    assert "def count_file_lines(" in observation["output"]
    assert final["finalAnswer"] == "read" and client.permission_requests == []  # a readOnlyHint tool
    # the session is over and no other uses the server: it is stopped and its tools are withdrawn
    assert await gone(lambda: processes_mentioning(str(workspace)) == [])
    assert await gone(lambda: not any("mcpServer" in t for t in client.tools_changed[-1]["tools"]))


@pytest.mark.asyncio
async def test_everything_server_errors_and_timeouts(daemon_factory: Callable[..., Any]) -> None:
    script = [
        action("every_get-sum", {"a": "two", "b": 3}),
        action("every_gzip-file-as-resource", {"data": "file:///etc/hostname"}),
        action("every_trigger-long-running-operation", {"duration": 30, "steps": 3}),
        action("every_echo", {"message": "still here"}),
        {"content": "Final Answer: done"},
    ]
    async with ReplayServer(script) as model:
        options = {**NO_STORE, "llm": {"baseUrl": model.base_url}, "tools": {"timeoutSec": 2}}
        client = await daemon_factory(options)
        session_id, wrong = await first_step(client, "exercise the server", [everything_server()])
        steps = [await client.request("agent/step", {"sessionId": session_id}) for _ in range(3)]
    failed, slow, echoed = (step["observations"][0] for step in steps)
    assert (
        wrong["observations"][0]["isError"]
        and "a: 'two' is not of type 'number'" in (wrong["observations"][0]["output"])
    )
    assert failed["isError"] and "Unsupported URL protocol for file:///etc/hostname" in failed["output"]
    # the timeout, then the repair hint: both arguments were set away from the defaults the server declares
    timeout, hint = slow["output"].split("\n")
    assert slow["isError"] and timeout == "every_trigger-long-running-operation timed out after 2 s"
    optional = "`duration` (default 10), `steps` (default 5) are optional"
    assert hint == f"Note: {optional}; leaving one out uses its default."
    assert not echoed["isError"] and "still here" in echoed["output"]


@pytest.mark.asyncio
async def test_a_server_that_exits_at_start_is_reported_and_the_session_goes_on(
    daemon_factory: Callable[..., Any], tmp_path: Path
) -> None:
    broken = {
        "name": "broken",
        "command": sys.executable,
        "args": ["-c", "import sys; sys.stderr.write('need API_TOKEN\\n'); sys.exit(3)"],
    }
    pids = tmp_path / "pids"
    script = [action("fix_ping", {}), {"content": "Final Answer: {last_observation}"}]
    async with ReplayServer(script) as model:
        client = await daemon_factory({**NO_STORE, "llm": {"baseUrl": model.base_url}})
        session_id, step = await first_step(client, "ping", [broken, fixture_server(pids)])
    messages = statuses(client, session_id)
    assert len(messages) == 1 and "MCP server 'broken' could not start" in messages[0]
    assert messages[0].endswith("Last stderr lines:\nneed API_TOKEN")
    assert step["observations"][0]["output"].startswith("pong from ")


@pytest.mark.asyncio
async def test_a_server_that_dies_mid_call_is_restarted_by_the_next_call(
    daemon_factory: Callable[..., Any], tmp_path: Path
) -> None:
    pids = tmp_path / "pids"
    script = [action("fix_die", {}), action("fix_ping", {}), {"content": "Final Answer: fine"}]
    async with ReplayServer(script) as model:
        client = await daemon_factory({**NO_STORE, "llm": {"baseUrl": model.base_url}})
        session_id, died = await first_step(client, "die, then ping", [fixture_server(pids)])
        pinged = await client.request("agent/step", {"sessionId": session_id})
    first, second = (int(pid) for pid in pids.read_text().split())
    assert died["observations"][0]["isError"]
    assert "MCP server 'fix' stopped unexpectedly" in died["observations"][0]["output"]
    assert "fixture: giving up on purpose" in died["observations"][0]["output"]
    reports = statuses(client, session_id)
    assert len(reports) == 1 and reports[0].endswith("Last stderr lines:\nfixture: giving up on purpose")
    assert pinged["observations"][0]["output"] == f"pong from {second}" and second != first


@pytest.mark.asyncio
async def test_a_changed_tool_list_is_sent_to_the_client(
    daemon_factory: Callable[..., Any], tmp_path: Path
) -> None:
    script = [action("fix_grow", {}), {"content": "Final Answer: grown"}]
    async with ReplayServer(script) as model:
        client = await daemon_factory({**NO_STORE, "llm": {"baseUrl": model.base_url}})
        await first_step(client, "grow", [fixture_server(tmp_path / "pids")])
        assert await gone(lambda: any("fix_extra" in str(c) for c in client.tools_changed))
    listed = [t["name"] for t in client.tools_changed[-1]["tools"]]
    assert {"fix_ping", "fix_die", "fix_grow", "fix_extra"} <= set(listed)


@pytest.mark.asyncio
async def test_no_mcp_server_outlives_the_daemon(
    workspace: Path, daemon_factory: Callable[..., Any], tmp_path: Path
) -> None:
    pids = tmp_path / "pids"
    servers = [
        fixture_server(pids, "--stubborn"),
        time_server(),
        {"name": "fs", "command": str(NPM_BIN / "mcp-server-filesystem"), "args": [str(workspace)]},
    ]
    async with ReplayServer([action("fix_ping", {})]) as model:
        client = await daemon_factory({**NO_STORE, "llm": {"baseUrl": model.base_url}})
        await first_step(client, "ping", servers)  # the session stays open: its servers keep running
        fixture_pid = int(pids.read_text())
        time_pids = processes_mentioning(str(VENV_BIN / "mcp-server-time"))
        assert alive(fixture_pid) and time_pids != [] and processes_mentioning(str(workspace)) != []
        await client.lsp.shutdown_session()
    assert await gone(
        lambda: (
            not alive(fixture_pid)
            and not any(alive(pid) for pid in time_pids)
            and processes_mentioning(str(workspace)) == []
        )
    )


@pytest.mark.asyncio
async def test_tools_that_are_not_read_only_ask_first(
    daemon_factory: Callable[..., Any], tmp_path: Path
) -> None:
    server = {**fixture_server(tmp_path / "pids"), "requiresApproval": True}
    script = [action("fix_ping", {}), action("fix_grow", {}), {"content": "Final Answer: {last_observation}"}]
    async with ReplayServer(script) as model:
        client = await daemon_factory({**NO_STORE, "llm": {"baseUrl": model.base_url}})
        client.permission_answer = lambda params: {"decision": "allow_once"}
        session_id, pinged = await first_step(client, "ping, then grow", [server])
        assert client.permission_requests == [] and "pong" in pinged["observations"][0]["output"]
        final = await client.request("agent/run", {"sessionId": session_id})
    assert [r["toolCall"]["name"] for r in client.permission_requests] == ["fix_grow"]
    assert client.permission_requests[0]["tool"]["mcpServer"] == "fix"
    assert final["finalAnswer"] == "grown"


@pytest.mark.asyncio
async def test_a_timeout_or_a_cancelled_step_cancels_the_mcp_request(
    daemon_factory: Callable[..., Any], tmp_path: Path
) -> None:
    pids = tmp_path / "pids"
    events = pids.with_suffix(".events")
    script = [action("fix_slow", {}), action("fix_slow", {}), {"content": "Final Answer: no"}]
    async with ReplayServer(script) as model:
        options = {**NO_STORE, "llm": {"baseUrl": model.base_url}, "tools": {"timeoutSec": 2}}
        client = await daemon_factory(options)
        session_id, timed_out = await first_step(client, "be slow", [fixture_server(pids)])
        assert timed_out["observations"][0]["output"] == "fix_slow timed out after 2 s"
        assert await gone(lambda: events.read_text().split() == ["started", "cancelled"])
        running = asyncio.ensure_future(client.request("agent/run", {"sessionId": session_id}))
        assert await gone(lambda: events.read_text().split() == ["started", "cancelled", "started"])
        await client.request("agent/cancel", {"sessionId": session_id})
        assert (await running)["stopReason"] == "cancelled"
    assert await gone(lambda: events.read_text().split() == ["started", "cancelled"] * 2)


@pytest.mark.asyncio
async def test_a_server_killed_while_idle_is_reported_and_the_next_call_starts_it(
    daemon_factory: Callable[..., Any], tmp_path: Path
) -> None:
    pids = tmp_path / "pids"
    script = [action("fix_ping", {}), action("fix_ping", {}), {"content": "Final Answer: fine"}]
    async with ReplayServer(script) as model:
        client = await daemon_factory({**NO_STORE, "llm": {"baseUrl": model.base_url}})
        session_id, first = await first_step(client, "ping twice", [fixture_server(pids)])
        os.kill(int(pids.read_text()), signal.SIGKILL)
        assert await gone(lambda: statuses(client, session_id) != [])
        second = await client.request("agent/step", {"sessionId": session_id})
    before, after = (int(pid) for pid in pids.read_text().split())
    assert statuses(client, session_id) == ["MCP server 'fix' stopped unexpectedly"]
    assert first["observations"][0]["output"] == f"pong from {before}"
    assert second["observations"][0]["output"] == f"pong from {after}"


async def start_web(port: int) -> asyncio.subprocess.Process:
    """server-everything over streamable HTTP on `port`, once it says it listens."""
    web = await asyncio.create_subprocess_exec(
        str(NPM_BIN / "mcp-server-everything"),
        "streamableHttp",
        env={**os.environ, "PORT": str(port)},
        stdin=asyncio.subprocess.DEVNULL,
        stdout=asyncio.subprocess.DEVNULL,
        stderr=asyncio.subprocess.PIPE,
    )
    assert web.stderr is not None
    while b"listening on port" not in await web.stderr.readline():
        pass
    return web


async def stop_web(web: asyncio.subprocess.Process) -> None:
    if web.returncode is None:
        web.kill()
        await web.wait()


@pytest.mark.asyncio
async def test_a_streamable_http_server_and_a_reconnection(daemon_factory: Callable[..., Any]) -> None:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    server = {
        "type": "http",
        "name": "web",
        "url": f"http://127.0.0.1:{port}/mcp",
        "headers": [{"name": "X-Trace", "value": "e2e"}],
        "requiresApproval": False,
    }
    echoes = [action("web_echo", {"message": word}) for word in ("one", "two", "three")]
    web = await start_web(port)
    try:
        async with ReplayServer([*echoes, {"content": "Final Answer: ok"}]) as model:
            client = await daemon_factory({**NO_STORE, "llm": {"baseUrl": model.base_url}})
            session_id, step = await first_step(client, "echo", [server])
            listed = {t["name"]: t for t in (await client.request("agent/listTools", None))["tools"]}
            await stop_web(web)
            down = await client.request("agent/step", {"sessionId": session_id})
            web = await start_web(port)  # the same URL again: the next call reconnects
            again = await client.request("agent/step", {"sessionId": session_id})
    finally:
        await stop_web(web)
    assert (step["observations"][0]["isError"], step["observations"][0]["output"]) == (False, "Echo: one")
    assert listed["web_echo"]["mcpServer"] == "web"
    lost = "MCP server 'web' stopped unexpectedly"
    assert (down["observations"][0]["isError"], down["observations"][0]["output"]) == (True, lost)
    assert statuses(client, session_id) == [lost]
    assert (again["observations"][0]["isError"], again["observations"][0]["output"]) == (False, "Echo: three")


@pytest.mark.asyncio
async def test_output_is_capped_and_server_names_stay_unambiguous(
    daemon_factory: Callable[..., Any], tmp_path: Path
) -> None:
    script = [action("fix_big", {}), {"content": "Final Answer: capped"}]
    async with ReplayServer(script) as model:
        options = {**NO_STORE, "llm": {"baseUrl": model.base_url}, "tools": {"maxOutputBytes": 1024}}
        client = await daemon_factory(options)
        _, step = await first_step(client, "big", [fixture_server(tmp_path / "pids")])
        with pytest.raises(Exception) as clash:
            await client.request(
                "agent/startSession", {"task": "t", "mcpServers": [{**time_server(), "name": "fix"}]}
            )
    observation = step["observations"][0]
    assert observation["truncated"] and observation["output"].startswith("x" * 1024 + "\n[")
    assert "5000 bytes" in observation["output"]
    assert getattr(clash.value, "code", None) == -32602
    assert "an MCP server named 'fix' with another configuration is in use" in str(clash.value)


@pytest.mark.asyncio
async def test_sessions_naming_one_server_share_it_until_the_last_one_ends(
    daemon_factory: Callable[..., Any], tmp_path: Path
) -> None:
    pids = tmp_path / "pids"
    ping = action("fix_ping", {})
    script = [ping, {"content": "Final Answer: one"}, ping, {"content": "Final Answer: two"}]
    async with ReplayServer(script) as model:
        client = await daemon_factory({**NO_STORE, "llm": {"baseUrl": model.base_url}})
        first, before = await first_step(client, "ping", [fixture_server(pids)])
        second = await client.request(
            "agent/startSession", {"task": "t", "mcpServers": [fixture_server(pids)]}
        )
        await client.request("agent/step", {"sessionId": first})  # the first session ends
        after = await client.request("agent/step", {"sessionId": second["sessionId"]})
        (pid,) = (int(line) for line in pids.read_text().split())  # started once, never restarted
        assert before["observations"][0]["output"] == after["observations"][0]["output"] == f"pong from {pid}"
        await client.request("agent/step", {"sessionId": second["sessionId"]})  # the last user ends
        assert await gone(lambda: not alive(pid))


@pytest.mark.asyncio
async def test_a_follow_up_prompt_takes_its_mcp_servers_up_again(
    daemon_factory: Callable[..., Any], tmp_path: Path
) -> None:
    pids = tmp_path / "pids"
    ping = action("fix_ping", {})
    script = [ping, {"content": "Final Answer: one"}, ping, {"content": "Final Answer: two"}]
    async with ReplayServer(script) as model:
        client = await daemon_factory({**NO_STORE, "llm": {"baseUrl": model.base_url}})
        session_id, _ = await first_step(client, "ping", [fixture_server(pids)])
        await client.request("agent/run", {"sessionId": session_id})  # the turn ends: its server stops
        (first,) = (int(line) for line in pids.read_text().split())
        assert await gone(lambda: not alive(first))
        await client.request("agent/prompt", {"sessionId": session_id, "text": "ping again"})
        again = await client.request("agent/step", {"sessionId": session_id})
        final = await client.request("agent/run", {"sessionId": session_id})
    observation = again["observations"][0]
    assert not observation["isError"], observation["output"]
    started = [int(line) for line in pids.read_text().split()]  # started afresh by the prompt
    assert started[0] == first and observation["output"] == f"pong from {started[1]}"
    assert final["finalAnswer"] == "two"
