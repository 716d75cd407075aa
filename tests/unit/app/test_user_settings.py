"""`app.user_settings`: the user's model server kept 0600 in the state folder, and where it sits among
the configuration's layers (below the environment and the workspace file, its key for its server only)."""

from __future__ import annotations

import stat
from pathlib import Path

import pytest
from mini_agent.app import user_settings
from mini_agent.app.config import WorkspaceConfig
from mini_agent.app.user_settings import SettingsError, UserSettings

from .merging import merged_wire

USER = UserSettings("http://user:8080/v1", "qwen", api_key="sk-user")


def test_settings_are_written_for_the_user_alone_and_read_back(state_dir: Path) -> None:
    written = user_settings.save(USER)
    assert written == state_dir / "settings.json" and user_settings.load() == USER
    assert stat.S_IMODE(written.stat().st_mode) == 0o600


@pytest.mark.parametrize(
    ("text", "words"),
    [
        ("{not json", "not JSON"),
        ('{"llm": {"baseUrl": "ftp://x"}}', "llm.baseUrl: String should match pattern"),
        ('{"llm": {"baseUrl": "http://x/v1", "apiKeyEnv": "1BAD"}}', "llm.apiKeyEnv"),
        ('{"llm": {"baseUrl": "http://x/v1"}, "extra": 1}', "extra: Extra inputs are not permitted"),
    ],
)
def test_a_settings_file_that_cannot_be_used_is_named_with_its_key(
    state_dir: Path, text: str, words: str
) -> None:
    (state_dir / "settings.json").write_text(text, encoding="utf-8")
    with pytest.raises(SettingsError, match=r"settings\.json") as caught:
        user_settings.load()
    assert words in str(caught.value) and "run `mini-agent setup` again" in str(caught.value)


def test_no_settings_file_is_no_settings(state_dir: Path) -> None:
    assert user_settings.load() is None


def test_the_user_layer_is_below_the_environment_and_the_workspace_file() -> None:
    alone = merged_wire(WorkspaceConfig(), None, {}, USER)["llm"]
    assert alone == {"baseUrl": "http://user:8080/v1", "model": "qwen", "apiKey": "sk-user"}
    env = {"OPENAI_BASE_URL": "http://env/v1", "MINI_AGENT_MODEL": "env-model"}
    over = merged_wire(WorkspaceConfig(), None, env, USER)["llm"]
    assert over == {"baseUrl": "http://env/v1", "model": "env-model"}  # the user's key stays home
    file = WorkspaceConfig(source="f", llm={"base_url": "http://file/v1", "model": "file-model"})
    trusted = merged_wire(file, {"workspaceTrusted": True}, {}, USER)["llm"]
    assert trusted == {"baseUrl": "http://file/v1", "model": "file-model"}
    untrusted = merged_wire(file, {}, {}, USER)["llm"]  # the file's server waits for trust
    assert untrusted == {"baseUrl": "http://user:8080/v1", "model": "file-model", "apiKey": "sk-user"}


def test_a_key_named_by_its_variable_is_read_from_the_environment_for_the_users_server() -> None:
    named = UserSettings("http://user/v1", api_key_env="MY_KEY")
    assert merged_wire(WorkspaceConfig(), None, {"MY_KEY": "sk-var"}, named)["llm"]["apiKey"] == "sk-var"
    assert "apiKey" not in merged_wire(WorkspaceConfig(), None, {}, named)["llm"]
    request = {"llm": {"apiKey": "sk-req"}}  # the request names no server: its key is for the user's
    assert merged_wire(WorkspaceConfig(), request, {}, named)["llm"]["apiKey"] == "sk-req"


def test_the_users_sandbox_choice_is_kept_and_becomes_the_tools_setting(state_dir: Path) -> None:
    off = UserSettings("http://user/v1", sandbox="off")
    user_settings.save(off)
    assert user_settings.load() == off
    assert merged_wire(WorkspaceConfig(), None, {}, off)["tools"] == {"sandbox": "off"}
    request = {"tools": {"sandbox": "on"}}  # the editor's own setting still decides over it
    assert merged_wire(WorkspaceConfig(), request, {}, off)["tools"] == {"sandbox": "on"}
    assert "tools" not in merged_wire(WorkspaceConfig(), None, {}, USER)
