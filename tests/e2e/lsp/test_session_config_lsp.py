"""The session configuration on the LSP door, end to end with the project's client library over real
stdio: `agent/listModels` (a server listing three, one that is down, one that never answers),
`agent/configureSession` (the next model request carries the new model), `permissionMode` on
`agent/startSession`, and a second daemon taking the session up with its model and mode."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from mini_agent_client import AgentClient
from mini_agent_client.rpc import RpcError

from ...support.daemon import daemon_env
from ...support.model_list import APPROVAL_TOOL, MODELS, ListingServer, down_url, silent_server
from ...support.scripted import action

DONE = {"content": "Final Answer: done"}


def options(base_url: str, *, trusted: bool = True, store: bool = False) -> dict[str, Any]:
    return {
        "llm": {"baseUrl": base_url, "model": "replay"},
        "store": {"enabled": store},
        "workspaceTrusted": trusted,
    }


def spawn(workspace: Path, opts: dict[str, Any]) -> Any:
    return AgentClient.spawn(root=workspace, options=opts, env=daemon_env())


@pytest.mark.asyncio
async def test_list_models_gives_what_the_server_lists(workspace: Path) -> None:
    async with ListingServer() as model, spawn(workspace, options(model.base_url)) as client:
        assert {"agent/listModels", "agent/configureSession"} <= set(client.methods)
        found = await client.list_models()
        again = await client.list_models(model.base_url, refresh=True)
    assert found == {"models": [{"id": m} for m in MODELS], "current": "replay",
                     "baseUrl": model.base_url, "source": "server"}
    assert again == found


@pytest.mark.asyncio
async def test_list_models_says_why_when_the_server_is_down_or_silent(workspace: Path) -> None:
    down = down_url()
    async with silent_server() as silent, spawn(workspace, options(down)) as client:
        unreachable = await client.list_models()
        mute = await client.list_models(silent)
    assert unreachable["source"] == "configured" and unreachable["models"] == [{"id": "replay"}]
    assert f"the model server at {down} could not be reached" in unreachable["message"]
    assert "the configured model 'replay' is the only choice" in unreachable["message"]
    assert mute["source"] == "configured" and mute["baseUrl"] == silent
    assert f"the model server at {silent} did not answer in 2 s" in mute["message"]


@pytest.mark.asyncio
async def test_configure_session_switches_the_model_from_the_next_turn(workspace: Path) -> None:
    async with ListingServer([DONE, DONE]) as model, spawn(workspace, options(model.base_url)) as client:
        sid = await client.start_session("first")
        statuses: list[dict[str, Any]] = []
        client.connection.on_notification("agent/update", lambda p: statuses.append(p["update"]))
        await client.call("agent/run", {"sessionId": sid})
        configured = await client.configure_session(sid, model="large", permission_mode="ask_always")
        unchanged = await client.configure_session(sid)
        await client.call("agent/prompt", {"sessionId": sid, "text": "second"})
        await client.call("agent/run", {"sessionId": sid})
        session = await client.get_session(sid)
        asked = model.asked_for()
    assert configured == {
        "sessionId": sid, "model": "large", "permissionMode": "ask_always", "toolMode": "react"
    }
    assert unchanged == configured
    assert asked == ["replay", "large"]
    assert session["llm"]["model"] == "large" and session["permissionMode"] == "ask_always"
    changes = [u for u in statuses if u["kind"] == "status" and "config" in u]
    assert [u["message"] for u in changes] == ["Model: large; Permission mode: Ask before every tool call"]


@pytest.mark.asyncio
async def test_permission_mode_on_start_session(workspace: Path) -> None:
    (workspace / "stamp.py").write_text(APPROVAL_TOOL, encoding="utf-8")
    script = [action("stamp", {"note": "x"}), DONE]
    async with ListingServer(script) as model, spawn(workspace, options(model.base_url)) as client:
        asked: list[dict[str, Any]] = []

        async def decide(params: dict[str, Any]) -> dict[str, Any]:
            asked.append(params)
            return {"decision": "reject_once"}

        client.on_permission(decide)
        await client.register_tool("stamp.py")
        events = [e async for e in client.run("stamp it", permission_mode="ask_never")]
        session = await client.get_session(events[-1].session_id)
    assert asked == []
    assert [e.observation["output"] for e in events if e.observation is not None] == ["stamped x"]
    assert session["permissionMode"] == "ask_never"


@pytest.mark.asyncio
async def test_ask_never_is_refused_in_a_folder_not_trusted(workspace: Path) -> None:
    async with ListingServer() as model, spawn(workspace, options(model.base_url, trusted=False)) as client:
        with pytest.raises(RpcError) as at_start:
            await client.start_session("anything", permission_mode="ask_never")
        sid = await client.start_session("anything")
        with pytest.raises(RpcError) as later:
            await client.configure_session(sid, permission_mode="ask_never")
        with pytest.raises(RpcError) as bad:
            await client.configure_session(sid, permission_mode="whenever")
    for refused in (at_start.value, later.value):
        assert refused.code == -32602 and refused.data["reason"] == "workspace_untrusted"
        assert "not trusted" in refused.message and "mini-agent trust" in refused.message
    assert "permissionMode" in bad.value.message


@pytest.mark.asyncio
async def test_a_second_daemon_keeps_the_model_and_mode_and_loading_shows_the_change(workspace: Path) -> None:
    async with ListingServer([DONE, DONE]) as model:
        opts = options(model.base_url, store=True)
        async with spawn(workspace, opts) as client:
            sid = await client.start_session("first", permission_mode="ask_always")
            await client.call("agent/run", {"sessionId": sid})
            await client.configure_session(sid, model="small")
        async with spawn(workspace, opts) as client:
            updates: list[dict[str, Any]] = []
            client.connection.on_notification("agent/update", lambda p: updates.append(p["update"]))
            await client.call("agent/loadSession", {"sessionId": sid})
            resumed = await client.call("agent/resumeSession", {"sessionId": sid})
            await client.call("agent/prompt", {"sessionId": sid, "text": "second"})
            await client.call("agent/run", {"sessionId": sid})
        asked = model.asked_for()
    assert resumed["llm"]["model"] == "small" and resumed["permissionMode"] == "ask_always"
    assert asked == ["replay", "small"]
    assert [u.get("message") for u in updates if "config" in u][:1] == ["Model: small"]


@pytest.mark.asyncio
async def test_a_stored_ask_never_session_read_in_a_folder_not_trusted_asks_when_needed(
    workspace: Path,
) -> None:
    async with ListingServer() as model:
        async with spawn(workspace, options(model.base_url, store=True)) as client:
            sid = await client.start_session("first", permission_mode="ask_never")
        async with spawn(workspace, options(model.base_url, trusted=False, store=True)) as client:
            session = await client.get_session(sid)
    assert session["permissionMode"] == "ask_when_needed"
