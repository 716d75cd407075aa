"""ACP sessions over time and across doors: permissions with each option kind, session/load replaying
what the live turn sent, and one SQLite store shared with the LSP door and the CLI."""

from __future__ import annotations

import asyncio
import json
import os
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from acp import RequestError
from acp.schema import EnvVariable, McpServerStdio
from mini_agent.cli.demo import SCRIPT, TASK
from mini_agent.scripted import ReplayServer

from ...support.acp import acp_agent, calls, said, text, workspace_config
from ...support.cli import run_cli

GUARDED = '''
from mini_agent import tool


@tool(requires_approval=True)
def touch(n: int) -> str:
    """Mark a number.

    Args:
        n: the number.
    """
    return f"touched {n}"
'''


def touch(n: int) -> dict[str, str]:
    return {"content": f'Thought: touch {n}.\nAction: touch\nAction Input: {{"n": {n}}}'}


FINAL = {"content": "Thought: done.\nFinal Answer: done"}


@pytest.mark.asyncio
async def test_permission_with_each_option_kind_and_standing_decisions(workspace: Path) -> None:
    (workspace / "guarded.py").write_text(GUARDED, encoding="utf-8")
    script = [touch(1), touch(2), touch(3), touch(4), FINAL, touch(5), touch(6), FINAL, touch(7)]
    choices = {1: "allow_once", 2: "reject_once", 3: "allow_always", 5: "reject_always", 7: None}
    async with ReplayServer(script) as model:
        workspace_config(workspace, model.base_url, tools='tools = ["guarded.py"]')
        async with acp_agent(workspace, trust=True) as (conn, _, recorder):
            recorder.answer = lambda request: choices[request["toolCall"]["rawInput"]["n"]]
            stops, sessions = [], []
            for _ in range(3):  # allow_once..allow_always; reject_always; a cancelled outcome
                session = await conn.new_session(cwd=str(workspace), mcp_servers=[])
                sessions.append(session.session_id)
                stops.append(
                    (await conn.prompt(session_id=session.session_id, prompt=text("go"))).stop_reason
                )
    assert stops == ["end_turn", "end_turn", "cancelled"]
    asked = [r["toolCall"]["rawInput"]["n"] for r in recorder.permission_requests]
    assert asked == [1, 2, 3, 5, 7]  # 4 and 6 were decided by the standing answers
    request = recorder.permission_requests[0]
    assert [o["kind"] for o in request["options"]] == [
        "allow_once",
        "allow_always",
        "reject_once",
        "reject_always",
    ]
    assert request["toolCall"]["title"] == "touch(n=1)" and request["toolCall"]["status"] == "pending"
    outcomes = [c[-1]["status"] for sid in sessions for c in calls(recorder.of(sid)).values()]
    assert outcomes == ["completed", "failed", "completed", "completed", "failed", "failed", "pending"]


async def live_and_loaded(workspace: Path, model: ReplayServer) -> tuple[str, list[Any], list[Any]]:
    async with acp_agent(workspace, trust=True) as (conn, _, recorder):
        session = await conn.new_session(cwd=str(workspace), mcp_servers=[])
        sid = session.session_id
        await conn.prompt(session_id=sid, prompt=text(TASK))
        await conn.prompt(session_id=sid, prompt=text("Thanks. And tools.py?"))
    live = recorder.of(sid)
    async with acp_agent(workspace, trust=True) as (conn, _, recorder):  # another agent process
        await conn.load_session(cwd=str(workspace), session_id=sid, mcp_servers=[])
    return sid, live, recorder.of(sid)


def lasting(updates: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """What a replay holds of a live turn: no session info, no `in_progress`, usage compared apart, and
    the thought deltas of a model turn as one chunk."""
    out: list[dict[str, Any]] = []
    for update in updates:
        kind = update["sessionUpdate"]
        session_wide = ("session_info_update", "usage_update", "available_commands_update")
        if kind in session_wide or update.get("status") == "in_progress":
            continue
        if kind == "agent_thought_chunk" and out and out[-1]["sessionUpdate"] == kind:
            text_so_far = out[-1]["content"]["text"] + update["content"]["text"]
            out[-1] = {**out[-1], "content": {**out[-1]["content"], "text": text_so_far}}
            continue
        out.append(update)
    return out


@pytest.mark.asyncio
async def test_session_load_replays_the_live_updates_with_the_user_turns(workspace: Path) -> None:
    script = [*SCRIPT, {"content": "Thought: I know it.\nFinal Answer: tools.py has tools."}]
    async with ReplayServer(script) as model:
        workspace_config(workspace, model.base_url)
        _, live, loaded = await live_and_loaded(workspace, model)
    users = [u["content"]["text"] for u in loaded if u["sessionUpdate"] == "user_message_chunk"]
    assert users == [TASK, "Thanks. And tools.py?"]
    assert loaded[0]["sessionUpdate"] == "user_message_chunk"
    follow_up_at = next(
        n for n, u in enumerate(loaded) if u["sessionUpdate"] == "user_message_chunk" and n > 0
    )
    assert said(loaded[:follow_up_at]).startswith("The workspace has")
    agent_side = [u for u in loaded if u["sessionUpdate"] != "user_message_chunk"]
    assert lasting(agent_side) == lasting(live)
    usage = [u["used"] for u in live if u["sessionUpdate"] == "usage_update"]
    assert usage == [u["used"] for u in loaded if u["sessionUpdate"] == "usage_update"]


@pytest.mark.asyncio
async def test_a_session_made_over_acp_is_listed_resumed_and_continued_over_lsp_and_the_cli(
    workspace: Path, daemon_factory: Callable[..., Any]
) -> None:
    script = [
        {"content": "Thought: easy.\nFinal Answer: made in an ACP editor"},
        {"content": "Thought: again.\nFinal Answer: continued over LSP"},
        {"content": "Thought: and again.\nFinal Answer: continued from the CLI"},
    ]
    async with ReplayServer(script) as model:
        workspace_config(workspace, model.base_url)
        # not trusted: the file's base_url waits for trust, the environment's is used
        async with acp_agent(workspace, OPENAI_BASE_URL=model.base_url) as (conn, _, _recorder):
            made = await conn.new_session(cwd=str(workspace), mcp_servers=[])
            sid = made.session_id
            await conn.prompt(session_id=sid, prompt=text("a task from Zed"))
            listed = await conn.list_sessions(cwd=str(workspace))
        assert [(s.session_id, s.title, s.cwd) for s in listed.sessions] == [
            (sid, "a task from Zed", str(workspace))
        ]
        assert listed.sessions[0].updated_at is not None

        lsp = await daemon_factory({"llm": {"baseUrl": model.base_url}})
        rows = (await lsp.request("agent/listSessions", {}))["sessions"]
        assert [(r["sessionId"], r["task"], r["stopReason"]) for r in rows] == [
            (sid, "a task from Zed", "end_turn")
        ]
        resumed = await lsp.request("agent/resumeSession", {"sessionId": sid})
        assert resumed["finalAnswer"] == "made in an ACP editor"
        assert (await lsp.request("agent/prompt", {"sessionId": sid, "text": "more, please"}))[
            "status"
        ] == "ready"
        run = await lsp.request("agent/run", {"sessionId": sid})
        assert (run["stopReason"], run["finalAnswer"]) == ("end_turn", "continued over LSP")
        await lsp.lsp.shutdown_session()

        listing = await asyncio.to_thread(run_cli, ["sessions", "--json"], workspace)
        assert sid in listing.stdout, listing.stderr
        done = await asyncio.to_thread(
            run_cli, ["ask", "--session", sid, "one more", "--json", "--base-url", model.base_url], workspace
        )
        assert done.returncode == 0, done.stderr
        assert json.loads(done.stdout.splitlines()[-1])["finalAnswer"] == "continued from the CLI"
        users = [m["content"] for m in model.exchanges[-1].body["messages"] if m["role"] == "user"]
        assert users == ["a task from Zed", "more, please", "one more"]

        async with acp_agent(workspace, OPENAI_BASE_URL=model.base_url) as (conn, _, recorder):
            await conn.resume_session(cwd=str(workspace), session_id=sid, mcp_servers=[])
            kinds = [u["sessionUpdate"] for u in recorder.of(sid)]
            assert kinds == ["available_commands_update"]  # resume replays nothing, only lists the commands
            # this SDK release's client side has no delete_session: its raw connection sends the request
            assert await conn._conn.send_request("session/delete", {"sessionId": sid}) == {}
            assert (await conn.list_sessions(cwd=str(workspace))).sessions == []
            with pytest.raises(RequestError, match="unknown session"):
                await conn.load_session(cwd=str(workspace), session_id=sid, mcp_servers=[])


@pytest.mark.asyncio
async def test_the_editor_reads_unsaved_buffers_and_reviews_writes_as_a_diff(workspace: Path) -> None:
    def act(name: str, args: dict[str, str]) -> dict[str, str]:
        return {"content": f"Thought: {name}.\nAction: {name}\nAction Input: {json.dumps(args)}"}

    script = [
        act("read_text_file", {"path": "schema.py"}),
        act("write_text_file", {"path": "schema.py", "content": "fixed\n"}),
        {"content": "Thought: done.\nFinal Answer: {last_observation}"},
        {"content": "Thought: nothing to do.\nFinal Answer: ok"},
    ]
    schema = str(workspace / "schema.py")
    on_disk = (workspace / "schema.py").read_text(encoding="utf-8")
    async with ReplayServer(script) as model:
        workspace_config(workspace, model.base_url, tools="")
        async with acp_agent(workspace, fs=True, trust=True) as (conn, _, recorder):
            recorder.buffers[schema] = "unsaved text\n"
            recorder.answer = lambda request: "allow_once"
            session = await conn.new_session(cwd=str(workspace), mcp_servers=[])
            answer = await conn.prompt(session_id=session.session_id, prompt=text("fix schema.py"))
        async with acp_agent(workspace, trust=True) as (conn, _, _):  # no fs capability: no editor tools
            session = await conn.new_session(cwd=str(workspace), mcp_servers=[])
            await conn.prompt(session_id=session.session_id, prompt=text("anything"))
    assert answer.stop_reason == "end_turn"
    updates = [u for _, u in recorder.updates]
    read, write = (c for c in calls(updates).values())
    assert (read[0]["kind"], read[-1]["rawOutput"]["output"]) == ("read", "unsaved text\n")
    (request,) = recorder.permission_requests
    assert request["toolCall"]["kind"] == "edit" and request["toolCall"]["locations"] == [{"path": schema}]
    assert request["toolCall"]["content"] == [
        {"type": "diff", "path": schema, "oldText": "unsaved text\n", "newText": "fixed\n"}
    ]
    assert write[-1]["status"] == "completed" and recorder.buffers[schema] == "fixed\n"
    assert (workspace / "schema.py").read_text(encoding="utf-8") == on_disk  # the editor saves, or not
    assert "read_text_file" in json.dumps(model.requests[0]) and "read_text_file" not in json.dumps(
        model.requests[-1]
    )


@pytest.mark.asyncio
async def test_mcp_servers_from_session_new_serve_the_task_and_the_follow_up(
    workspace: Path, tmp_path: Path
) -> None:
    pids = tmp_path / "pids"
    server = McpServerStdio(
        name="fix",
        command=sys.executable,
        args=[str(Path(__file__).parents[2] / "support" / "mcp_fixture_server.py"), str(pids)],
        env=[EnvVariable(name="PYTHONPATH", value=os.pathsep.join(sys.path))],
    )
    ping = {"content": "Thought: ping.\nAction: fix_ping\nAction Input: {}"}
    script = [ping, {"content": "Final Answer: {last_observation}"}, ping, {"content": "Final Answer: again"}]
    async with ReplayServer(script) as model:
        workspace_config(workspace, model.base_url, tools="")
        async with acp_agent(workspace, trust=True) as (conn, process, recorder):
            session = await conn.new_session(cwd=str(workspace), mcp_servers=[server])
            first = await conn.prompt(session_id=session.session_id, prompt=text("ping it"))
            second = await conn.prompt(session_id=session.session_id, prompt=text("once more"))
            process.terminate()
            assert await process.wait() == 0
    by_call = calls(recorder.of(session.session_id)).values()
    outputs = [c[-1]["rawOutput"]["output"] for c in by_call]
    assert (first.stop_reason, second.stop_reason) == ("end_turn", "end_turn")
    assert [c[0]["kind"] for c in by_call] == ["read", "read"]  # ping's readOnlyHint
    assert len(outputs) == 2 and all(output.startswith("pong from ") for output in outputs), outputs
    assert recorder.permission_requests == []  # ping is read-only
    started = [int(pid) for pid in pids.read_text().split()]
    assert started and not any(Path(f"/proc/{pid}").exists() and _running(pid) for pid in started)


def _running(pid: int) -> bool:
    state = Path(f"/proc/{pid}/stat").read_text().split(")")[-1].split()[0]
    return state != "Z"


@pytest.mark.asyncio
async def test_agent_prompt_on_the_lsp_door_gives_each_turn_its_own_step_budget(
    workspace: Path, daemon_factory: Callable[..., Any]
) -> None:
    listing = {"content": 'Thought: list.\nAction: list_python_files\nAction Input: {"directory": "."}'}
    four = {"content": "Final Answer: four"}
    script = [
        {"content": "Final Answer: one"},
        listing,
        {"content": "Final Answer: two"},
        listing,
        listing,
        four,
    ]
    async with ReplayServer(script) as model:
        client = await daemon_factory({"llm": {"baseUrl": model.base_url}, "store": {"enabled": False}})
        await client.request("agent/registerTool", {"path": "tools.py"})
        sid = (await client.request("agent/startSession", {"task": "first", "maxSteps": 2}))["sessionId"]
        assert (await client.request("agent/run", {"sessionId": sid}))["finalAnswer"] == "one"
        assert (await client.request("agent/prompt", {"sessionId": sid, "text": "second"}))[
            "status"
        ] == "ready"
        second = await client.request("agent/run", {"sessionId": sid})  # 2 steps: the budget is per turn
        assert (second["stopReason"], second["finalAnswer"], second["stepsRun"]) == ("end_turn", "two", 2)
        await client.request("agent/prompt", {"sessionId": sid, "text": "third"})
        third = await client.request("agent/run", {"sessionId": sid})
        assert third["stopReason"] == "max_turn_requests"
        await client.request("agent/prompt", {"sessionId": sid, "text": "go on"})  # a budget ran out: go on
        fourth = await client.request("agent/run", {"sessionId": sid})
        assert (fourth["stopReason"], fourth["finalAnswer"]) == ("end_turn", "four")
        with pytest.raises(Exception, match="unknown session"):
            await client.request("agent/prompt", {"sessionId": "sess_nope", "text": "hello"})


@pytest.mark.asyncio
async def test_tools_registered_over_lsp_are_in_an_acp_session_of_a_trusted_workspace(
    workspace: Path, daemon_factory: Callable[..., Any]
) -> None:
    answer = {"content": "Final Answer: ok"}
    async with ReplayServer([answer, answer]) as model:
        lsp = await daemon_factory({"llm": {"baseUrl": model.base_url}, "workspaceTrusted": True})
        await lsp.request("agent/registerTool", {"path": "metrics.py"})
        await lsp.lsp.shutdown_session()
        for trust in (True, False):
            async with acp_agent(workspace, trust=trust, OPENAI_BASE_URL=model.base_url) as (conn, _, _):
                session = await conn.new_session(cwd=str(workspace), mcp_servers=[])
                await conn.prompt(session_id=session.session_id, prompt=text("hi"))
        trusted, untrusted = (json.dumps(request) for request in model.requests)
    assert "average" in trusted and "average" not in untrusted
