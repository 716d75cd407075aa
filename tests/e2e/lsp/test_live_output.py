"""Live output of running tools through the real daemon over stdio: what a workspace tool prints and
reports, and an MCP server's progress, reach the client while the call runs; the model sees only the
return value; the output is capped with the daemon's memory bounded; progress extends an MCP call's
timeout up to its cap, and a call that stops reporting is cut at the timeout."""

from __future__ import annotations

import os
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from mini_agent.scripted import ReplayServer
from mini_agent.tools.live import LIVE_OUTPUT_MAX_BYTES

from ...support.daemon import AgentTestClient
from ...support.scripted import action
from ...support.tools import TICKER, write

FIXTURE = Path(__file__).parents[2] / "support" / "mcp_fixture_server.py"
NO_STORE = {"store": {"enabled": False}}

FLOOD = '''
import sys


def flood() -> str:
    """Print 50 MB."""
    chunk = ("x" * 99 + "\\n") * 10_000
    for _ in range(50):
        sys.stdout.write(chunk)
    return "flooded"
'''
MEMORY_BOUND_KIB = 100 * 1024  # the daemon's resident memory may grow this much while 50 MB are printed
SUMMARY_ROOM = 200  # the summary line after the shown output


def call_updates(client: AgentTestClient, session_id: str) -> list[dict[str, Any]]:
    return [
        u["update"]
        for u in client.updates
        if u["sessionId"] == session_id and u["update"]["kind"] in ("tool_call", "tool_call_update")
    ]


def printed(updates: list[dict[str, Any]]) -> str:
    return "".join(u["output"]["append"] for u in updates if "output" in u)


def resident_kib(pid: int) -> int:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1])
    raise AssertionError(f"no VmRSS in /proc/{pid}/status")


async def one_call(
    daemon_factory: Callable[..., Any], workspace: Path, source: str, tool: str
) -> tuple[AgentTestClient, str, dict[str, Any], list[Any]]:
    write(workspace, f"{tool}.py", source)
    script = [action(tool, {}), {"content": "Final Answer: {last_observation}"}]
    async with ReplayServer(script) as model:
        client = await daemon_factory({**NO_STORE, "llm": {"baseUrl": model.base_url}})
        await client.request("agent/registerTool", {"path": f"{tool}.py"})
        session_id = (await client.request("agent/startSession", {"task": "go"}))["sessionId"]
        result = await client.request("agent/run", {"sessionId": session_id})
        exchanges = list(model.exchanges)
    return client, session_id, result, exchanges


@pytest.mark.asyncio
async def test_printed_lines_and_reports_stream_while_the_call_runs(
    daemon_factory: Callable[..., Any], workspace: Path
) -> None:
    client, session_id, result, exchanges = await one_call(daemon_factory, workspace, TICKER, "tick")
    updates = call_updates(client, session_id)
    statuses = [u.get("status") for u in updates]
    done = statuses.index("completed")
    first_line = next(i for i, u in enumerate(updates) if "tick 0" in u.get("output", {}).get("append", ""))
    assert statuses[first_line] == "in_progress" and first_line < done  # live, before the result
    assert all(status == "in_progress" for status in statuses[1:done])
    assert printed(updates[:done]) == "".join(f"tick {index}\n" for index in range(10))
    reports = [u["progress"] for u in updates if "progress" in u]
    assert reports[0]["message"].startswith("tick ") and reports[-1] == {"message": "tick 9", "fraction": 1.0}
    assert updates[done]["observation"]["output"] == "ticked"
    tool_messages = [m for m in exchanges[1].body["messages"] if m["role"] == "tool"]
    model_saw = tool_messages[0]["content"] if tool_messages else exchanges[1].body["messages"][-1]["content"]
    assert "tick 0" not in model_saw and "ticked" in model_saw  # the model gets the return value alone
    assert result["finalAnswer"] == "ticked"


@pytest.mark.asyncio
async def test_fifty_megabytes_of_prints_are_capped_and_the_daemon_stays_small(
    daemon_factory: Callable[..., Any], workspace: Path
) -> None:
    write(workspace, "flood.py", FLOOD)
    script = [action("flood", {}), {"content": "Final Answer: {last_observation}"}]
    async with ReplayServer(script) as model:
        client = await daemon_factory({**NO_STORE, "llm": {"baseUrl": model.base_url}})
        await client.request("agent/registerTool", {"path": "flood.py"})
        pid = client.lsp._server.pid
        before = resident_kib(pid)
        session_id = (await client.request("agent/startSession", {"task": "go"}))["sessionId"]
        result = await client.request("agent/run", {"sessionId": session_id})
        after = resident_kib(pid)
    updates = call_updates(client, session_id)
    shown = printed(updates)
    assert len(shown.encode()) <= LIVE_OUTPUT_MAX_BYTES + SUMMARY_ROOM
    assert shown.startswith("x" * 99 + "\n")
    assert shown.rstrip().endswith("more lines not shown (49.9 MB more)")
    assert "more lines not shown" in updates[-2]["output"]["append"] and updates[-2]["liveOutputTruncated"]
    assert updates[-1]["status"] == "completed" and result["finalAnswer"] == "flooded"
    assert after - before < MEMORY_BOUND_KIB


def fixture_server(pids: Path) -> dict[str, Any]:
    return {
        "name": "fix",
        "command": sys.executable,
        "args": [str(FIXTURE), str(pids)],
        "env": [{"name": "PYTHONPATH", "value": os.pathsep.join(sys.path)}],
        "requiresApproval": False,
    }


@pytest.mark.asyncio
async def test_mcp_progress_reaches_the_client_and_extends_the_timeout_up_to_its_cap(
    daemon_factory: Callable[..., Any], tmp_path: Path
) -> None:
    script = [
        action("fix_report", {"times": 10, "every": 0.3}),  # 3 s of reports, under a 1 s timeout
        action("fix_report", {"times": 2, "every": 0.1, "hang": 30}),  # then silence
        action("fix_report", {"times": 1000, "every": 0.2}),  # reports past the cap of 10 s
        {"content": "Final Answer: done"},
    ]
    async with ReplayServer(script) as model:
        options = {**NO_STORE, "llm": {"baseUrl": model.base_url}, "tools": {"timeoutSec": 1}}
        client = await daemon_factory(options)
        started = await client.request(
            "agent/startSession", {"task": "go", "mcpServers": [fixture_server(tmp_path / "pids")]}
        )
        session_id = started["sessionId"]
        steps = [await client.request("agent/step", {"sessionId": session_id}) for _ in range(3)]
    outputs = [step["observations"][0]["output"] for step in steps]
    assert outputs[0] == "reported 10 times" and not steps[0]["observations"][0]["isError"]
    assert outputs[1] == "fix_report timed out: no progress report for 1 s"
    assert outputs[2].startswith("fix_report timed out after 10 s: it kept reporting progress")
    first = [u for u in call_updates(client, session_id) if u["toolCallId"] == steps[0]["toolCalls"][0]["id"]]
    statuses = [u.get("status") for u in first]
    reports = [i for i, u in enumerate(first) if "progress" in u]
    assert reports and reports[0] < statuses.index("completed")
    assert first[reports[0]]["status"] == "in_progress"
    assert first[reports[-1]]["progress"] == {"message": "step 10 of 10", "fraction": 1.0}
