"""An MCP server that asks the person, over the LSP door: a real daemon over stdio, the real eliciting
server (tests/support/eliciting_mcp_server.py), a scripted model calling its `ask_name` tool, and a
client answering `agent/elicit` (or not announcing it)."""

from __future__ import annotations

import asyncio
import os
import sys
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

import pytest
from mini_agent.scripted import ReplayServer
from mini_agent_client import AgentClient

from ...support.schema_check import FrameChecker
from ...support.scripted import action
from ...support.waiting import wait_for

SERVER = Path(__file__).parents[2] / "support" / "eliciting_mcp_server.py"
ELICITING = {"experimental": {"agent": {"elicitation": {}}}}
Handler = Callable[[dict[str, Any]], Awaitable[Any]]


def eliciting_server(answers: Path) -> dict[str, Any]:
    return {
        "name": "eliciting",
        "command": sys.executable,
        "args": [str(SERVER), str(answers)],
        "env": [{"name": "PYTHONPATH", "value": os.pathsep.join(sys.path)}],
        "requiresApproval": False,
    }


async def ask_name(
    root: Path,
    capabilities: dict[str, Any] | None,
    handler: Handler | None,
    checker: FrameChecker | None = None,
    tool: str = "ask_name",
    **tools: Any,
) -> tuple[dict[str, Any], list[str]]:
    """One session whose model calls the server's `tool`: its step, and the server's answers."""
    answers = root / "answers.txt"
    script = [action(f"eliciting_{tool}", {}), {"content": "Final Answer: {last_observation}"}]
    handlers = {"agent/elicit": handler} if handler is not None else {}
    async with ReplayServer(script) as model:
        options = {"llm": {"baseUrl": model.base_url}, "store": {"enabled": False}, "tools": tools}
        async with AgentClient.spawn(
            root=root,
            options=options,
            capabilities=capabilities,
            handlers=handlers,
            tap=checker.tap if checker is not None else None,
        ) as client:
            session_id = await client.start_session("greet me", mcp_servers=[eliciting_server(answers)])
            step = await client.step(session_id)  # its first model turn waits for the server's start
            assert "eliciting_ask_name" in {tool["name"] for tool in await client.list_tools()}
    lines = answers.read_text().splitlines() if answers.exists() else []
    return step, lines


def replying(asked: list[dict[str, Any]], reply: dict[str, Any]) -> Handler:
    async def handle(params: dict[str, Any]) -> dict[str, Any]:
        asked.append(params)
        return reply

    return handle


@pytest.mark.asyncio
async def test_the_answer_typed_in_the_client_reaches_the_server(tmp_path: Path) -> None:
    asked: list[dict[str, Any]] = []
    reply = {"action": "accept", "content": {"name": "Ada"}}
    checker = FrameChecker(strict_client=True)  # both directions fit docs/protocol.schema.json
    step, answers = await ask_name(tmp_path, ELICITING, replying(asked, reply), checker)
    assert checker.errors == []
    assert any(m.get("method") == "agent/elicit" for _, m in checker.seen)
    assert answers == ["hello Ada"]
    [observation] = step["observations"]
    assert observation["output"].startswith("hello Ada") and not observation["isError"]
    [params] = asked
    assert params["serverName"] == "eliciting" and params["message"] == "What is your name?"
    assert params["sessionId"] and params["requestedSchema"]["required"] == ["name"]
    assert params["requestedSchema"]["properties"]["greeting"]["default"] == "hello"


@pytest.mark.parametrize("answer", ["decline", "cancel"])
@pytest.mark.asyncio
async def test_decline_and_cancel_reach_the_server(tmp_path: Path, answer: str) -> None:
    step, answers = await ask_name(tmp_path, ELICITING, replying([], {"action": answer}))
    assert answers == [answer]
    [observation] = step["observations"]
    assert observation["output"].startswith(answer) and not observation["isError"]


@pytest.mark.parametrize(
    "content", [{"name": 42}, {"greeting": "hi"}], ids=["wrong type", "missing required"]
)
@pytest.mark.asyncio
async def test_an_answer_that_does_not_fit_the_form_reaches_the_server_as_a_decline(
    tmp_path: Path, content: dict[str, Any]
) -> None:
    _, answers = await ask_name(tmp_path, ELICITING, replying([], {"action": "accept", "content": content}))
    assert answers == ["decline"]


@pytest.mark.asyncio
async def test_without_client_support_the_server_gets_a_decline_and_the_model_an_error(
    tmp_path: Path,
) -> None:
    asked: list[dict[str, Any]] = []
    step, answers = await ask_name(
        tmp_path, None, replying(asked, {"action": "accept", "content": {"name": "x"}})
    )
    assert asked == []  # never offered to a client that did not announce it
    assert answers == ["decline"]
    [observation] = step["observations"]
    assert observation["isError"]
    assert "decline" in observation["output"] and "cannot put questions to the user" in observation["output"]


@pytest.mark.asyncio
async def test_a_question_left_unanswered_ends_with_the_calls_timeout(tmp_path: Path) -> None:
    never = asyncio.Event()

    async def silent(params: dict[str, Any]) -> Any:
        await never.wait()

    step, answers = await ask_name(tmp_path, ELICITING, silent, timeoutSec=1)
    [observation] = step["observations"]
    assert observation["isError"] and "timed out" in observation["output"]
    assert answers == []  # the server's tool was cancelled while it waited


@pytest.mark.asyncio
async def test_a_link_goes_to_a_client_announcing_url_mode_and_only_to_one(tmp_path: Path) -> None:
    asked: list[dict[str, Any]] = []
    with_url = {"experimental": {"agent": {"elicitation": {"url": {}}}}}
    _, answers = await ask_name(tmp_path, with_url, replying(asked, {"action": "accept"}), tool="ask_link")
    assert answers == ["link accept"]
    [params] = asked
    assert params["mode"] == "url" and params["url"] == "https://example.com/form" and params["elicitationId"]
    assert "requestedSchema" not in params
    forms_only: list[dict[str, Any]] = []
    (tmp_path / "answers.txt").unlink()
    _, answers = await ask_name(
        tmp_path, ELICITING, replying(forms_only, {"action": "accept"}), tool="ask_link"
    )
    assert forms_only == [] and answers == ["link decline"]


@pytest.mark.asyncio
async def test_cancelling_the_step_while_the_person_is_asked_ends_the_call(tmp_path: Path) -> None:
    asked: list[dict[str, Any]] = []
    withdrawn: list[dict[str, Any]] = []
    questions: list[dict[str, Any]] = []

    async def silent(params: dict[str, Any]) -> Any:
        asked.append(params)
        await asyncio.Event().wait()

    answers = tmp_path / "answers.txt"
    script = [action("eliciting_ask_name", {}), {"content": "Final Answer: done"}]
    async with ReplayServer(script) as model:
        options = {"llm": {"baseUrl": model.base_url}, "store": {"enabled": False}}
        async with AgentClient.spawn(
            root=tmp_path,
            options=options,
            capabilities=ELICITING,
            handlers={"agent/elicit": silent},
            tap=lambda direction, message: questions.append(message)
            if message.get("method") == "agent/elicit"
            else None,
        ) as client:
            client.connection.on_notification("$/cancelRequest", withdrawn.append)
            session_id = await client.start_session("greet me", mcp_servers=[eliciting_server(answers)])
            step = asyncio.create_task(client.step(session_id))
            await wait_for(lambda: bool(asked))
            await client.cancel(session_id)
            result = await asyncio.wait_for(step, 30)
            assert result["stopReason"] == "cancelled"
            await wait_for(lambda: bool(withdrawn))  # the editor may close its prompt
            assert [w["id"] for w in withdrawn] == [q["id"] for q in questions]
            assert await client.list_tools()  # the daemon goes on answering
    assert not answers.exists()  # the server's tool was cancelled while it waited
