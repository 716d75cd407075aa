"""The workspace configuration file from the command line: a flag beats the file, which beats the
environment."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path

import pytest
from mini_agent.scripted import ReplayServer

from ...support.cli import run_cli
from ...support.tools import DOWN, write


@pytest.mark.asyncio
async def test_cli_flag_beats_the_file_which_beats_the_environment(workspace: Path) -> None:
    async with ReplayServer([{"content": "Final Answer: one"}, {"content": "Final Answer: two"}]) as model:
        write(
            workspace,
            ".mini-agent/config.toml",
            f'[llm]\nbase_url = "{model.base_url}"\nmodel = "file-model"\n',
        )
        args = ["ask", "hi", "--json", "--trust"]
        by_file = await asyncio.to_thread(run_cli, args, workspace, OPENAI_BASE_URL=DOWN)
        by_flag = await asyncio.to_thread(
            run_cli, [*args, "--model", "flag-model"], workspace, OPENAI_BASE_URL=DOWN
        )
    assert by_file.returncode == 0, by_file.stderr
    assert json.loads(by_file.stdout.splitlines()[-1])["finalAnswer"] == "one"
    assert by_flag.returncode == 0, by_flag.stderr
    assert [r["model"] for r in model.requests] == ["file-model", "flag-model"]
