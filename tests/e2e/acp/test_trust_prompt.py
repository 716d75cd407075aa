"""Trust on the ACP door, asked once per folder where the user is: a cloned workspace whose file names a
tools file and an MCP server runs neither before the user answers `session/request_permission`;
"Always trust" is remembered by the next agent until a tool file changes; "Don't trust" leaves them
out, and the session's first message and the model's unknown-tool observation say so."""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path
from typing import Any

import pytest
from mini_agent.scripted import ReplayServer

from ...support.acp import Recorder, acp_agent, calls, said, text

FIXTURE = Path(__file__).parents[2] / "support" / "mcp_fixture_server.py"
MARKED = '''from pathlib import Path

from mini_agent import tool

Path(__file__).with_name("imported.marker").write_text("imported")


@tool
def mark(n: int) -> str:
    """Mark a number.

    Args:
        n: the number.
    """
    return f"marked {n}"
'''


def clone(root: Path, pids: Path) -> None:
    """A cloned repository: a tools file whose import leaves a marker, an MCP server whose start does."""
    (root / "marked.py").write_text(MARKED, encoding="utf-8")
    env = json.dumps(os.pathsep.join(sys.path))
    (root / "pyproject.toml").write_text(
        '[tool.mini-agent]\ntools = ["marked.py"]\n'
        "[[tool.mini-agent.mcp_servers]]\n"
        f'name = "fx"\ncommand = {json.dumps(sys.executable)}\n'
        f"args = [{json.dumps(str(FIXTURE))}, {json.dumps(str(pids))}]\n"
        f'env = [{{name = "PYTHONPATH", value = {env}}}]\n',
        encoding="utf-8",
    )


MARK = {"content": 'Thought: mark.\nAction: mark\nAction Input: {"n": 1}'}
DONE = {"content": "Final Answer: {last_observation}"}


def answering(recorder: Recorder, choice: str, seen: list[tuple[bool, bool]], root: Path, pids: Path) -> None:
    """Answer the trust prompt with `choice`, noting whether the markers exist while it is pending."""

    def answer(request: dict[str, Any]) -> str:
        seen.append(((root / "imported.marker").exists(), pids.exists()))
        return choice

    recorder.answer = answer


def outputs(recorder: Recorder, session_id: str) -> list[str]:
    return [str(c[-1].get("rawOutput", {}).get("output")) for c in calls(recorder.of(session_id)).values()]


@pytest.mark.asyncio
async def test_nothing_runs_before_the_answer_and_always_is_remembered_until_a_tool_changes(
    workspace: Path, tmp_path: Path, state_dir: Path
) -> None:
    pids = tmp_path / "pids"
    clone(workspace, pids)
    seen: list[tuple[bool, bool]] = []
    async with ReplayServer([MARK, DONE, MARK, DONE]) as model:
        async with acp_agent(workspace, OPENAI_BASE_URL=model.base_url) as (conn, _, recorder):
            answering(recorder, "allow_always", seen, workspace, pids)
            session = await conn.new_session(cwd=str(workspace), mcp_servers=[])
            assert not (workspace / "imported.marker").exists() and not pids.exists()
            answer = await conn.prompt(session_id=session.session_id, prompt=text("mark it"))
        assert answer.stop_reason == "end_turn" and seen == [(False, False)]
        (asked,) = recorder.permission_requests
        assert asked["toolCall"]["title"] == "Trust this folder?"
        listed = asked["toolCall"]["content"][0]["content"]["text"]
        assert "tools file marked.py" in listed and "MCP server fx: " in listed
        assert [o["optionId"] for o in asked["options"]] == ["allow_once", "allow_always", "reject_once"]
        assert outputs(recorder, session.session_id) == ["marked 1"]
        assert (workspace / "imported.marker").exists() and pids.exists()  # trusted: imported, started
        assert str(workspace.resolve()) in json.loads((state_dir / "trust.json").read_text())["folders"]

        async with acp_agent(workspace, OPENAI_BASE_URL=model.base_url) as (conn, _, again):
            session = await conn.new_session(cwd=str(workspace), mcp_servers=[])
            await conn.prompt(session_id=session.session_id, prompt=text("mark it again"))
        assert again.permission_requests == [] and outputs(again, session.session_id) == ["marked 1"]

    with (workspace / "marked.py").open("a", encoding="utf-8") as edited:
        edited.write("# one more line\n")
    async with (
        ReplayServer([{"content": "Final Answer: hi"}]) as model,
        acp_agent(workspace, OPENAI_BASE_URL=model.base_url) as (conn, _, edited_tools),
    ):
        edited_tools.answer = lambda request: "reject_once"
        session = await conn.new_session(cwd=str(workspace), mcp_servers=[])
        await conn.prompt(session_id=session.session_id, prompt=text("hello"))
    assert [r["toolCall"]["title"] for r in edited_tools.permission_requests] == ["Trust this folder?"]


@pytest.mark.asyncio
async def test_dont_trust_leaves_them_out_and_says_so_to_the_user_and_to_the_model(
    workspace: Path, tmp_path: Path
) -> None:
    pids = tmp_path / "pids"
    clone(workspace, pids)
    seen: list[tuple[bool, bool]] = []
    async with (
        ReplayServer([MARK, DONE, {"content": "Final Answer: second"}]) as model,
        acp_agent(workspace, OPENAI_BASE_URL=model.base_url) as (conn, _, recorder),
    ):
        answering(recorder, "reject_once", seen, workspace, pids)
        first = await conn.new_session(cwd=str(workspace), mcp_servers=[])
        await conn.prompt(session_id=first.session_id, prompt=text("mark it"))
        second = await conn.new_session(cwd=str(workspace), mcp_servers=[])
        await conn.prompt(session_id=second.session_id, prompt=text("and now"))
    assert seen == [(False, False)]  # one question for the folder, in this agent process
    assert not (workspace / "imported.marker").exists() and not pids.exists()
    for session_id in (first.session_id, second.session_id):
        updates = recorder.of(session_id)
        opening = next(u for u in updates if u["sessionUpdate"] == "agent_message_chunk")["content"]["text"]
        assert "not trusted" in opening and "tools file marked.py" in opening
        assert f"mini-agent trust {workspace.resolve()}" in said(updates)
    (held,) = outputs(recorder, first.session_id)
    assert "unknown tool 'mark'" in held and "not trusted" in held and "tools file marked.py" in held
    told = json.dumps(model.requests[1]["messages"])
    assert "not trusted" in told and "mini-agent trust" in told
