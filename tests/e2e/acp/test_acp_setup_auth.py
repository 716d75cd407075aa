"""Set-up from an ACP editor as a new user meets it: no model server anywhere, so `authenticate` and a
prompt answer the spec's auth-required error; `mini-agent setup` in a real pty (the terminal auth
method's command) keeps the server and a hidden key; the same agent, not restarted, then authenticates,
offers the server's models and completes the seed task, with no model variable in its environment."""

from __future__ import annotations

import asyncio
import io
import stat
import sys
from pathlib import Path

import pexpect
import pytest
from acp import RequestError
from mini_agent.cli.demo import ANSWER, SCRIPT, TASK
from mini_agent.scripted import ReplayServer

from ...support.acp import acp_agent, said, text
from ...support.daemon import daemon_env

SECRET = "sk-never-shown-4d2f"


def run_setup(env: dict[str, str], base_url: str, cwd: Path) -> str:
    """`mini-agent setup` answered through a pty as a person would; what the terminal showed."""
    child = pexpect.spawn(
        sys.executable, ["-m", "mini_agent", "setup"], env=env, cwd=str(cwd), encoding="utf-8", timeout=60
    )
    child.logfile_read = shown = io.StringIO()
    child.expect("model server's URL")
    child.sendline(base_url)
    child.expect("API key")
    child.sendline(SECRET)
    child.expect(r"Which model \(a number, or a name\)")
    child.sendline("1")
    child.expect("It answered.")
    child.expect(pexpect.EOF)
    child.close()
    assert child.exitstatus == 0, shown.getvalue()
    return shown.getvalue()


@pytest.mark.asyncio
async def test_a_new_user_sets_up_in_a_terminal_and_the_agent_then_finishes_the_seed_task(
    workspace: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    (workspace / "pyproject.toml").write_text('[tool.mini-agent]\ntools = ["tools.py"]\n', encoding="utf-8")
    home = tmp_path / "home"
    home.mkdir()
    monkeypatch.setenv("HOME", str(home))  # a user with a home of their own, no model server named
    for name in ("MINI_AGENT_STATE_DIR", "XDG_STATE_HOME", "OPENAI_BASE_URL", "OPENAI_API_KEY"):
        monkeypatch.delenv(name, raising=False)
    env = daemon_env()
    first = [{"content": "OK"}, *SCRIPT]  # the set-up's test request first
    async with ReplayServer(first) as model, acp_agent(workspace, trust=True) as (conn, _, recorder):
        with pytest.raises(RequestError) as refused:
            await conn.authenticate(method_id="setup")
        assert refused.value.code == -32000 and "mini-agent setup" in str(refused.value)
        early = await conn.new_session(cwd=str(workspace), mcp_servers=[])
        with pytest.raises(RequestError) as unset:
            await conn.prompt(session_id=early.session_id, prompt=text(TASK))
        assert unset.value.code == -32000 and "OPENAI_BASE_URL" in str(unset.value)

        shown = await asyncio.to_thread(run_setup, env, model.base_url, workspace)
        assert "It answered." in shown and SECRET not in shown  # the key was read without echo
        settings = home / ".local" / "state" / "mini-agent" / "settings.json"
        assert stat.S_IMODE(settings.stat().st_mode) == 0o600 and SECRET in settings.read_text()

        await conn.authenticate(method_id="setup")
        session = await conn.new_session(cwd=str(workspace), mcp_servers=[])
        (picker,) = [option for option in session.config_options or [] if option.id == "model"]
        assert [choice.value for choice in picker.options] == ["replay"]  # the server's list
        answer = await conn.prompt(session_id=session.session_id, prompt=text(TASK))
    assert answer.stop_reason == "end_turn"
    assert said(recorder.of(session.session_id)) == ANSWER.format(count=21)
    assert all(e.headers.get("Authorization") == f"Bearer {SECRET}" for e in model.exchanges)


@pytest.mark.asyncio
async def test_a_folder_whose_file_names_the_server_asks_for_trust_not_for_sign_in(
    workspace: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    for name in ("OPENAI_BASE_URL", "OPENAI_API_KEY"):
        monkeypatch.delenv(name, raising=False)
    async with ReplayServer([{"content": "Final Answer: from the file's server"}]) as model:
        (workspace / "pyproject.toml").write_text(
            f'[tool.mini-agent.llm]\nbase_url = "{model.base_url}"\nmodel = "replay"\n', encoding="utf-8"
        )
        async with acp_agent(workspace) as (conn, _, recorder):  # not trusted yet
            recorder.answer = lambda request: "allow_once"
            session = await conn.new_session(cwd=str(workspace), mcp_servers=[])
            answer = await conn.prompt(session_id=session.session_id, prompt=text("hello"))
    assert [r["toolCall"]["title"] for r in recorder.permission_requests] == ["Trust this folder?"]
    assert answer.stop_reason == "end_turn"
    assert said(recorder.of(session.session_id)) == "from the file's server"
