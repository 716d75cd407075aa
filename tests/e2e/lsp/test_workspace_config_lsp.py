"""The workspace configuration file on the LSP door: its place between initializationOptions and the
environment, and what an untrusted workspace gets of it."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from mini_agent.scripted import ReplayServer

from ...support.tools import DOWN, write


@pytest.mark.asyncio
async def test_lsp_door_reads_the_file_between_options_and_environment(
    workspace: Path, daemon_factory: Callable[..., Any], monkeypatch: pytest.MonkeyPatch
) -> None:
    script = [{"content": "Final Answer: from the file's server"}]
    async with ReplayServer(script) as model:
        write(workspace, ".mini-agent/config.toml", f'max_steps = 4\n[llm]\nbase_url = "{model.base_url}"\n')
        monkeypatch.setenv("OPENAI_BASE_URL", DOWN)
        monkeypatch.setenv("MINI_AGENT_MODEL", "env-model")
        client = await daemon_factory({"workspaceTrusted": True, "store": {"enabled": False}})
        sid = (await client.request("agent/startSession", {"task": "hi"}))["sessionId"]
        run = await client.request("agent/run", {"sessionId": sid})
        assert run["finalAnswer"] == "from the file's server"
        assert model.requests[0]["model"] == "env-model"
        assert (await client.request("agent/getSession", {"sessionId": sid}))["stepCount"] == 1


@pytest.mark.asyncio
async def test_lsp_door_refuses_a_broken_file_naming_it(
    workspace: Path, daemon_factory: Callable[..., Any]
) -> None:
    write(workspace, "pyproject.toml", "[tool.mini-agent]\nmax_steps = 0\n")
    client = await daemon_factory({"store": {"enabled": False}})
    with pytest.raises(Exception, match=r"pyproject.toml: tool.mini-agent.max_steps"):
        await client.request("agent/listTools", {})
