"""`mini-agent trust DIR` and `mini-agent untrust DIR`: a daemon started later in that folder (the CLI's
own, an editor's) trusts it without being told, `initialize` says so, and `untrust` undoes it; an
untrusted folder's run says on stderr what it left out and how to trust it."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

import pytest
from mini_agent.scripted import ReplayServer

from ...support.cli import run_cli
from ...support.raw import RawDaemon
from ...support.tools import MARKED

MARK = {"content": 'Thought: mark.\nAction: mark\nAction Input: {"n": 1}'}
DONE = {"content": "Final Answer: {last_observation}"}
TOOLS_FILE = "tools file marked.py"


async def ask(root: Path, base_url: str) -> Any:
    return await asyncio.to_thread(run_cli, ["ask", "mark it"], root, OPENAI_BASE_URL=base_url)


def daemon_view(root: Path) -> tuple[dict[str, Any], list[str], list[str]]:
    """A daemon's `trust` at initialize, its tools, and the messages it showed, in a folder."""
    daemon = RawDaemon(root)
    try:
        trust = daemon.initialize()["result"]["capabilities"]["experimental"]["agent"]["trust"]
        tools = [tool["name"] for tool in daemon.request("agent/listTools", {})["result"]["tools"]]
        shown = [n["params"]["message"] for n in daemon.notifications if n["method"] == "window/showMessage"]
    finally:
        daemon.close()
    return trust, tools, shown


@pytest.mark.asyncio
async def test_trust_and_untrust_a_folder_for_later_daemons(workspace: Path, tmp_path: Path) -> None:
    (workspace / "marked.py").write_text(MARKED, encoding="utf-8")
    (workspace / "pyproject.toml").write_text('[tool.mini-agent]\ntools = ["marked.py"]\n', encoding="utf-8")
    trust, tools, shown = daemon_view(workspace)
    assert trust == {"trusted": False, "remembered": False, "needed": True, "wouldRun": [TOOLS_FILE]}
    assert "mark" not in tools
    assert any("not trusted" in m and f"mini-agent trust {workspace.resolve()}" in m for m in shown), shown

    async with ReplayServer([MARK, DONE]) as model:
        untrusted = await ask(workspace, model.base_url)
    assert "tools file marked.py" in untrusted.stderr and "mini-agent trust" in untrusted.stderr

    done = run_cli(["trust", str(workspace)], tmp_path)
    assert done.returncode == 0 and "tools file marked.py" in done.stdout, done.stderr
    trust, tools, shown = daemon_view(workspace)
    assert trust["trusted"] and trust["remembered"] and "mark" in tools and shown == []
    async with ReplayServer([MARK, DONE]) as model:
        trusted = await ask(workspace, model.base_url)
    assert trusted.returncode == 0 and "marked 1" in trusted.stdout, trusted.stderr

    undone = run_cli(["untrust", str(workspace)], tmp_path)
    assert undone.returncode == 0 and "no longer trusted" in undone.stdout
    trust, tools, _ = daemon_view(workspace)
    assert not trust["trusted"] and not trust["remembered"] and "mark" not in tools
    assert "was not trusted" in run_cli(["untrust", str(workspace)], tmp_path).stdout
