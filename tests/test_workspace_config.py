"""The workspace configuration file: where it is read from, what it may say, and its place in the
precedence (request > file > environment > defaults) on the LSP door, the ACP door and the CLI."""

from __future__ import annotations

import asyncio
import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from acp import RequestError
from mini_agent.app import config as workspace_config
from mini_agent.app.config import ConfigError, load, merged_options
from mini_agent.scripted import ReplayServer

from .acp_support import acp_agent, text
from .test_cli import run_cli

DOWN = "http://127.0.0.1:9/v1"  # the discard port: a model request there fails, naming it


def write(root: Path, where: str, body: str) -> None:
    path = root / where
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(body, encoding="utf-8")


def test_pyproject_table_and_the_own_file_which_wins(tmp_path: Path) -> None:
    assert load(tmp_path) == workspace_config.WorkspaceConfig()
    write(tmp_path, "pyproject.toml", '[project]\nname = "x"\n')
    assert load(tmp_path).source == ""
    write(
        tmp_path,
        "pyproject.toml",
        '[tool.mini-agent]\ntools = ["tools.py"]\nmax_steps = 7\n'
        '[tool.mini-agent.llm]\nmodel = "m"\ntemperature = 0.5\n'
        '[tool.mini-agent.approval]\nallow = ["count_file_lines"]\n'
        '[[tool.mini-agent.mcp_servers]]\nname = "docs"\ncommand = "docs-mcp"\n',
    )
    config = load(tmp_path)
    assert (config.tools, config.max_steps, dict(config.llm)) == (
        ("tools.py",),
        7,
        {"model": "m", "temperature": 0.5},
    )
    assert config.allow == ("count_file_lines",) and config.mcp_servers == (
        {"name": "docs", "command": "docs-mcp"},
    )
    write(tmp_path, ".mini-agent/config.toml", 'max_steps = 3\n[llm]\ntool_mode = "native"\n')
    own = load(tmp_path)
    assert (own.max_steps, own.tools, dict(own.llm)) == (3, (), {"tool_mode": "native"})
    assert own.source.endswith(".mini-agent/config.toml")


@pytest.mark.parametrize(
    ("body", "key"),
    [
        ("[tool.mini-agent]\nmax_steps = 'ten'\n", "tool.mini-agent.max_steps"),
        ("[tool.mini-agent.llm]\ntemperature = 9\n", "tool.mini-agent.llm.temperature"),
        ("[tool.mini-agent]\nmax_stesp = 3\n", "tool.mini-agent.max_stesp"),
        ("[tool.mini-agent.llm]\napi_key = 'sk-1'\n", "tool.mini-agent.llm.api_key"),
        ("[tool.mini-agent\n", "TOML"),
    ],
)
def test_a_broken_file_is_an_error_naming_the_file_and_the_key(tmp_path: Path, body: str, key: str) -> None:
    write(tmp_path, "pyproject.toml", body)
    with pytest.raises(ConfigError) as caught:
        load(tmp_path)
    assert str(tmp_path / "pyproject.toml") in str(caught.value) and key in str(caught.value)


def test_precedence_and_what_waits_for_trust(tmp_path: Path) -> None:
    write(
        tmp_path,
        "pyproject.toml",
        '[tool.mini-agent.llm]\nbase_url = "http://file/v1"\nmodel = "file-model"\n',
    )
    config = load(tmp_path)
    env = {"OPENAI_BASE_URL": "http://env/v1", "MINI_AGENT_MODEL": "env-model", "OPENAI_API_KEY": "sk-env"}
    trusted = merged_options(config, {"workspaceTrusted": True}, env)
    assert trusted["llm"] == {"baseUrl": "http://file/v1", "model": "file-model"}  # the env key stays home
    untrusted = merged_options(config, {}, env)
    assert untrusted["llm"] == {"baseUrl": "http://env/v1", "model": "file-model", "apiKey": "sk-env"}
    request = {"workspaceTrusted": True, "llm": {"model": "request-model"}}
    assert merged_options(config, request, env)["llm"]["model"] == "request-model"
    assert merged_options(workspace_config.WorkspaceConfig(), None, {}) == {"llm": {}}


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


def test_every_tool_mode_and_the_context_window_can_be_set_in_the_file(tmp_path: Path) -> None:
    """The file offers what the options offer: json mode (small local models) and the window size."""
    write(tmp_path, ".mini-agent/config.toml", '[llm]\ntool_mode = "json"\ncontext_window = 2048\n')
    options, _ = workspace_config.resolve(tmp_path, None, {})
    assert (options.llm.tool_mode, options.llm.context_window) == ("json", 2048)


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
