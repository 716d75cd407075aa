"""`/trust` on the ACP door asks before it remembers: typed as a prompt, it puts the trust question as a
`session/request_permission` and trusts the folder only on an allow — remembered in the user's trust
store only on "Always trust this folder" — while a dismissed or refused question leaves it untrusted.
And a command is a command only when it is the whole prompt: `/trust this repo? …` is words for the
model. `mini-agent acp` over real stdio (an agent not started with --trust), the scripted model
server, the example workspace whose file names a tools file."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from mini_agent.app import trust
from mini_agent.scripted import ReplayServer

from ...support.acp import acp_agent, said, text, workspace_config

TRUST_TITLE = "Trust this folder?"


async def slash_trust(workspace: Path, choice: str | None) -> tuple[list[dict[str, Any]], str, str]:
    """`/trust` answered with `choice` (an optionId; None: the client cancels the question), then
    `/tools`: the permission requests, and what each command said."""
    async with ReplayServer({"turns": [{"content": "Final Answer: hi"}], "repeat_last": True}) as model:
        workspace_config(workspace, model.base_url)
        async with acp_agent(workspace) as (conn, _, recorder):
            recorder.answer = lambda request: choice
            sid = (await conn.new_session(cwd=str(workspace), mcp_servers=[])).session_id
            start = len(recorder.of(sid))
            answer = await conn.prompt(session_id=sid, prompt=text("/trust"))
            assert answer.stop_reason == "end_turn"
            trust_said = said(recorder.of(sid)[start:])
            start = len(recorder.of(sid))
            await conn.prompt(session_id=sid, prompt=text("/tools"))
            tools_said = said(recorder.of(sid)[start:])
        assert model.exchanges == []  # no command reached the model
    return recorder.permission_requests, trust_said, tools_said


@pytest.mark.parametrize("choice", [None, "reject_once"], ids=["dismissed", "refused"])
@pytest.mark.asyncio
async def test_slash_trust_asks_first_and_a_question_not_allowed_trusts_nothing(
    workspace: Path, choice: str | None
) -> None:
    asked, trust_said, tools_said = await slash_trust(workspace, choice)
    [question] = asked
    assert question["toolCall"]["title"] == TRUST_TITLE
    assert {o["optionId"] for o in question["options"]} == {"allow_once", "allow_always", "reject_once"}
    assert "tools.py" in str(question["toolCall"]["content"])  # says what trusting would run
    assert trust_said.startswith("Not trusted")
    assert "No tools" in tools_said
    assert trust.load_store() == {}


@pytest.mark.asyncio
async def test_slash_trust_allowed_once_trusts_this_agent_and_remembers_nothing(workspace: Path) -> None:
    asked, trust_said, tools_said = await slash_trust(workspace, "allow_once")
    assert [q["toolCall"]["title"] for q in asked] == [TRUST_TITLE]
    assert trust_said.startswith("Trusted") and "count_file_lines" in trust_said
    assert "count_file_lines" in tools_said
    assert trust.load_store() == {}


@pytest.mark.asyncio
async def test_slash_trust_always_trusts_and_remembers_the_folder(workspace: Path) -> None:
    asked, trust_said, _tools_said = await slash_trust(workspace, "allow_always")
    assert [q["toolCall"]["title"] for q in asked] == [TRUST_TITLE]
    assert trust_said.startswith("Trusted")
    assert trust.real(workspace) in trust.load_store()


@pytest.mark.asyncio
async def test_slash_trust_followed_by_words_is_a_prompt_for_the_model_not_a_command(workspace: Path) -> None:
    words = "/trust this repo? it looks fine to me"
    async with ReplayServer({"turns": [{"content": "Final Answer: hi"}], "repeat_last": True}) as model:
        workspace_config(workspace, model.base_url)  # held back in a folder not trusted: the env says it
        async with acp_agent(workspace, OPENAI_BASE_URL=model.base_url) as (conn, _, recorder):
            recorder.answer = lambda request: "reject_once"  # the first-contact question: don't trust
            sid = (await conn.new_session(cwd=str(workspace), mcp_servers=[])).session_id
            answer = await conn.prompt(session_id=sid, prompt=text(words))
        assert answer.stop_reason == "end_turn"
        assert words in str(model.requests[0]["messages"])  # the model got the words
    assert "Trusted" not in said(recorder.of(sid))
    assert trust.load_store() == {}
