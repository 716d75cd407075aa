"""`mini-agent ask` with an MCP server that never answers `initialize` (named by the trusted workspace
file): the task runs after the server's `first_turn_timeout_sec`, not its 60 s start bound."""

from __future__ import annotations

import asyncio
import json
import subprocess
import sys
from pathlib import Path

import pytest
from mini_agent.scripted import ReplayServer

from ...support.cli import CLI, cli_env
from ...support.tools import write

HOSTILE = Path(__file__).parents[2] / "support" / "hostile_mcp_server.py"
GENEROUS = 45.0  # far below the server's own 60 s start bound, far above what the task takes


@pytest.mark.asyncio
async def test_ask_runs_the_task_without_waiting_out_a_hung_servers_start(tmp_path: Path) -> None:
    root = tmp_path / "ws"
    root.mkdir()
    async with ReplayServer([{"content": "Thought: done.\nFinal Answer: done"}]) as model:
        write(
            root,
            ".mini-agent/config.toml",
            f'[llm]\nbase_url = "{model.base_url}"\n\n[[mcp_servers]]\nname = "hung"\n'
            f"command = {json.dumps(sys.executable)}\nargs = {json.dumps([str(HOSTILE), 'silent'])}\n"
            "requires_approval = false\nfirst_turn_timeout_sec = 1\n",
        )
        env = cli_env(MINI_AGENT_STATE_DIR=str(tmp_path / "state"))
        done = await _run([*CLI, "ask", "t", "--json", "--trust"], root, env)
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout.splitlines()[-1])["finalAnswer"] == "done"
    assert "still starting after 1 s (firstTurnTimeoutSec)" in done.stdout + done.stderr
    assert len(model.exchanges) == 1


async def _run(command: list[str], cwd: Path, env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    """The command, run off the event loop (the scripted model server answers on it)."""
    return await asyncio.to_thread(
        subprocess.run, command, cwd=cwd, env=env, capture_output=True, text=True, timeout=GENEROUS,
        check=False,
    )
