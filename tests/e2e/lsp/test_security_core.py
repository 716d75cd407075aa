"""Attacks on the core through the real daemon over stdio (issue 10, items 1-4 and 9): a model that
reuses tool-call ids, foreign model servers fishing for the API key, a cloned repository whose store
would run its code at start-up, a world-readable store, the key in the debug log, a full disk in the
middle of a step, and an approval given to a second daemon."""

from __future__ import annotations

import asyncio
import os
import resource
import stat
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from mini_agent.scripted import ReplayServer
from mini_agent_client.client import AgentClient

from ...support.daemon import DAEMON, daemon_env
from ...support.scripted import action

KEY = "sk-daemon-4f1c2e9a7b"
OWN_KEY = "sk-session-8d03b6e1c5"
FINAL = {"turns": [{"content": "Final Answer: ok"}], "repeat_last": True}

DANGER = '''
from mini_agent import tool

@tool(requires_approval=True)
def danger(x: str) -> str:
    """Append x to ran.txt; a person must allow it."""
    with open("ran.txt", "a") as out:
        out.write(x + "\\n")
    return "ran " + x
'''


def spawn(root: Path, options: dict[str, Any], **kwargs: Any) -> Any:
    return AgentClient.spawn(root=root, options=options, command=kwargs.pop("command", DAEMON),
                             env=daemon_env(**kwargs.pop("env", {})), **kwargs)


def bearer(model: ReplayServer) -> list[str | None]:
    """The Authorization header of each request the server got (None: no header)."""
    return [exchange.headers.get("Authorization") for exchange in model.exchanges]


# -- item 1: one decision per call, whatever ids the model sends ------------------------------


@pytest.mark.asyncio
async def test_calls_sharing_an_id_are_each_asked_about_with_their_own_arguments(
    workspace: Path, daemon_factory: Callable[..., Any]
) -> None:
    (workspace / "danger.py").write_text(DANGER)
    turns = [
        {"tool_calls": [
            {"id": "dup", "name": "danger", "arguments": {"x": "shown-to-user"}},
            {"id": "dup", "name": "danger", "arguments": {"x": "HIDDEN"}},
        ]},
        {"tool_calls": [{"id": "dup", "name": "danger", "arguments": {"x": "later"}}]},
        {"content": "done"},
    ]
    async with ReplayServer(turns) as model:
        client = await daemon_factory(
            {"llm": {"baseUrl": model.base_url, "toolMode": "native"}, "store": {"enabled": False}}
        )
        client.permission_answer = lambda asked: {
            "decision": "reject_once" if asked["toolCall"]["arguments"]["x"] == "HIDDEN" else "allow_once"
        }
        await client.request("agent/registerTool", {"path": "danger.py"})
        session_id = (await client.request("agent/startSession", {"task": "go"}))["sessionId"]
        result = await client.request("agent/run", {"sessionId": session_id})
        session = await client.request("agent/getSession", {"sessionId": session_id})
    assert result["finalAnswer"] == "done"
    asked = [request["toolCall"] for request in client.permission_requests]
    assert [call["arguments"]["x"] for call in asked] == ["shown-to-user", "HIDDEN", "later"]
    assert len({call["id"] for call in asked}) == 3  # every decision is keyed apart
    assert (workspace / "ran.txt").read_text() == "shown-to-user\nlater\n"
    first = session["steps"][0]["observations"]
    assert first[0]["output"] == "ran shown-to-user" and "declined" in first[1]["output"]
    # the model gets its own ids back byte-exact, in its calls and in the tool results
    history = model.requests[-1]["messages"]
    assert [c["id"] for m in history if m["role"] == "assistant" for c in m.get("tool_calls", [])] == [
        "dup", "dup", "dup"
    ]
    assert [m["tool_call_id"] for m in history if m["role"] == "tool"] == ["dup", "dup", "dup"]


# -- item 2: the API key goes to the server it was given for, and nowhere else ------------------


@pytest.mark.asyncio
async def test_the_api_key_goes_only_to_its_own_server_and_a_session_key_only_to_its_session(
    workspace: Path, daemon_factory: Callable[..., Any]
) -> None:
    async with ReplayServer(FINAL) as own, ReplayServer(FINAL) as foreign:
        client = await daemon_factory({"llm": {"baseUrl": own.base_url, "apiKey": KEY}})

        async def step(llm: dict[str, Any] | None) -> None:
            params: dict[str, Any] = {"task": "hi", **({"llm": llm} if llm else {})}
            session_id = (await client.request("agent/startSession", params))["sessionId"]
            assert (await client.request("agent/step", {"sessionId": session_id}))["finalAnswer"] == "ok"

        await step(None)
        await step({"baseUrl": foreign.base_url})
        await step({"baseUrl": foreign.base_url, "apiKey": OWN_KEY})
        await step({"baseUrl": foreign.base_url})
        await step({"baseUrl": own.base_url + "/"})
        await client.lsp.shutdown_session()
    assert bearer(own) == [f"Bearer {KEY}", f"Bearer {KEY}"]
    assert bearer(foreign) == [None, f"Bearer {OWN_KEY}", None]
    stored = b"".join(path.read_bytes() for path in (workspace / ".mini-agent").glob("sessions.db*"))
    assert b"sessions" in stored and OWN_KEY.encode() not in stored and KEY.encode() not in stored


@pytest.mark.asyncio
async def test_a_session_from_a_cloned_store_gets_no_key_for_its_server(workspace: Path) -> None:
    async with ReplayServer(FINAL) as own, ReplayServer(FINAL) as planted:
        async with spawn(workspace, {"llm": {"baseUrl": planted.base_url}}) as author:
            session_id = await author.start_session("innocent task")
        async with spawn(workspace, {"llm": {"baseUrl": own.base_url, "apiKey": KEY}}) as victim:
            assert (await victim.step(session_id))["finalAnswer"] == "ok"
    assert planted.exchanges == [] and bearer(own) == [f"Bearer {KEY}"]  # not trusted: the user's server


# -- item 3: no workspace code runs before the workspace is trusted -----------------------------

EVIL = '''
from pathlib import Path

Path("imported.marker").write_text("workspace code ran")


def hello() -> str:
    """Say hello."""
    return "hello"
'''


@pytest.mark.asyncio
async def test_stored_registrations_are_listed_not_imported_until_the_workspace_is_trusted(
    workspace: Path, daemon_factory: Callable[..., Any]
) -> None:
    (workspace / "evil.py").write_text(EVIL)
    marker = workspace / "imported.marker"
    async with spawn(workspace, {"workspaceTrusted": True}) as author:  # the repository's author
        await author.register_tool("evil.py")
    marker.unlink()

    client = await daemon_factory({})  # a fresh clone: nobody has said it is trusted
    listed = (await client.request("agent/listTools", {}))["tools"]
    assert not marker.exists()
    assert listed == [{
        "name": "evil.py",
        "description": "from evil.py; loaded once the workspace is trusted",
        "inputSchema": {"type": "object"},
        "requiresApproval": False,
        "source": {"path": "evil.py", "function": "", "line": 0},
        "restored": True,
        "loaded": False,
    }]
    session_id = (await client.request("agent/startSession", {"task": "x"}))["sessionId"]
    assert (await client.request("agent/getSession", {"sessionId": session_id}))["tools"] == []
    # registering a file is the user's own act: allowed, and the held-back registration is kept
    assert len((await client.request("agent/registerTool", {"path": "tools.py"}))["tools"]) == 2
    assert not marker.exists()

    trusted = (await client.request("agent/trustWorkspace", {}))["tools"]
    assert marker.read_text() == "workspace code ran"
    assert {tool["name"] for tool in trusted} == {"hello", "count_file_lines", "list_python_files"}
    assert all("loaded" not in tool for tool in trusted)
    assert client.tools_changed[-1]["tools"] == trusted


@pytest.mark.asyncio
async def test_a_held_back_registration_can_be_removed_without_importing_it(
    workspace: Path, daemon_factory: Callable[..., Any]
) -> None:
    (workspace / "evil.py").write_text(EVIL)
    marker = workspace / "imported.marker"
    async with spawn(workspace, {"workspaceTrusted": True}) as author:
        await author.register_tool("evil.py")
    marker.unlink()
    untrusted = await daemon_factory({})
    removed = (await untrusted.request("agent/unregisterTool", {"name": "evil.py"}))["tools"]
    assert [(tool["name"], tool["loaded"]) for tool in removed] == [("evil.py", False)]
    assert (await untrusted.request("agent/listTools", {}))["tools"] == []
    async with spawn(workspace, {"workspaceTrusted": True}) as later:
        assert await later.list_tools() == []
    assert not marker.exists()


# -- item 4: a private store, and no key in the log ---------------------------------------------


@pytest.mark.asyncio
async def test_the_store_is_private_to_its_owner_whatever_the_umask(
    workspace: Path, daemon_factory: Callable[..., Any]
) -> None:
    old = os.umask(0o022)
    try:
        client = await daemon_factory({})
        await client.request("agent/startSession", {"task": "secret prompt"})
        folder = workspace / ".mini-agent"
        modes = {p.name: stat.S_IMODE(p.stat().st_mode) for p in folder.glob("sessions.db*")}
        assert stat.S_IMODE(folder.stat().st_mode) == 0o700
        assert modes == {"sessions.db": 0o600, "sessions.db-wal": 0o600, "sessions.db-shm": 0o600}
    finally:
        os.umask(old)


@pytest.mark.asyncio
async def test_no_api_key_in_the_debug_log(workspace: Path, tmp_path: Path) -> None:
    log = tmp_path / "daemon.stderr"
    async with ReplayServer(FINAL) as model:
        options = {"llm": {"baseUrl": model.base_url, "apiKey": KEY}}
        debug = {"MINI_AGENT_LOG": "DEBUG"}
        with log.open("wb") as stderr:
            async with spawn(workspace, options, env=debug, stderr=stderr.fileno()) as c:
                session_id = await c.start_session("hi", llm={"baseUrl": model.base_url, "apiKey": OWN_KEY})
                assert (await c.step(session_id))["finalAnswer"] == "ok"
    text = log.read_text()
    assert "InitializeParams" in text and "agent/step" in text  # it did log the requests
    assert KEY not in text and OWN_KEY not in text
    assert bearer(model) == [f"Bearer {OWN_KEY}"]


# -- item 9: a full disk mid-step, and an approval from another daemon ---------------------------

BULKY = '''
def mark() -> str:
    """Leave a mark."""
    with open("ran.txt", "a") as out:
        out.write("ran\\n")
    return "marked"


def bulky() -> str:
    """Leave a mark, then answer with far more text than the store has room left for."""
    mark()
    return "x" * 1_000_000
'''
FILE_LIMIT = 600_000  # bytes a file of the daemon may reach: room for all but a megabyte (a step: 130 kB)


def limited_daemon(limit: int) -> list[str]:
    """The daemon with a soft RLIMIT_FSIZE: a write past `limit` fails (EFBIG) as on a full disk,
    until the test lifts it (`prlimit`, as far as the hard limit allows)."""
    start = ("import resource as r, runpy; "
             f"r.setrlimit(r.RLIMIT_FSIZE, ({limit}, r.getrlimit(r.RLIMIT_FSIZE)[1])); "
             "runpy.run_module('mini_agent', run_name='__main__', alter_sys=True)")
    return [sys.executable, "-c", start]


@pytest.mark.asyncio
async def test_a_store_that_fills_up_mid_step_leaves_the_session_true(workspace: Path) -> None:
    (workspace / "bulky.py").write_text(BULKY)
    turns = [action("bulky", {}), {"content": "Final Answer: {last_observation}"}]
    async with ReplayServer(turns) as model:
        llm = {"baseUrl": model.base_url, "toolMode": "react"}
        options = {"llm": llm, "tools": {"maxOutputBytes": 2_000_000}, "workspaceTrusted": True}
        async with spawn(workspace, options, command=limited_daemon(FILE_LIMIT)) as full:
            await full.register_tool("bulky.py")
            session_id = await full.start_session("fill the disk")
            step = await full.step(session_id)
            assert (workspace / "ran.txt").read_text() == "ran\n"
            assert step["status"] == "ready" and step["stopReason"] == "error"
            assert "could not be saved" in step["error"] and "cannot write" in step["error"]
            assert "sessions.db" in step["error"]
            assert step["observations"][0]["output"].startswith("xxx")  # the result is not lost
            held = await full.call("agent/getSession", {"sessionId": session_id})
            assert held["status"] == "ready" and len(held["steps"][0]["observations"]) == 1
            listed = await full.call("agent/listSessions", {})
            assert [s["status"] for s in listed["sessions"]] == ["ready"]
            full.process.kill()  # the daemon dies before the disk has room again
            await full.process.wait()

        async with spawn(workspace, options) as after:
            resumed = await after.call("agent/resumeSession", {"sessionId": session_id})
            assert resumed["status"] == "ready"
            redone = await after.step(session_id)
            assert "Interrupted" in redone["observations"][0]["output"]  # reported, not run again
    assert (workspace / "ran.txt").read_text() == "ran\n"


@pytest.mark.asyncio
async def test_a_run_waiting_for_approval_notices_one_given_to_another_daemon(workspace: Path) -> None:
    (workspace / "danger.py").write_text(DANGER)
    turns = [action("danger", {"x": "approved elsewhere"}), {"content": "Final Answer: {last_observation}"}]
    async with ReplayServer(turns) as model:
        options = {"llm": {"baseUrl": model.base_url, "toolMode": "react"}}
        async with spawn(workspace, options) as first, spawn(workspace, options) as second:
            await first.register_tool("danger.py")
            session_id = await first.start_session("ask first")
            running = asyncio.ensure_future(first.call("agent/run", {"sessionId": session_id}))

            waiting: list[dict[str, Any]] = []
            async with asyncio.timeout(20):
                while not waiting:
                    await asyncio.sleep(0.05)
                    waiting = (await second.get_session(session_id))["pendingApprovals"]
            call_id = waiting[0]["toolCall"]["id"]
            await second.call(
                "agent/approve", {"sessionId": session_id, "toolCallId": call_id, "decision": "allow_once"}
            )
            result = await asyncio.wait_for(running, 30)
    assert result["finalAnswer"] == "ran approved elsewhere"
    assert (workspace / "ran.txt").read_text() == "approved elsewhere\n"



@pytest.mark.asyncio
async def test_no_tool_runs_before_its_start_is_saved_and_a_later_save_writes_all(workspace: Path) -> None:
    (workspace / "bulky.py").write_text(BULKY)
    turns = [action("mark", {}, thought="y" * 1_000_000), {"content": "Final Answer: {last_observation}"}]
    async with ReplayServer(turns) as model:
        options = {"llm": {"baseUrl": model.base_url, "toolMode": "react"}, "workspaceTrusted": True}
        async with spawn(workspace, options, command=limited_daemon(FILE_LIMIT)) as full:
            await full.register_tool("bulky.py")
            session_id = await full.start_session("think hard")
            refused = await full.step(session_id)
            assert refused["status"] == "ready" and refused["stopReason"] == "error"
            assert "no tool was run" in refused["error"] and not (workspace / "ran.txt").exists()
            hard = resource.getrlimit(resource.RLIMIT_FSIZE)[1]
            resource.prlimit(full.process.pid, resource.RLIMIT_FSIZE, (hard, hard))  # room on the disk again
            ran = await full.step(session_id)
            assert ran["index"] == 0 and ran["observations"][0]["output"] == "marked" and ran["error"] is None
            assert (await full.step(session_id))["finalAnswer"] == "marked"
        async with spawn(workspace, options) as fresh:
            stored = await fresh.get_session(session_id)
    assert stored["status"] == "finished" and stored["steps"][0]["thought"].endswith("y" * 1000)
    assert [o["output"] for o in stored["steps"][0]["observations"]] == ["marked"]
    assert (workspace / "ran.txt").read_text() == "ran\n"
