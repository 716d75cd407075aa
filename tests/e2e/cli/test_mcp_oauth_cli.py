"""An OAuth-protected MCP server from `mini-agent ask`: the sign-in link is printed on stderr (no display
here, so no browser), the person opens it, and the tool runs after the sign-in."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path

import pytest
from mini_agent.scripted import ReplayServer

from ...support.cli import CLI, cli_env
from ...support.oauth import open_page, serving
from ...support.scripted import action
from ...support.tools import write

LINK_WAIT_SEC = 60.0


async def _link(stderr: asyncio.StreamReader, said: list[str]) -> str:
    """The sign-in link the command prints, reading its stderr up to it."""
    while line := (await stderr.readline()).decode():
        said.append(line)
        if line.startswith("mini-agent: open http"):
            return line.split()[-1]
    raise AssertionError("no sign-in link on stderr:\n" + "".join(said))


@pytest.mark.asyncio
async def test_ask_prints_the_sign_in_link_and_runs_the_tool_after_it(tmp_path: Path) -> None:
    root = tmp_path / "ws"
    root.mkdir()
    script = [action("oauth_whoami", {}), {"content": "Final Answer: {last_observation}"}]
    said: list[str] = []
    async with serving(tmp_path) as (url, _), ReplayServer(script) as model:
        write(
            root,
            ".mini-agent/config.toml",
            f'[llm]\nbase_url = "{model.base_url}"\n\n[[mcp_servers]]\ntype = "http"\nname = "oauth"\n'
            f'url = "{url}"\nrequires_approval = false\n',
        )
        env = cli_env(MINI_AGENT_STATE_DIR=str(tmp_path / "state"), DISPLAY="", WAYLAND_DISPLAY="")
        process = await asyncio.create_subprocess_exec(
            *CLI, "ask", "who am I?", "--json", "--trust", cwd=root, env=env,
            stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.PIPE,
        )  # fmt: skip
        assert process.stderr is not None and process.stdout is not None
        link = await asyncio.wait_for(_link(process.stderr, said), LINK_WAIT_SEC)
        await open_page(link)
        out, err = await asyncio.wait_for(process.communicate(), LINK_WAIT_SEC)
    assert process.returncode == 0, "".join(said) + err.decode()
    assert link.startswith(url.removesuffix("/mcp") + "/authorize?")
    assert json.loads(out.decode().splitlines()[-1])["finalAnswer"].startswith("signed in")
