"""What an ACP user sees beyond the answer, end to end: the SDK's client side drives
`python -m mini_agent acp` over real stdio against the scripted model server. A retried model request
and a compaction show as status entries (tool calls of kind `other`), never in the answer text; an
overflow compaction cannot fix ends the turn `max_tokens`; the slash commands are announced and run
without a model turn; session/close stops the session's work and frees it, and session/load takes it
up again."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

import pytest
from acp import RequestError
from mini_agent.core.budget import SUMMARY_PROMPT
from mini_agent.scripted import ReplayServer

from ...support.acp import acp_agent, said, text, workspace_config
from ...support.model_list import ListingServer
from ...support.waiting import wait_for

NO_TOOLS = "tools = []"


def entries(updates: list[dict[str, Any]]) -> list[str]:
    """The titles of the status entries: completed tool calls of kind `other` with no input."""
    return [
        u["title"]
        for u in updates
        if u["sessionUpdate"] == "tool_call" and u.get("kind") == "other" and u["status"] == "completed"
    ]


def commands_of(updates: list[dict[str, Any]]) -> list[str]:
    announced = [u for u in updates if u["sessionUpdate"] == "available_commands_update"]
    return [c["name"] for c in announced[-1]["availableCommands"]] if announced else []


@pytest.mark.asyncio
async def test_a_retried_request_is_a_status_entry_and_the_answer_holds_only_the_answer(
    workspace: Path,
) -> None:
    script = [{"status": 503, "error": "the model is loading", "retry_after": 0.1},
              {"content": "Final Answer: the answer"}]
    async with ReplayServer(script) as model:
        workspace_config(workspace, model.base_url, tools=NO_TOOLS)
        async with acp_agent(workspace, trust=True) as (conn, _, recorder):
            sid = (await conn.new_session(cwd=str(workspace), mcp_servers=[])).session_id
            answer = await conn.prompt(session_id=sid, prompt=text("hello"))
    assert answer.stop_reason == "end_turn"
    updates = recorder.of(sid)
    assert said(updates) == "the answer"
    (retry,) = entries(updates)
    assert "HTTP 503" in retry and "trying again" in retry


@pytest.mark.asyncio
async def test_an_overflow_compaction_cannot_fix_ends_the_turn_max_tokens(workspace: Path) -> None:
    def model(body: dict[str, Any]) -> dict[str, Any]:
        if str(body["messages"][0]["content"]).startswith(SUMMARY_PROMPT):
            return {"content": "Notes so far."}
        return {"content": "Final Answer: short"}

    long_text = "Summarise this: " + "many words of a long pasted document " * 150
    async with ReplayServer({"context_limit": 1024}, responder=model) as server:
        workspace_config(workspace, server.base_url, tools=NO_TOOLS)
        async with acp_agent(workspace, trust=True) as (conn, _, recorder):
            sid = (await conn.new_session(cwd=str(workspace), mcp_servers=[])).session_id
            first = await conn.prompt(session_id=sid, prompt=text("hello"))
            await conn.prompt(session_id=sid, prompt=text("and again"))  # an older turn to compact
            second = await conn.prompt(session_id=sid, prompt=text(long_text))
    assert first.stop_reason == "end_turn" and second.stop_reason == "max_tokens"
    updates = recorder.of(sid)
    assert said(updates) == "shortshort"  # the answers alone: no status words in the answer text
    shown = entries(updates)
    assert any(title.startswith("Context compacted") for title in shown), shown
    assert [t for t in shown if "does not fit the model's context window" in t] == [shown[-1]], shown


@pytest.mark.asyncio
async def test_slash_commands_are_announced_and_run_without_a_model_turn(workspace: Path) -> None:
    script = {"turns": [{"content": "Final Answer: first"}], "repeat_last": True}
    async with ListingServer(script) as model:  # lists "large"
        workspace_config(workspace, model.base_url)
        async with acp_agent(workspace) as (conn, _, recorder):  # not trusted: /trust trusts it
            recorder.answer = lambda request: "allow_once"  # /trust asks first: "trust for this session"
            sid = (await conn.new_session(cwd=str(workspace), mcp_servers=[])).session_id
            await wait_for(lambda: bool(commands_of(recorder.of(sid))))
            before = len(model.exchanges)
            ran = {}
            for command in ("/help", "/tools", "/trust", "/model large", "/mode ask_always", "/mode bogus"):
                start = len(recorder.of(sid))
                answer = await conn.prompt(session_id=sid, prompt=text(command))
                ran[command] = (answer.stop_reason, said(recorder.of(sid)[start:]))
            asked = len(model.exchanges) - before
            for words in ("hello", "and then", "and now"):  # older turns for /compact to summarise
                await conn.prompt(session_id=sid, prompt=text(words))
            start = len(recorder.of(sid))
            compacted = await conn.prompt(session_id=sid, prompt=text("/compact"))
            compact_said = said(recorder.of(sid)[start:])
            tools_after = await conn.prompt(session_id=sid, prompt=text("/tools"))
    assert set(commands_of(recorder.of(sid))) >= {"compact", "tools", "model", "mode", "trust", "help"}
    assert asked == 0  # no command reached the model server
    assert all(reason == "end_turn" for reason, _ in ran.values()) and compacted.stop_reason == "end_turn"
    assert "/compact" in ran["/help"][1] and "/trust" in ran["/help"][1]
    assert "No tools" in ran["/tools"][1]  # untrusted: the workspace file's tools wait
    assert "Trusted" in ran["/trust"][1] and "count_file_lines" in ran["/trust"][1]
    assert ran["/model large"][1] == "Model: large"
    assert "ask_always" in ran["/mode ask_always"][1]
    assert "not a permission mode" in ran["/mode bogus"][1]
    assert model.requests[-1]["model"] == "large"  # the turn after /model used it
    assert compact_said.startswith("Context compacted"), compact_said
    assert entries(recorder.of(sid))[-1] == compact_said  # and a status entry says so too
    assert tools_after.stop_reason == "end_turn"
    assert "/compact" not in str(model.requests[-1]["messages"])  # the model never saw a command


@pytest.mark.asyncio
async def test_session_close_stops_the_turn_frees_the_session_and_load_takes_it_up(workspace: Path) -> None:
    script = [{"content": "Final Answer: one"}, {"content": "Final Answer: late", "delay": 30}]
    async with ReplayServer(script) as model:
        workspace_config(workspace, model.base_url, tools=NO_TOOLS)
        async with acp_agent(workspace, trust=True) as (conn, _, recorder):
            sid = (await conn.new_session(cwd=str(workspace), mcp_servers=[])).session_id
            await conn.prompt(session_id=sid, prompt=text("first"))
            slow = asyncio.ensure_future(conn.prompt(session_id=sid, prompt=text("second")))
            await wait_for(lambda: len(model.exchanges) >= 2 or len(model.requests) >= 2)
            await conn.close_session(session_id=sid)
            stopped = await asyncio.wait_for(slow, 20)
            with pytest.raises(RequestError, match="unknown session"):
                await conn.prompt(session_id=sid, prompt=text("third"))
            start = len(recorder.of(sid))
            await conn.load_session(cwd=str(workspace), session_id=sid, mcp_servers=[])
            replayed = recorder.of(sid)[start:]
    assert stopped.stop_reason == "cancelled"
    assert said(replayed, "user_message_chunk") == "firstsecond" and said(replayed) == "one"
