"""Keys and the workspace file: no key anywhere in the file, each key sent only to the server it was set
for, the file's size bound; and what a workspace not trusted takes up of a stored session."""

from __future__ import annotations

from pathlib import Path

import pytest
from mini_agent.app.config import MAX_FILE_BYTES, ConfigError, WorkspaceConfig, load
from mini_agent.app.trust import distrust
from mini_agent.core.contracts import LLMConfig, ToolCall
from mini_agent.core.session import AgentConfig, AgentSession, Decision, PendingApproval
from mini_agent.core.strict import InvalidParams

from ...support.tools import write
from .merging import merged_wire

DEFAULT = LLMConfig().base_url


@pytest.mark.parametrize(
    ("body", "named"),
    [
        ("[tool.mini-agent]\napi_key = 'sk-1'\n", "tool.mini-agent.api_key"),
        ("[[tool.mini-agent.mcp_servers]]\nname = 'd'\ncommand = 'd'\napiKey = 'sk-1'\n",
         "tool.mini-agent.mcp_servers.0.apiKey"),
        ("[[tool.mini-agent.mcp_servers]]\nname = 'd'\ncommand = 'd'\n"
         "env = [{name = 'OPENAI_API_KEY', value = 'sk-1'}]\n",
         "tool.mini-agent.mcp_servers.0.env.0 (OPENAI_API_KEY)"),
        ("[[tool.mini-agent.mcp_servers]]\ntype = 'http'\nname = 'd'\nurl = 'http://h'\n"
         "headers = [{name = 'x-api-key', value = 'sk-1'}]\n",
         "tool.mini-agent.mcp_servers.0.headers.0 (x-api-key)"),
        ("[tool.mini-agent.llm.extra.deep]\nAPI-KEY = 'sk-1'\n", "tool.mini-agent.llm.extra.deep.API-KEY"),
    ],
)
def test_a_key_anywhere_in_the_file_is_refused_naming_where(tmp_path: Path, body: str, named: str) -> None:
    write(tmp_path, "pyproject.toml", body)
    with pytest.raises(ConfigError, match="API key never goes in a workspace file") as caught:
        load(tmp_path)
    assert f"{tmp_path / 'pyproject.toml'}: {named}:" in str(caught.value)


def test_names_that_hold_no_secret_pass(tmp_path: Path) -> None:
    write(tmp_path, ".mini-agent/config.toml",
          "[[mcp_servers]]\nname = 'd'\ncommand = 'd'\nenv = [{name = 'LOG_LEVEL', value = 'debug'}]\n")
    assert load(tmp_path).mcp_servers[0]["env"] == [{"name": "LOG_LEVEL", "value": "debug"}]


def test_a_file_over_the_bound_is_refused_and_one_nested_too_deep_is_an_error(tmp_path: Path) -> None:
    write(tmp_path, "pyproject.toml", "#" * MAX_FILE_BYTES + "\n")
    with pytest.raises(ConfigError, match=f"larger than {MAX_FILE_BYTES} bytes"):
        load(tmp_path)
    write(tmp_path, "pyproject.toml", "[tool.mini-agent]\nx = " + "[" * 100_000 + "\n")
    with pytest.raises(ConfigError, match="cannot read it as TOML"):
        load(tmp_path)


FILE = WorkspaceConfig(source="f", llm={"base_url": "http://file/v1"})


@pytest.mark.parametrize(
    ("request_llm", "env", "key"),
    [
        ({"apiKey": "sk-req"}, {}, None),  # the default server's key: not for the file's server
        ({"apiKey": "sk-req"}, {"OPENAI_BASE_URL": "http://env/v1"}, None),
        ({"apiKey": "sk-req", "baseUrl": "http://req/v1"}, {}, "sk-req"),
        ({"apiKey": "sk-req", "baseUrl": "http://file/v1/"}, {}, "sk-req"),  # the user named that server
        ({}, {"OPENAI_API_KEY": "sk-env"}, None),
        ({}, {"OPENAI_API_KEY": "sk-env", "OPENAI_BASE_URL": "http://file/v1"}, "sk-env"),
    ],
)
def test_a_key_goes_only_to_the_server_it_was_set_for(
    request_llm: dict[str, str], env: dict[str, str], key: str | None
) -> None:
    merged = merged_wire(FILE, {"workspaceTrusted": True, "llm": request_llm}, env)
    assert merged["llm"].get("apiKey") == key


def test_without_the_file_naming_a_server_the_keys_stay() -> None:
    empty = WorkspaceConfig()
    assert merged_wire(empty, {"llm": {"apiKey": "sk-req"}}, {})["llm"]["apiKey"] == "sk-req"
    env = {"OPENAI_API_KEY": "sk-env", "OPENAI_BASE_URL": "http://env/v1"}
    assert merged_wire(empty, {"llm": {"apiKey": "sk-req"}}, env)["llm"]["apiKey"] == "sk-req"
    assert merged_wire(FILE, {}, env)["llm"]["apiKey"] == "sk-env"  # not trusted: the env's server
    # a request's `llm` that is no object is refused where the door parses it, before any merging
    with pytest.raises(InvalidParams, match=r"initializationOptions: llm: Input should be a valid dict"):
        merged_wire(empty, {"llm": "not an object"}, {})


def test_a_stored_session_is_taken_up_with_the_users_server_and_no_allowing_decision() -> None:
    own = LLMConfig(base_url=DEFAULT, model="mine")
    theirs = AgentConfig(llm=LLMConfig(base_url="http://theirs/v1", model="theirs"), max_steps=3)
    calls = [ToolCall(f"c{n}", "edit", {}) for n in range(3)]
    session = AgentSession(
        "sess_x", "t", theirs, [],
        standing_decisions={"edit": Decision.ALLOW_ALWAYS, "rm": Decision.REJECT_ALWAYS},
        pending=[PendingApproval(calls[0], 0, Decision.ALLOW_ONCE), PendingApproval(calls[1], 0),
                 PendingApproval(calls[2], 0, Decision.REJECT_ONCE)],
    )
    distrust(session, own)
    assert session.config.llm == own and session.config.max_steps == 3
    assert session.standing_decisions == {"rm": Decision.REJECT_ALWAYS}
    assert [p.call.id for p in session.pending] == ["c1", "c2"]
    same = AgentSession("sess_y", "t", AgentConfig(llm=LLMConfig(base_url=DEFAULT + "/", model="m")), [])
    distrust(same, own)
    assert same.config.llm.model == "m"  # the same server: its stored model stays
