"""The sandbox through the real daemon: a workspace tool's declarations become what its call may touch,
and `tools.sandbox = "off"` (the user's own setting) runs it unconfined."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from mini_agent.app import user_settings
from mini_agent.app.user_settings import UserSettings
from mini_agent.scripted import ReplayServer

from ...support.listener import KNOCK, greeting_listener
from ...support.raw import RawDaemon

TOOLS = '''
from pathlib import Path
from mini_agent import tool

@tool(read_only=True)
def peek(path: str) -> str:
    """Read a file (and, wrongly, try to leave a mark)."""
    Path("mark.txt").write_text("x")
    return Path(path).read_text()

def save(path: str, text: str) -> str:
    """Write a file."""
    Path(path).write_text(text)
    return "saved"
'''


async def run_calls(client: Any, calls: list[tuple[str, dict[str, Any]]]) -> list[dict[str, Any]]:
    """The observations of `calls`, made one per model turn by a replayed model."""
    await client.request("agent/registerTool", {"path": "tools.py"})
    session_id = (await client.request("agent/startSession", {"task": "go"}))["sessionId"]
    await client.request("agent/run", {"sessionId": session_id})
    session = await client.request("agent/getSession", {"sessionId": session_id})
    return [observation for step in session["steps"] for observation in step["observations"]]


def turns(calls: list[tuple[str, dict[str, Any]]]) -> list[dict[str, Any]]:
    return [*({"tool_calls": [{"name": n, "arguments": a}]} for n, a in calls), {"content": "done"}]


@pytest.mark.asyncio
async def test_declarations_become_the_sandbox_of_each_call_through_the_daemon(
    workspace: Path, daemon_factory: Callable[..., Any], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    (workspace / "tools.py").write_text(TOOLS)
    (tmp_path / "tmp").mkdir()
    monkeypatch.setenv("TMPDIR", str(tmp_path / "tmp"))  # the daemon's temp folder, and so its tools'
    outside = tmp_path / "outside.txt"
    calls = [("peek", {"path": "schema.py"}), ("save", {"path": "new.txt", "text": "kept"}),
             ("save", {"path": str(outside), "text": "escaped"})]  # fmt: skip
    async with ReplayServer(turns(calls)) as model:
        options = {"llm": {"baseUrl": model.base_url, "toolMode": "native"}, "store": {"enabled": False},
                   "workspaceTrusted": True}  # fmt: skip
        client = await daemon_factory(options)
        observations = await run_calls(client, calls)
    peeked, saved, escaped = observations
    assert peeked["isError"] and "Permission denied" in peeked["output"]  # read_only: not even the workspace
    assert not (workspace / "mark.txt").exists()
    assert (saved["isError"], saved["output"]) == (False, "saved") and (workspace / "new.txt").exists()
    assert escaped["isError"] and "Permission denied" in escaped["output"] and not outside.exists()


@pytest.mark.asyncio
async def test_the_users_sandbox_off_runs_a_read_only_tool_unconfined(
    workspace: Path, daemon_factory: Callable[..., Any]
) -> None:
    (workspace / "tools.py").write_text(TOOLS)
    calls = [("peek", {"path": "schema.py"})]
    async with ReplayServer(turns(calls)) as model:
        options = {"llm": {"baseUrl": model.base_url, "toolMode": "native"}, "store": {"enabled": False},
                   "workspaceTrusted": True, "tools": {"sandbox": "off"}}  # fmt: skip
        client = await daemon_factory(options)
        (peeked,) = await run_calls(client, calls)
    assert not peeked["isError"] and (workspace / "mark.txt").read_text() == "x"


@pytest.mark.parametrize(("options", "state"), [({}, "on"), ({"tools": {"sandbox": "off"}}, "off")])
def test_initialize_announces_what_tool_calls_get(
    workspace: Path, options: dict[str, Any], state: str
) -> None:
    daemon = RawDaemon(workspace)
    try:
        agent = daemon.initialize(options)["result"]["capabilities"]["experimental"]["agent"]
    finally:
        daemon.close()
    assert agent["sandbox"]["state"] == state and agent["sandbox"]["landlockAbi"] >= 1




@pytest.mark.asyncio
async def test_a_call_the_sandbox_refused_is_asked_again_with_the_network_on_offer_for_that_call_only(
    workspace: Path, daemon_factory: Callable[..., Any]
) -> None:
    async with greeting_listener() as port:
        (workspace / "tools.py").write_text(KNOCK)
        calls = [("knock", {"port": port, "note": note}) for note in ("first", "granted", "after")]
        async with ReplayServer(turns(calls)) as model:
            options = {"llm": {"baseUrl": model.base_url, "toolMode": "native"}, "store": {"enabled": False},
                       "workspaceTrusted": True, "permissionMode": "ask_never"}  # fmt: skip
            client = await daemon_factory(options)
            client.permission_answer = lambda params: {"decision": "allow_once_expanded"}
            refused, granted, again = await run_calls(client, calls)
    assert refused["isError"] and "Permission denied" in refused["output"]  # Landlock's refused connect
    assert (granted["isError"], granted["output"]) == (False, "hello")  # this call, with the network
    assert again["isError"] and "Permission denied" in again["output"]  # the grant was for one call
    (asked,) = client.permission_requests  # in ask_never too: a call that needs an expansion asks
    assert [o["optionId"] for o in asked["options"]] == ["allow_once", "allow_once_expanded", "reject_once"]
    assert asked["options"][1]["name"] == "Allow once, with network access"
    assert asked["expansion"] == {"network": True, "write": None}


def test_the_users_own_settings_can_turn_the_sandbox_off_and_a_workspace_file_cannot(
    workspace: Path, state_dir: Path
) -> None:
    (workspace / "pyproject.toml").write_text('[tool.mini-agent.tools]\nsandbox = "off"\n', encoding="utf-8")
    daemon = RawDaemon(workspace)
    try:
        refused = daemon.initialize({})
    finally:
        daemon.close()
    assert refused["result"]["capabilities"]["experimental"]["agent"]["sandbox"]["state"] == "on"
    (workspace / "pyproject.toml").unlink()
    user_settings.save(UserSettings("http://127.0.0.1:9/v1", sandbox="off"))  # mini-agent setup --sandbox off
    daemon = RawDaemon(workspace)
    try:
        agent = daemon.initialize({})["result"]["capabilities"]["experimental"]["agent"]
    finally:
        daemon.close()
    assert agent["sandbox"]["state"] == "off"
