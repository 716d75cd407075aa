"""The ACP door end to end: the official SDK's client side drives `python -m mini_agent acp` over real
stdio, with the real tool host, the real SQLite store and the scripted model server over HTTP."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path

import pytest
from acp import (
    RequestError,
    embedded_text_resource,
    resource_block,
    resource_link_block,
    text_block,
)
from mini_agent.cli.demo import ANSWER, SCRIPT, TASK
from mini_agent.scripted import ReplayServer

from ...support.acp import acp_agent, calls, said, text, workspace_config
from ...support.scripted import non_empty_lines


@pytest.mark.asyncio
async def test_seed_scenario_over_acp(workspace: Path) -> None:
    expected = non_empty_lines(workspace / "schema.py")
    async with ReplayServer(SCRIPT) as model:
        workspace_config(workspace, model.base_url)
        async with acp_agent(workspace, trust=True) as (conn, _, recorder):
            session = await conn.new_session(cwd=str(workspace), mcp_servers=[])
            answer = await conn.prompt(session_id=session.session_id, prompt=text(TASK))
    assert answer.stop_reason == "end_turn"
    updates = recorder.of(session.session_id)
    turn = [u for u in updates if u["sessionUpdate"] != "available_commands_update"]
    assert turn[0] == {**turn[0], "sessionUpdate": "session_info_update", "title": TASK[:80]}
    by_call = list(calls(updates).values())
    assert [c[0]["title"] for c in by_call] == [
        'list_python_files(directory=".")',
        'count_file_lines(path="schema.py", ignore_empty=true)',
        'count_file_lines(file_path="schema.py", ignore_empty=true)',
    ]
    assert [[u["status"] for u in c] for c in by_call] == [
        ["pending", "in_progress", "completed"],
        ["pending", "in_progress", "failed"],
        ["pending", "in_progress", "completed"],
    ]
    assert all(c[0]["kind"] == "other" and "rawInput" in c[0] for c in by_call)
    wrong = by_call[1][-1]
    assert "file_path" in wrong["content"][0]["content"]["text"] and wrong["rawOutput"]["isError"]
    assert by_call[2][-1]["rawOutput"]["output"] == str(expected)
    assert said(updates) == ANSWER.format(count=expected)
    assert updates.count({**updates[-1], "sessionUpdate": "usage_update"}) <= 1
    assert [u["sessionUpdate"] for u in updates].count("usage_update") == 4


@pytest.mark.asyncio
async def test_follow_up_prompt_continues_the_same_history_byte_exact(workspace: Path) -> None:
    script = [
        {"content": "Thought: easy.\nFinal Answer: first answer"},
        {"content": "Thought: still easy.\nFinal Answer: second answer to {last_user}"},
    ]
    async with ReplayServer(script) as model:
        workspace_config(workspace, model.base_url)
        async with acp_agent(workspace, trust=True) as (conn, _, recorder):
            session = await conn.new_session(cwd=str(workspace), mcp_servers=[])
            first = await conn.prompt(session_id=session.session_id, prompt=text("first question"))
            second = await conn.prompt(session_id=session.session_id, prompt=text("and a follow-up"))
        before, after = model.exchanges[0].body["messages"], model.exchanges[1].body["messages"]
    assert first.stop_reason == second.stop_reason == "end_turn"
    assert json.dumps(after[: len(before)]) == json.dumps(before)
    assert after[len(before) :] == [
        {"role": "assistant", "content": "Thought: easy.\nFinal Answer: first answer"},
        {"role": "user", "content": "and a follow-up"},
    ]
    assert said(recorder.of(session.session_id)) == "first answersecond answer to and a follow-up"


@pytest.mark.asyncio
async def test_cancel_during_a_slow_model_reply_answers_cancelled_and_queues_the_next_prompt(
    workspace: Path,
) -> None:
    script = [
        {"chunks": ["Thought: thinking", " slowly..."], "chunk_delay": 30},
        {"content": "Final Answer: after the cancel"},
    ]
    async with ReplayServer(script) as model:
        workspace_config(workspace, model.base_url)
        async with acp_agent(workspace, trust=True) as (conn, _, recorder):
            session = await conn.new_session(cwd=str(workspace), mcp_servers=[])
            sid = session.session_id
            slow = asyncio.ensure_future(conn.prompt(session_id=sid, prompt=text("take your time")))
            while "agent_thought_chunk" not in recorder.kinds(sid):  # the model has started replying
                await asyncio.sleep(0.05)
            await conn.cancel(session_id=sid)
            queued = await conn.prompt(session_id=sid, prompt=text("now quickly"))  # sent before the answer
            cancelled = await slow
        aborted = model.exchanges[0].aborted
    assert cancelled.stop_reason == "cancelled"
    assert queued.stop_reason == "end_turn"
    assert aborted
    assert said(recorder.of(sid)) == "after the cancel"


SLOW_TOOL = '''
import time


def wait_a_while(seconds: float) -> str:
    """Sleep, then say so.

    Args:
        seconds: how long.
    """
    time.sleep(seconds)
    return "done waiting"
'''


@pytest.mark.asyncio
async def test_cancel_during_a_slow_tool_kills_it_and_answers_cancelled(workspace: Path) -> None:
    (workspace / "slow.py").write_text(SLOW_TOOL, encoding="utf-8")
    script = [{"content": 'Thought: wait.\nAction: wait_a_while\nAction Input: {"seconds": 60}'}]
    async with ReplayServer(script) as model:
        workspace_config(workspace, model.base_url, tools='tools = ["slow.py"]')
        async with acp_agent(workspace, trust=True) as (conn, _, recorder):
            session = await conn.new_session(cwd=str(workspace), mcp_servers=[])
            sid = session.session_id
            turn = asyncio.ensure_future(conn.prompt(session_id=sid, prompt=text("wait")))
            while {"in_progress"} - {u.get("status") for u in recorder.of(sid)}:
                await asyncio.sleep(0.05)
            await conn.cancel(session_id=sid)
            answer = await turn
    assert answer.stop_reason == "cancelled"
    last = next(iter(calls(recorder.of(sid)).values()))[-1]
    assert last["status"] == "failed" and "Cancelled" in last["content"][0]["content"]["text"]


@pytest.mark.asyncio
async def test_model_server_down_is_an_error_naming_the_url(workspace: Path) -> None:
    url = "http://127.0.0.1:9/v1"  # the discard port: nothing listens
    workspace_config(workspace, url)
    async with acp_agent(workspace, trust=True) as (conn, process, _):
        session = await conn.new_session(cwd=str(workspace), mcp_servers=[])
        with pytest.raises(RequestError) as caught:
            await conn.prompt(session_id=session.session_id, prompt=text("hello?"))
        assert "127.0.0.1:9" in str(caught.value)
        with pytest.raises(RequestError) as relative:
            await conn.new_session(cwd="relative/path", mcp_servers=[])
        assert "absolute" in str(relative.value)
        assert process.returncode is None


@pytest.mark.asyncio
async def test_step_budget_and_a_repeated_call_end_the_turn_with_max_turn_requests_and_say_which(
    workspace: Path,
) -> None:
    listing = {"content": 'Thought: list.\nAction: list_python_files\nAction Input: {"directory": "."}'}
    async with ReplayServer([listing] * 7) as model:
        workspace_config(workspace, model.base_url, max_steps="max_steps = 2")
        async with acp_agent(workspace, trust=True) as (conn, _, recorder):
            budget = await conn.new_session(cwd=str(workspace), mcp_servers=[])
            out_of_steps = await conn.prompt(session_id=budget.session_id, prompt=text("list forever"))
        workspace_config(workspace, model.base_url, max_steps="max_steps = 10")
        async with acp_agent(workspace, trust=True) as (conn, _, looped):
            loop = await conn.new_session(cwd=str(workspace), mcp_servers=[])
            repeated = await conn.prompt(session_id=loop.session_id, prompt=text("list forever"))
    assert out_of_steps.stop_reason == repeated.stop_reason == "max_turn_requests"
    assert "step budget (2 steps)" in said(recorder.of(budget.session_id))
    assert "repeated the same tool call" in said(looped.of(loop.session_id))


@pytest.mark.asyncio
async def test_prompt_blocks_text_links_and_embedded_resources_become_the_users_words(
    workspace: Path,
) -> None:
    blocks = [
        text_block("Sharing the following file as context: notes.md"),
        resource_link_block(name="schema.py", uri=(workspace / "schema.py").as_uri()),
        resource_block(embedded_text_resource("file:///notes.md", "remember the milk")),
        text_block("What do these say?"),
    ]
    async with ReplayServer([{"content": "Final Answer: {last_user}"}]) as model:
        workspace_config(workspace, model.base_url)
        async with acp_agent(workspace, trust=True) as (conn, _, _):
            session = await conn.new_session(cwd=str(workspace), mcp_servers=[])
            await conn.prompt(session_id=session.session_id, prompt=blocks)
        user = [m["content"] for m in model.requests[0]["messages"] if m["role"] == "user"]
    assert user == [
        "Sharing the following file as context: notes.md\n\n"
        f"[schema.py]({(workspace / 'schema.py').as_uri()})\n\n"
        '<context uri="file:///notes.md">\nremember the milk\n</context>\n\n'
        "What do these say?"
    ]
