"""The editor's file tools are confined to the session's folder, end to end over real stdio: a path the
model picks is resolved (`..` and symlinks) against the workspace; a read or write that lands outside it
asks every time, showing the real path, with once-options only; a read inside runs without asking."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from mini_agent.scripted import ReplayServer

from ...support.acp import Recorder, acp_agent, calls, text, workspace_config

ONCE = ["allow_once", "reject_once"]
ALL_OPTIONS = ["allow_once", "allow_always", "reject_once", "reject_always"]
SECRET = "TOP SECRET: the production password\n"


def act(name: str, args: dict[str, str]) -> dict[str, str]:
    return {"content": f"Thought: {name}.\nAction: {name}\nAction Input: {json.dumps(args)}"}


FINISH = {"content": "Thought: done.\nFinal Answer: {last_observation}"}


class Buffers(dict[str, str]):
    """The editor's open files, keeping every path the agent asked it to read (the recorder's
    `fs/read_text_file` looks each one up here)."""

    def __init__(self, files: dict[str, str]) -> None:
        super().__init__(files)
        self.reads: list[str] = []

    def __contains__(self, path: object) -> bool:
        self.reads.append(str(path))
        return super().__contains__(path)


def option_ids(request: dict[str, Any]) -> list[str]:
    return [option["optionId"] for option in request["options"]]


async def run_turn(
    workspace: Path,
    script: list[dict[str, str]],
    answer: Callable[[dict[str, Any]], str | None],
    buffers: dict[str, str],
    **config: str,
) -> tuple[Recorder, list[str], list[dict[str, Any]], str]:
    """One prompt through the daemon with the editor's fs; the recorder, the paths read, the calls'
    updates in order, and every model request as JSON text."""
    async with ReplayServer(script) as model:
        workspace_config(workspace, model.base_url, tools="", **config)
        async with acp_agent(workspace, fs=True, trust=True) as (conn, _, recorder):
            recorder.buffers = files = Buffers(buffers)
            recorder.answer = answer
            session = await conn.new_session(cwd=str(workspace), mcp_servers=[])
            done = await conn.prompt(session_id=session.session_id, prompt=text("go"))
            assert done.stop_reason == "end_turn"
        by_call = list(calls(recorder.of(session.session_id)).values())
        return recorder, files.reads, by_call, json.dumps(model.requests)


@pytest.mark.asyncio
async def test_a_read_outside_asks_with_the_resolved_path_and_a_rejection_never_reaches_the_editor(
    workspace: Path,
) -> None:
    secret = (workspace.parent / "secret.txt").resolve()
    script = [act("read_text_file", {"path": "../secret.txt"}), FINISH]
    recorder, reads, by_call, sent = await run_turn(
        workspace, script, lambda request: "reject_once", {str(secret): SECRET}
    )
    (request,) = recorder.permission_requests
    tool_call = request["toolCall"]
    assert str(secret) in tool_call["title"] and ".." not in tool_call["title"]
    assert tool_call["locations"] == [{"path": str(secret)}] and option_ids(request) == ONCE
    assert reads == []  # the editor was never asked for it
    (read,) = by_call
    observation = read[-1]["rawOutput"]["output"]
    assert read[-1]["status"] == "failed" and "declined" in observation
    assert f"{secret} is outside the workspace" in observation
    assert "TOP SECRET" not in sent


@pytest.mark.asyncio
async def test_an_always_allow_given_inside_does_not_cover_a_write_outside(workspace: Path) -> None:
    inside = str((workspace / "schema.py").resolve())
    outside = (workspace.parent / "outside.txt").resolve()
    script = [
        act("write_text_file", {"path": "schema.py", "content": "fixed\n"}),
        act("write_text_file", {"path": "../outside.txt", "content": "planted\n"}),
        FINISH,
    ]

    def answer(request: dict[str, Any]) -> str:
        return "allow_always" if "allow_always" in option_ids(request) else "reject_once"

    recorder, _, by_call, _ = await run_turn(workspace, script, answer, {inside: "old\n"})
    first, second = recorder.permission_requests
    assert option_ids(first) == ALL_OPTIONS and first["toolCall"]["locations"] == [{"path": inside}]
    assert option_ids(second) == ONCE
    assert second["toolCall"]["locations"] == [{"path": str(outside)}]
    assert second["toolCall"]["content"][0]["path"] == str(outside)
    assert str(outside) in second["toolCall"]["title"] and ".." not in second["toolCall"]["title"]
    assert recorder.buffers[inside] == "fixed\n" and str(outside) not in recorder.buffers
    assert [c[-1]["status"] for c in by_call] == ["completed", "failed"]


@pytest.mark.asyncio
async def test_the_workspace_files_allow_does_not_cover_a_write_outside(workspace: Path) -> None:
    inside = str((workspace / "schema.py").resolve())
    outside = str((workspace.parent / "outside.txt").resolve())
    script = [
        act("write_text_file", {"path": "schema.py", "content": "fixed\n"}),
        act("write_text_file", {"path": str(workspace / ".." / "outside.txt"), "content": "planted\n"}),
        FINISH,
    ]
    allow = '[tool.mini-agent.approval]\nallow = ["write_text_file"]'
    recorder, _, by_call, _ = await run_turn(
        workspace, script, lambda request: "allow_once", {inside: "old\n"}, approval=allow
    )
    (request,) = recorder.permission_requests  # the write inside was allowed by the file, unasked
    assert option_ids(request) == ONCE and request["toolCall"]["locations"] == [{"path": outside}]
    assert recorder.buffers[inside] == "fixed\n" and recorder.buffers[outside] == "planted\n"
    assert [c[-1]["status"] for c in by_call] == ["completed", "completed"]


@pytest.mark.asyncio
async def test_a_symlink_inside_that_points_outside_asks_showing_the_real_path(workspace: Path) -> None:
    elsewhere = workspace.parent / "elsewhere"
    elsewhere.mkdir()
    real = (elsewhere / "keys.txt").resolve()
    (workspace / "docs_link").symlink_to(elsewhere, target_is_directory=True)
    script = [act("read_text_file", {"path": "docs_link/keys.txt"}), FINISH]
    recorder, reads, by_call, sent = await run_turn(
        workspace, script, lambda request: "allow_once", {str(real): SECRET}
    )
    (request,) = recorder.permission_requests
    assert option_ids(request) == ONCE and request["toolCall"]["locations"] == [{"path": str(real)}]
    assert str(real) in request["toolCall"]["title"]
    assert reads == [str(real)]  # allowed once: the editor is asked for the real file
    assert by_call[0][-1]["rawOutput"]["output"] == SECRET and "TOP SECRET" in sent


@pytest.mark.asyncio
async def test_a_read_inside_runs_without_asking_on_the_resolved_path(workspace: Path) -> None:
    schema = str((workspace / "schema.py").resolve())
    script = [act("read_text_file", {"path": "sub/../schema.py"}), FINISH]
    recorder, reads, by_call, _ = await run_turn(
        workspace, script, lambda request: "reject_once", {schema: "unsaved text\n"}
    )
    assert recorder.permission_requests == []
    assert reads == [schema] and by_call[0][-1]["rawOutput"]["output"] == "unsaved text\n"


@pytest.mark.asyncio
async def test_a_link_swapped_in_while_the_user_decides_stops_the_call(workspace: Path) -> None:
    (workspace / "notes").mkdir()
    inside = str((workspace / "notes" / "todo.txt").resolve())
    elsewhere = workspace.parent / "elsewhere"
    elsewhere.mkdir()
    outside = str((elsewhere / "todo.txt").resolve())
    script = [act("write_text_file", {"path": "notes/todo.txt", "content": "planted\n"}), FINISH]

    def swap_then_allow(request: dict[str, Any]) -> str:
        (workspace / "notes").rename(workspace / "notes_old")  # the folder the user saw, now a link out
        (workspace / "notes").symlink_to(elsewhere, target_is_directory=True)
        return "allow_once"

    recorder, _, by_call, _ = await run_turn(workspace, script, swap_then_allow, {})
    (request,) = recorder.permission_requests
    assert request["toolCall"]["locations"] == [{"path": inside}]  # what the user allowed
    assert outside not in recorder.buffers and inside not in recorder.buffers
    (write,) = by_call
    assert write[-1]["status"] == "failed"
    assert f"resolved to {inside} when the call was decided and to {outside} now" in (
        write[-1]["rawOutput"]["output"]
    )
