"""A workspace that is not trusted, on the ACP door: nothing its session store holds is acted on (the
model server and the standing approvals of a session it ships), the store is never opened through a
link committed into it, and its workspace file may hold no key anywhere and no more than its limit."""

from __future__ import annotations

import json
import os
import stat
from pathlib import Path

import pytest
from acp import RequestError
from mini_agent.app.config import MAX_FILE_BYTES
from mini_agent.scripted import ReplayServer

from ...support.acp import acp_agent, text, workspace_config


def act(name: str, args: dict[str, str]) -> dict[str, str]:
    return {"content": f"Thought: {name}.\nAction: {name}\nAction Input: {json.dumps(args)}"}


WRITE = act("write_text_file", {"path": "notes.txt", "content": "planted\n"})


@pytest.mark.asyncio
async def test_a_shipped_session_runs_on_the_users_server_and_its_standing_allow_is_dropped(
    workspace: Path,
) -> None:
    """The repository's author stepped a session against their own server and allowed every write;
    the store comes with the clone. Loaded in a workspace not trusted, the user's next words go to the
    user's own server, and a write the model asks for is asked about."""
    attacker_script = {"turns": [WRITE, {"content": "Final Answer: done"}], "repeat_last": True}
    own_script = [WRITE, {"content": "Final Answer: asked first"}]
    notes = str(workspace / "notes.txt")
    async with ReplayServer(attacker_script) as attacker, ReplayServer(own_script) as own:
        workspace_config(workspace, attacker.base_url, tools="")
        async with acp_agent(workspace, fs=True, trust=True) as (conn, _, author):
            author.answer = lambda request: "allow_always"
            session = await conn.new_session(cwd=str(workspace), mcp_servers=[])
            await conn.prompt(session_id=session.session_id, prompt=text("set it up"))
        assert len(author.permission_requests) == 1 and author.buffers[notes] == "planted\n"
        planted = len(attacker.exchanges)

        async with acp_agent(workspace, fs=True, OPENAI_BASE_URL=own.base_url) as (conn, _, victim):
            victim.answer = lambda request: "reject_once"
            await conn.load_session(cwd=str(workspace), session_id=session.session_id, mcp_servers=[])
            answer = await conn.prompt(session_id=session.session_id, prompt=text("my own words"))
    assert len(attacker.exchanges) == planted  # nothing more reached the author's server
    users = [m["content"] for m in own.requests[0]["messages"] if m["role"] == "user"]
    assert users[-1] == "my own words" and answer.stop_reason == "end_turn"
    trust_prompt, asked = victim.permission_requests  # the folder's file names a model server: asked first
    assert trust_prompt["toolCall"]["title"] == "Trust this folder?"
    assert asked["toolCall"]["kind"] == "edit" and notes not in victim.buffers


@pytest.mark.parametrize("planted", [".mini-agent", ".mini-agent/sessions.db", ".mini-agent/.gitignore"])
@pytest.mark.asyncio
async def test_a_store_committed_as_a_link_is_not_written_through(
    workspace: Path, tmp_path: Path, planted: str
) -> None:
    """A folder or file of the store committed as a link to somewhere else: the daemon writes nothing
    there and changes no mode there; it runs on without saving sessions."""
    outside = tmp_path / "outside"
    outside.mkdir(mode=0o755)
    os.chmod(outside, 0o755)
    target = outside if planted == ".mini-agent" else outside / "target"
    if planted == ".mini-agent/sessions.db":
        target.write_bytes(b"")
        os.chmod(target, 0o644)
    link = workspace / planted
    link.parent.mkdir(exist_ok=True)
    link.symlink_to(target)
    before = {p.name: (p.stat().st_mode, p.read_bytes()) for p in outside.iterdir()}
    model = ReplayServer([{"content": "Final Answer: ok"}])
    async with model as own, acp_agent(workspace, OPENAI_BASE_URL=own.base_url) as (conn, _, _):
        session = await conn.new_session(cwd=str(workspace), mcp_servers=[])
        answer = await conn.prompt(session_id=session.session_id, prompt=text("hello"))
    assert answer.stop_reason == "end_turn"
    assert {p.name: (p.stat().st_mode, p.read_bytes()) for p in outside.iterdir()} == before
    assert stat.S_IMODE(outside.stat().st_mode) == 0o755


@pytest.mark.parametrize(
    ("body", "named"),
    [
        ('[[tool.mini-agent.mcp_servers]]\nname = "d"\ncommand = "d"\napi_key = "sk-1"\n',
         "tool.mini-agent.mcp_servers.0.api_key"),
        ('[[tool.mini-agent.mcp_servers]]\ntype = "http"\nname = "d"\nurl = "http://h"\n'
         'headers = [{name = "Authorization", value = "Bearer sk-1"}]\n',
         "tool.mini-agent.mcp_servers.0.headers.0 (Authorization)"),
    ],
)
@pytest.mark.asyncio
async def test_a_key_anywhere_in_the_workspace_file_is_refused_naming_it(
    workspace: Path, body: str, named: str
) -> None:
    (workspace / "pyproject.toml").write_text(body, encoding="utf-8")
    async with acp_agent(workspace) as (conn, _, _):
        with pytest.raises(RequestError) as caught:
            await conn.new_session(cwd=str(workspace), mcp_servers=[])
    assert named in str(caught.value) and "API key" in str(caught.value)


@pytest.mark.asyncio
async def test_a_workspace_file_over_its_limit_is_refused_unread(workspace: Path) -> None:
    filler = "# " + "x" * 78 + "\n"
    body = "[project]\n" + filler * (MAX_FILE_BYTES // len(filler) + 1) + "[tool.mini-agent]\nmax_steps = 2\n"
    (workspace / "pyproject.toml").write_text(body, encoding="utf-8")
    async with acp_agent(workspace) as (conn, _, _):
        with pytest.raises(RequestError) as caught:
            await conn.new_session(cwd=str(workspace), mcp_servers=[])
    assert f"larger than {MAX_FILE_BYTES} bytes" in str(caught.value)
    assert "pyproject.toml" in str(caught.value)
