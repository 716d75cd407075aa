"""`mini-agent models` and `ask --permission-mode` / `--model`, run as a script runs them, against the
scripted model server listing three models (and an address where nothing listens)."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path

import pytest

from ...support.cli import run_cli
from ...support.model_list import APPROVAL_TOOL, MODELS, ListingServer, down_url
from ...support.scripted import action

DONE = {"content": "Final Answer: done"}


@pytest.mark.asyncio
async def test_models_lists_what_the_server_offers_the_current_one_marked(workspace: Path) -> None:
    async with ListingServer() as model:
        listed = await asyncio.to_thread(
            run_cli, ["models", "--base-url", model.base_url], workspace, MINI_AGENT_MODEL="small"
        )
        args = ["models", "--base-url", model.base_url, "--json"]
        as_json = await asyncio.to_thread(run_cli, args, workspace)
    assert listed.returncode == 0, listed.stderr
    assert listed.stdout.splitlines() == ["  replay", "* small", "  large"]
    assert as_json.returncode == 0, as_json.stderr
    found = json.loads(as_json.stdout)
    assert [m["id"] for m in found["models"]] == list(MODELS) and found["source"] == "server"


@pytest.mark.asyncio
async def test_models_says_why_there_is_only_one_when_the_server_is_down(workspace: Path) -> None:
    down = down_url()
    args = ["models", "--base-url", down]
    done = await asyncio.to_thread(run_cli, args, workspace, MINI_AGENT_MODEL="mine")
    assert done.returncode == 0, done.stderr
    assert done.stdout.splitlines() == ["* mine"]
    assert f"the model server at {down} could not be reached" in done.stderr
    assert "the configured model 'mine' is the only choice" in done.stderr


@pytest.mark.asyncio
async def test_ask_permission_mode_ask_never_runs_a_tool_that_needs_approval(workspace: Path) -> None:
    (workspace / "stamp.py").write_text(APPROVAL_TOOL, encoding="utf-8")
    script = [action("stamp", {"note": "x"}), DONE]
    async with ListingServer(script) as model:
        args = ["ask", "stamp it", "--tools", "stamp.py", "--base-url", model.base_url, "--model", "large",
                "--json", "--trust", "--permission-mode", "ask_never"]
        done = await asyncio.to_thread(run_cli, args, workspace)
        asked = model.asked_for()
    assert done.returncode == 0, done.stderr
    events = [json.loads(line) for line in done.stdout.splitlines()]
    outputs = [e["observation"]["output"] for e in events if "observation" in e]
    assert outputs == ["stamped x"]
    assert asked == ["large", "large"]


@pytest.mark.asyncio
async def test_ask_permission_mode_ask_never_is_refused_without_trust(workspace: Path) -> None:
    async with ListingServer([DONE]) as model:
        args = ["ask", "hi", "--base-url", model.base_url, "--permission-mode", "ask_never"]
        done = await asyncio.to_thread(run_cli, args, workspace)
    assert done.returncode == 1
    assert "not trusted" in done.stderr and "mini-agent trust" in done.stderr
