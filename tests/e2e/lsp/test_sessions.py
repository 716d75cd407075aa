"""Sessions that survive: SQLite checkpoints across a kill -9, approval across a restart, rejection,
two daemons racing for one session, and a corrupt database — all through real daemon processes."""

from __future__ import annotations

import asyncio
import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from mini_agent.scripted import ReplayServer
from mini_agent_client.client import AgentClient

from ...support.daemon import DAEMON, daemon_env
from ...support.scripted import action
from ...support.waiting import wait_for

TOOLS = '''
import time
from pathlib import Path
from mini_agent import tool

@tool(idempotent=True)
def tally(name: str, pause: float = 0.0) -> int:
    """Append a mark to a tally file and return how many marks it has."""
    time.sleep(pause)
    path = Path(name + ".tally")
    path.write_text(path.read_text() + "|" if path.exists() else "|")
    return len(path.read_text())

def touch(name: str, pause: float = 0.0) -> str:
    """Create a file (not safe to repeat blindly)."""
    time.sleep(pause)
    Path(name).write_text("x")
    return "touched " + name

@tool(requires_approval=True)
def wipe(target: str) -> str:
    """Delete a file; a person must allow it."""
    Path(target).unlink()
    return "wiped " + target
'''


def by_history(turns: list[dict[str, Any]]) -> Callable[[dict[str, Any]], dict[str, Any]]:
    """Answer by how far the conversation got, so a restarted daemon hears the same model."""

    def respond(body: dict[str, Any]) -> dict[str, Any]:
        return turns[sum(1 for m in body["messages"] if m["role"] == "assistant")]

    return respond


def options(model: ReplayServer, **extra: Any) -> dict[str, Any]:
    """The user's own workspace, trusted: its stored registrations come back at start."""
    return {"llm": {"baseUrl": model.base_url, "toolMode": "react"}, "workspaceTrusted": True, **extra}


def spawn(root: Path, opts: dict[str, Any]) -> Any:
    return AgentClient.spawn(root=root, options=opts, command=DAEMON, env=daemon_env())


def trajectory(session: dict[str, Any]) -> list[Any]:
    return [
        (
            [(c["name"], c["arguments"]) for c in s["toolCalls"]],
            [(o["output"], o["isError"]) for o in s["observations"]],
            s["finalAnswer"],
        )
        for s in session["steps"]
    ]


async def run_to_end(root: Path, model: ReplayServer) -> dict[str, Any]:
    async with spawn(root, options(model)) as client:
        await client.register_tool("jobs.py")
        session_id = await client.start_session("count twice")
        await client.call("agent/run", {"sessionId": session_id})
        session: dict[str, Any] = await client.call("agent/getSession", {"sessionId": session_id})
        return session


async def kill_during(root: Path, model: ReplayServer, moment: Callable[[AgentClient, str], bool]) -> str:
    """Run a session and kill -9 the daemon when `moment` says so; returns the session id."""
    async with spawn(root, options(model)) as client:
        await client.register_tool("jobs.py")
        session_id = await client.start_session("count twice")
        updates: list[dict[str, Any]] = []
        client.connection.on_notification("agent/update", updates.append)
        client.kinds = lambda: [u["update"]["kind"] for u in updates]  # type: ignore[attr-defined]
        running = asyncio.ensure_future(client.call("agent/run", {"sessionId": session_id}))
        await wait_for(lambda: moment(client, session_id))
        client.process.kill()
        await client.process.wait()
        await asyncio.gather(running, return_exceptions=True)
        return session_id


@pytest.fixture
def jobs(workspace: Path) -> Path:
    (workspace / "jobs.py").write_text(TOOLS)
    return workspace


TURNS = [
    action("tally", {"name": "a"}),
    action("tally", {"name": "b", "pause": 2}),
    action("touch", {"name": "c.txt"}),
    {"content": "Final Answer: done"},
]


@pytest.mark.asyncio
@pytest.mark.parametrize("moment", ["tool", "model"])
async def test_kill_9_then_resume_matches_an_uninterrupted_run(
    moment: str, jobs: Path, tmp_path: Path
) -> None:
    twin = tmp_path / "twin"
    twin.mkdir()
    (twin / "jobs.py").write_text(TOOLS)
    turns = [dict(t) for t in TURNS]
    if moment == "model":
        turns[1] = {**turns[1], "delay": 60}  # the second model reply never comes before the kill
    async with ReplayServer(responder=by_history(TURNS)) as model:
        expected = await run_to_end(twin, model)

    async with ReplayServer(responder=by_history(turns)) as model:
        if moment == "tool":

            def when(client: AgentClient, sid: str) -> bool:
                return (jobs / "b.tally").exists() is False and client.kinds().count("tool_call_update") >= 3
        else:

            def when(client: AgentClient, sid: str) -> bool:
                return len(model.exchanges) >= 2

        session_id = await kill_during(jobs, model, when)

    # the new daemon meets the model at a new address: resumeSession takes the new settings
    async with ReplayServer(responder=by_history(TURNS)) as model, spawn(jobs, options(model)) as client:
        tools = await client.list_tools()
        assert {t["name"] for t in tools} == {"tally", "touch", "wipe"}  # registrations restored
        resumed = await client.call(
            "agent/resumeSession", {"sessionId": session_id, "llm": {"baseUrl": model.base_url}}
        )
        assert resumed["status"] == "ready"
        result = await client.call("agent/run", {"sessionId": session_id})
        assert result["stopReason"] == "end_turn", result["error"]
        session = await client.call("agent/getSession", {"sessionId": session_id})
    assert trajectory(session) == trajectory(expected)
    assert (jobs / "a.tally").read_text() == "|"  # the finished tool did not run twice
    assert (jobs / "b.tally").read_text() == "|"  # the interrupted idempotent one ran once to completion


@pytest.mark.asyncio
async def test_a_non_idempotent_tool_cut_off_by_a_crash_is_reported_interrupted(jobs: Path) -> None:
    turns = [action("touch", {"name": "slow.txt", "pause": 30}), {"content": "Final Answer: checked"}]
    async with ReplayServer(responder=by_history(turns)) as model:
        session_id = await kill_during(jobs, model, lambda c, s: c.kinds().count("tool_call_update") >= 1)
        async with spawn(jobs, options(model)) as client:
            first = await client.step(session_id)
            assert first["index"] == 0 and first["observations"][0]["isError"]
            assert "Interrupted" in first["observations"][0]["output"]
            assert (await client.step(session_id))["finalAnswer"] == "checked"
    assert not (jobs / "slow.txt").exists()


@pytest.mark.asyncio
async def test_approval_survives_a_daemon_restart(jobs: Path, daemon_factory: Callable[..., Any]) -> None:
    (jobs / "old.log").write_text("x")
    turns = [action("wipe", {"target": "old.log"}), {"content": "Final Answer: {last_observation}"}]
    async with ReplayServer(responder=by_history(turns)) as model:
        first = await daemon_factory(options(model), jobs)
        await first.request("agent/registerTool", {"path": "jobs.py"})
        session_id = (await first.request("agent/startSession", {"task": "wipe old.log"}))["sessionId"]
        paused = await first.request("agent/step", {"sessionId": session_id})
        assert paused["status"] == "awaiting_approval" and paused["stopReason"] is None
        asked = first.permission_requests[0]
        assert asked["toolCall"]["arguments"] == {"target": "old.log"} and asked["tool"]["name"] == "wipe"
        assert [o["kind"] for o in asked["options"]] == [
            "allow_once",
            "allow_always",
            "reject_once",
            "reject_always",
        ]
        assert (jobs / "old.log").exists()
        await first.lsp.shutdown_session()

        second = await daemon_factory(options(model), jobs)
        stored = await second.request("agent/getSession", {"sessionId": session_id})
        assert stored["status"] == "awaiting_approval"
        call_id = stored["pendingApprovals"][0]["toolCall"]["id"]
        approved = await second.request(
            "agent/approve", {"sessionId": session_id, "toolCallId": call_id, "decision": "allow_once"}
        )
        assert approved["status"] == "awaiting_approval"  # recorded, not stepped
        ran = await second.request("agent/step", {"sessionId": session_id})
        assert ran["observations"][0]["output"] == "wiped old.log" and not (jobs / "old.log").exists()
        final = await second.request("agent/step", {"sessionId": session_id})
        assert final["finalAnswer"] == "wiped old.log"


@pytest.mark.asyncio
async def test_a_rejection_reaches_the_model_with_its_reason(
    jobs: Path, daemon_factory: Callable[..., Any]
) -> None:
    (jobs / "keep.log").write_text("x")
    turns = [action("wipe", {"target": "keep.log"}), {"content": "Final Answer: {last_observation}"}]
    async with ReplayServer(responder=by_history(turns)) as model:
        client = await daemon_factory(options(model), jobs)
        client.permission_answer = lambda params: {"decision": "reject_once", "reason": "I still need it"}
        await client.request("agent/registerTool", {"path": "jobs.py"})
        session_id = (await client.request("agent/startSession", {"task": "wipe keep.log"}))["sessionId"]
        result = await client.request("agent/run", {"sessionId": session_id})
    assert (jobs / "keep.log").exists()
    assert "declined" in result["finalAnswer"] and "I still need it" in result["finalAnswer"]


@pytest.mark.asyncio
async def test_two_daemons_never_step_one_session_at_once(jobs: Path) -> None:
    turns = [{**action("tally", {"name": "r"}), "delay": 3}, {"content": "Final Answer: raced"}]
    async with (
        ReplayServer(responder=by_history(turns)) as model,
        spawn(jobs, options(model)) as first,
        spawn(jobs, options(model)) as second,
    ):
        await first.register_tool("jobs.py")
        session_id = await first.start_session("race")
        stepping = asyncio.ensure_future(first.step(session_id))
        await wait_for(lambda: len(model.exchanges) == 1)
        with pytest.raises(Exception) as busy:
            await second.step(session_id)
        assert getattr(busy.value, "code", None) == -32001 and "another daemon" in str(busy.value)
        assert (await stepping)["observations"][0]["output"] == "1"
        assert (await second.step(session_id))["finalAnswer"] == "raced"
        listed = await first.call("agent/listSessions", {"status": "finished"})
        assert [s["sessionId"] for s in listed["sessions"]] == [session_id]


@pytest.mark.asyncio
async def test_a_corrupt_database_is_reported_and_the_daemon_serves_on(workspace: Path) -> None:
    store = workspace / ".mini-agent" / "sessions.db"
    store.parent.mkdir()
    store.write_bytes(b"this is not a database" * 100)
    messages: list[dict[str, Any]] = []
    async with spawn(workspace, {}) as client:
        client.connection.on_notification("window/showMessage", messages.append)
        tools = await client.register_tool("tools.py")
        assert len(tools) == 2
        assert (await client.call("agent/startSession", {"task": "x"}))["status"] == "ready"
    assert any(str(store) in m["message"] and "not a" in m["message"] for m in messages), messages


@pytest.mark.asyncio
async def test_load_session_replays_the_trajectory_as_updates(jobs: Path) -> None:
    turns = [action("tally", {"name": "z"}), {"content": "Final Answer: one"}]
    async with ReplayServer(responder=by_history(turns)) as model:
        async with spawn(jobs, options(model)) as client:
            await client.register_tool("jobs.py")
            session_id = await client.start_session("count once")
            await client.call("agent/run", {"sessionId": session_id})
        async with spawn(jobs, options(model)) as fresh:
            seen: list[dict[str, Any]] = []
            fresh.connection.on_notification("agent/update", seen.append)
            loaded = await fresh.call("agent/loadSession", {"sessionId": session_id})
    assert loaded["status"] == "finished" and loaded["updatesSent"] == len(seen)
    kinds = [u["update"]["kind"] for u in seen]
    assert kinds == [
        "agent_thought_chunk",
        "tool_call",
        "tool_call_update",
        "usage_update",
        "agent_thought_chunk",
        "agent_message_chunk",
        "usage_update",
        "status",
    ]
    assert json.loads(json.dumps(seen[2]["update"]["observation"]))["output"] == "1"


def told(updates: list[dict[str, Any]]) -> list[tuple[int, str, str]]:
    """The user's and the model's words, and the calls, with their steps: what a replay must keep in place."""
    keep = {"user_message_chunk": "text", "agent_message_chunk": "text", "tool_call": "name"}
    return [
        (u["step"], u["update"]["kind"], u["update"][keep[u["update"]["kind"]]])
        for u in updates
        if u["update"]["kind"] in keep
    ]


@pytest.mark.asyncio
async def test_a_follow_up_is_streamed_and_replayed_before_the_steps_that_answer_it(
    jobs: Path, daemon_factory: Callable[..., Any]
) -> None:
    turns = [action("tally", {"name": "f"}), {"content": "Final Answer: one"}]
    turns.append({"content": "Final Answer: two"})
    async with ReplayServer(responder=by_history(turns)) as model:
        client = await daemon_factory(options(model), jobs)
        await client.request("agent/registerTool", {"path": "jobs.py"})
        session_id = (await client.request("agent/startSession", {"task": "count once"}))["sessionId"]
        await client.request("agent/run", {"sessionId": session_id})
        first_turn = len(client.updates)
        await client.request("agent/prompt", {"sessionId": session_id, "text": "and now say two"})
        assert client.updates[first_turn:] == [
            {
                "sessionId": session_id,
                "step": 2,
                "update": {"kind": "user_message_chunk", "text": "and now say two"},
            }
        ]
        result = await client.request("agent/run", {"sessionId": session_id})
        assert result["finalAnswer"] == "two"
        live = told(client.updates)
        fresh = await daemon_factory(options(model), jobs)
        loaded = await fresh.request("agent/loadSession", {"sessionId": session_id})
    assert live == [
        (0, "tool_call", "tally"),
        (1, "agent_message_chunk", "one"),
        (2, "user_message_chunk", "and now say two"),
        (2, "agent_message_chunk", "two"),
    ]
    assert loaded["updatesSent"] == len(fresh.updates) and told(fresh.updates) == live
    replayed = [u["update"]["kind"] for u in fresh.updates]
    at = replayed.index("user_message_chunk")
    assert replayed[at - 1 : at + 2] == ["usage_update", "user_message_chunk", "agent_thought_chunk"]
