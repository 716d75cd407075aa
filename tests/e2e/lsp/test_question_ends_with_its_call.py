"""A question an MCP server puts to the person ends with the call that asked it, whatever ends the call:
the daemon withdraws it from the editor (`$/cancelRequest` for the `agent/elicit`) and an answer that
comes after never reaches the server (it is told `cancel`). A real daemon over stdio, a server that
keeps its question open after its call is cancelled (tests/support/stubborn_eliciting_server.py, which
records every answer that reaches it), a scripted model."""

from __future__ import annotations

import asyncio
import os
import sys
from pathlib import Path
from typing import Any

import pytest
from mini_agent.scripted import ReplayServer
from mini_agent_client import AgentClient

from ...support.scripted import action
from ...support.waiting import wait_for
from .test_elicitation import ELICITING

STUBBORN = Path(__file__).parents[2] / "support" / "stubborn_eliciting_server.py"
ACCEPT = {"action": "accept", "content": {"name": "Late"}}


def stubborn_server(answers: Path) -> dict[str, Any]:
    return {
        "name": "stubborn",
        "command": sys.executable,
        "args": [str(STUBBORN), str(answers)],
        "env": [{"name": "PYTHONPATH", "value": os.pathsep.join(sys.path)}],
        "requiresApproval": False,
    }


class Editor:
    """An editor whose person answers "accept" only when told to, and which notes every question and
    every `$/cancelRequest`."""

    def __init__(self) -> None:
        self.asked: list[dict[str, Any]] = []
        self.questions: list[Any] = []  # the ids of the agent/elicit requests
        self.withdrawn: list[Any] = []
        self.answer = asyncio.Event()

    async def elicit(self, params: dict[str, Any]) -> Any:
        self.asked.append(params)
        await self.answer.wait()
        return ACCEPT

    def tap(self, direction: str, message: dict[str, Any]) -> None:
        if message.get("method") == "agent/elicit":
            self.questions.append(message["id"])

    def withdraw(self, params: dict[str, Any]) -> None:
        self.withdrawn.append(params["id"])


async def asked_then(
    root: Path, end: str, tool: str = "ask_name", **tools: Any
) -> tuple[Editor, dict[str, Any] | None, list[str]]:
    """A session whose model calls the stubborn server's `tool`; the call is ended by `end` ("cancel",
    "timeout", "turn": the call answers by itself, "exit": the daemon shuts down) while the question
    waits; then the person answers "accept". The step's result (None at exit), and what reached the
    server."""
    editor = Editor()
    answers = root / "answers.txt"
    script = [action(f"stubborn_{tool}", {}), {"content": "Final Answer: done"}]
    async with ReplayServer(script) as model:
        options = {"llm": {"baseUrl": model.base_url}, "store": {"enabled": False}, "tools": tools}
        async with AgentClient.spawn(
            root=root, options=options, capabilities=ELICITING,
            handlers={"agent/elicit": editor.elicit}, tap=editor.tap,
        ) as client:
            client.connection.on_notification("$/cancelRequest", editor.withdraw)
            session_id = await client.start_session("greet me", mcp_servers=[stubborn_server(answers)])
            work = asyncio.create_task(client.step(session_id))
            await wait_for(lambda: bool(editor.asked))
            if end == "cancel":
                await client.cancel(session_id)
            if end == "exit":
                shutdown = asyncio.create_task(client.call("shutdown"))
                await wait_for(lambda: bool(editor.withdrawn))
                editor.answer.set()
                await asyncio.wait_for(shutdown, 30)
                result = None
            else:
                result = await asyncio.wait_for(work, 30)
                await wait_for(lambda: bool(editor.withdrawn))  # the editor may close its prompt
                editor.answer.set()  # the person answers anyway, late
                await asyncio.sleep(1.0)  # time for a late answer to travel, were it forwarded
                assert await client.list_tools()  # the daemon goes on answering
    recorded = answers.read_text().splitlines() if answers.exists() else []
    return editor, result, recorded


@pytest.mark.asyncio
async def test_a_cancelled_calls_question_is_withdrawn_and_its_late_accept_never_reaches_the_server(
    tmp_path: Path,
) -> None:
    editor, result, recorded = await asked_then(tmp_path, "cancel")
    assert result is not None and result["stopReason"] == "cancelled"
    assert editor.withdrawn == editor.questions and len(editor.questions) == 1
    assert recorded == ["cancel"]  # the server was told cancel, never the late accept


@pytest.mark.asyncio
async def test_a_timed_out_calls_question_is_withdrawn_and_its_late_accept_never_reaches_the_server(
    tmp_path: Path,
) -> None:
    editor, result, recorded = await asked_then(tmp_path, "timeout", timeoutSec=1)
    assert result is not None
    [observation] = result["observations"]
    assert observation["isError"] and "timed out" in observation["output"]
    assert editor.withdrawn == editor.questions and len(editor.questions) == 1
    assert recorded == ["cancel"]


@pytest.mark.asyncio
async def test_a_question_left_open_by_a_finished_call_is_withdrawn_when_the_call_ends(
    tmp_path: Path,
) -> None:
    editor, result, recorded = await asked_then(tmp_path, "turn", tool="ask_and_go")
    assert result is not None
    [observation] = result["observations"]
    assert observation["output"].startswith("asked, not waiting")
    assert editor.withdrawn == editor.questions and len(editor.questions) == 1
    assert recorded == ["cancel"]


@pytest.mark.asyncio
async def test_a_question_open_when_the_daemon_shuts_down_is_withdrawn_and_its_answer_dropped(
    tmp_path: Path,
) -> None:
    editor, _result, recorded = await asked_then(tmp_path, "exit")
    assert editor.withdrawn == editor.questions and len(editor.questions) == 1
    assert not any(line.startswith("hello") for line in recorded), recorded
