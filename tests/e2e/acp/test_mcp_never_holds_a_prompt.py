"""Over ACP: an MCP server that never answers `initialize` holds neither `session/new` nor the first
`session/prompt` past its `first_turn_timeout_sec`; the prompt's turn goes on without it and says so.

The server is tests/support/hostile_mcp_server.py `silent`, named by the trusted workspace file (where
the bound can be set; ACP's own server shape has no field for it).
"""

from __future__ import annotations

import asyncio
import json
import sys
from pathlib import Path

import pytest
from mini_agent.scripted import ReplayServer

from ...support.acp import acp_agent, text, workspace_config

HOSTILE = Path(__file__).parents[2] / "support" / "hostile_mcp_server.py"
FINAL = {"content": "Thought: done.\nFinal Answer: done"}
GENEROUS = 40.0  # far below the server's own 60 s start bound, far above what the turn takes


@pytest.mark.asyncio
async def test_a_hung_server_delays_the_first_prompt_by_its_bound_only(
    workspace: Path, tmp_path: Path
) -> None:
    pid_file = tmp_path / "pid"
    server = (
        f'[[tool.mini-agent.mcp_servers]]\nname = "hung"\ncommand = {json.dumps(sys.executable)}\n'
        f"args = {json.dumps([str(HOSTILE), 'silent', str(pid_file)])}\n"
        "requires_approval = false\nfirst_turn_timeout_sec = 1"
    )
    async with ReplayServer([FINAL]) as model:
        workspace_config(workspace, model.base_url, mcp=server)
        async with acp_agent(workspace, trust=True) as (conn, _, recorder):
            async with asyncio.timeout(GENEROUS):
                session_id = (await conn.new_session(cwd=str(workspace), mcp_servers=[])).session_id
                answer = await conn.prompt(session_id=session_id, prompt=text("go"))
    assert answer.stop_reason == "end_turn"
    assert len(model.exchanges) == 1 and "hung_" not in json.dumps(model.exchanges[0].body)
    titles = [u.get("title") for u in recorder.of(session_id) if u["sessionUpdate"] == "tool_call"]
    late = "MCP server 'hung' is still starting after 1 s (firstTurnTimeoutSec): the turn goes on without"
    assert f"{late} its tools" in titles
