"""The workspace configuration file on the ACP door: its place in the precedence and its approval policy."""

from __future__ import annotations

from pathlib import Path

import pytest
from acp import RequestError
from mini_agent.scripted import ReplayServer

from ...support.acp import acp_agent, text
from ...support.tools import DOWN, write


@pytest.mark.asyncio
async def test_acp_door_precedence_and_the_approval_policy(workspace: Path) -> None:
    guarded = "from mini_agent import tool\n\n\n@tool(requires_approval=True)\ndef touch(n: int) -> str:\n"
    guarded += (
        '    """Mark a number.\n\n    Args:\n        n: the number.\n    """\n    return f"touched {n}"\n'
    )
    write(workspace, "guarded.py", guarded)
    step = {"content": 'Thought: t.\nAction: touch\nAction Input: {"n": 1}'}
    async with ReplayServer([step, {"content": "Final Answer: ok"}]) as model:
        write(
            workspace,
            "pyproject.toml",
            '[tool.mini-agent]\ntools = ["guarded.py"]\n'
            f'[tool.mini-agent.llm]\nbase_url = "{model.base_url}"\n'
            '[tool.mini-agent.approval]\nallow = ["touch"]\n',
        )
        async with acp_agent(workspace, trust=True, OPENAI_BASE_URL=DOWN) as (conn, _, recorder):
            session = await conn.new_session(cwd=str(workspace), mcp_servers=[])
            answer = await conn.prompt(session_id=session.session_id, prompt=text("touch it"))
        assert answer.stop_reason == "end_turn" and recorder.permission_requests == []
        async with acp_agent(workspace, OPENAI_BASE_URL=DOWN) as (conn, _, _):  # untrusted: the env's server
            session = await conn.new_session(cwd=str(workspace), mcp_servers=[])
            with pytest.raises(RequestError, match=r"127\.0\.0\.1:9"):
                await conn.prompt(session_id=session.session_id, prompt=text("touch it"))
        write(workspace, "pyproject.toml", "[tool.mini-agent]\ntools = 'guarded.py'\n")
        async with acp_agent(workspace, trust=True) as (conn, _, _):
            with pytest.raises(RequestError, match=r"pyproject.toml: tool.mini-agent.tools"):
                await conn.new_session(cwd=str(workspace), mcp_servers=[])


@pytest.mark.asyncio
async def test_acp_usage_reports_the_window_from_the_file(workspace: Path) -> None:
    """ACP's `usage_update` carries `size`: the window the file names, as the context budget uses it."""
    async with ReplayServer([{"content": "Final Answer: ok"}]) as model:
        write(
            workspace,
            ".mini-agent/config.toml",
            f'[llm]\nbase_url = "{model.base_url}"\ncontext_window = 4096\n',
        )
        async with acp_agent(workspace, trust=True) as (conn, _, recorder):
            session = await conn.new_session(cwd=str(workspace), mcp_servers=[])
            answer = await conn.prompt(session_id=session.session_id, prompt=text("hello"))
    assert answer.stop_reason == "end_turn"
    usage = [u for u in recorder.of(session.session_id) if u["sessionUpdate"] == "usage_update"]
    assert usage and all(u["size"] == 4096 and 0 < u["used"] <= 4096 for u in usage), usage
