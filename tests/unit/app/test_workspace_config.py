"""The workspace configuration file read alone: where it is read from, what it may say, and how its layers
merge (request > file > environment > defaults)."""

from __future__ import annotations

from pathlib import Path

import pytest
from mini_agent.app import config as workspace_config
from mini_agent.app.config import ConfigError, load

from ...support.tools import write
from .merging import merged_wire


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
    trusted = merged_wire(config, {"workspaceTrusted": True}, env)
    assert trusted["llm"] == {"baseUrl": "http://file/v1", "model": "file-model"}  # the env key stays home
    untrusted = merged_wire(config, {}, env)
    assert untrusted["llm"] == {"baseUrl": "http://env/v1", "model": "file-model", "apiKey": "sk-env"}
    request = {"workspaceTrusted": True, "llm": {"model": "request-model"}}
    assert merged_wire(config, request, env)["llm"]["model"] == "request-model"
    assert merged_wire(workspace_config.WorkspaceConfig(), None, {}) == {"llm": {}}


def test_every_tool_mode_and_the_context_window_can_be_set_in_the_file(tmp_path: Path) -> None:
    """The file offers what the options offer: json mode (small local models) and the window size."""
    write(tmp_path, ".mini-agent/config.toml", '[llm]\ntool_mode = "json"\ncontext_window = 2048\n')
    options, _ = workspace_config.resolve(tmp_path, None, {})
    assert (options.llm.tool_mode, options.llm.context_window) == ("json", 2048)
