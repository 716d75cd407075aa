"""`mini-agent setup` over a pipe: plain lines answer the prompts, the answers are kept for every door
(the CLI's own `ask` then uses them), and a server that fails the test request is saved only on a yes."""

from __future__ import annotations

import asyncio
import json
import socket
from pathlib import Path

import pytest
from mini_agent.scripted import ReplayServer

from ...support.cli import run_cli


@pytest.mark.asyncio
async def test_setup_over_a_pipe_keeps_the_server_and_the_cli_uses_it(
    workspace: Path, state_dir: Path
) -> None:
    script = [{"content": "OK"}, {"content": "Thought: easy.\nFinal Answer: set up"}]
    async with ReplayServer(script) as model:
        answers = f"{model.base_url}\n$MY_SERVER_KEY\n\n"  # the URL, the key's variable, the first model
        done = await asyncio.to_thread(run_cli, ["setup"], workspace, stdin=answers, MY_SERVER_KEY="sk-var")
        assert done.returncode == 0, done.stderr
        kept = json.loads((state_dir / "settings.json").read_text())
        assert kept["llm"] == {"baseUrl": model.base_url, "model": "replay", "apiKeyEnv": "MY_SERVER_KEY"}
        ask = ["ask", "anything", "--json"]
        asked = await asyncio.to_thread(run_cli, ask, workspace, MY_SERVER_KEY="sk-var")
        assert asked.returncode == 0, asked.stderr
        assert json.loads(asked.stdout.splitlines()[-1])["finalAnswer"] == "set up"
    assert [e.headers.get("Authorization") for e in model.exchanges] == ["Bearer sk-var"] * 2


@pytest.mark.parametrize(("save", "code"), [("n", 1), ("y", 0)])
def test_a_server_that_fails_the_test_request_is_saved_only_on_a_yes(
    workspace: Path, state_dir: Path, save: str, code: int
) -> None:
    with socket.socket() as probe:  # nothing listens here
        probe.bind(("127.0.0.1", 0))
        url = f"http://127.0.0.1:{probe.getsockname()[1]}/v1"
    done = run_cli(["setup", "--base-url", url, "--no-api-key"], workspace, stdin=f"my-model\n{save}\n")
    assert done.returncode == code, done.stderr
    assert "It did not answer" in done.stderr and "could not be reached" in done.stderr
    assert (state_dir / "settings.json").exists() is (code == 0)
    if code:
        assert "Nothing was saved: the server did not answer the test request." in done.stderr
