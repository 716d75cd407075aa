"""A question an MCP server puts to the person ends with the turn that asked it, on the ACP door: a
`session/cancel` while the client shows the server's `elicitation/create` withdraws it
(`$/cancel_request` reaches the client) and the answer the person gives after never reaches the
server, which is told `cancel`. `mini-agent acp` over real stdio, a server that keeps its question open
after its call is cancelled (tests/support/stubborn_eliciting_server.py), a scripted model."""

from __future__ import annotations

import asyncio
import os
import sys
from pathlib import Path
from typing import Any

import pytest
from acp import spawn_agent_process
from acp.connection import StreamDirection, StreamEvent
from acp.schema import (
    AcceptElicitationResponse,
    ClientCapabilities,
    ElicitationCapabilities,
    ElicitationFormCapabilities,
    EnvVariable,
    McpServerStdio,
)
from mini_agent.scripted import ReplayServer

from ...support.acp import AGENT, Recorder, text, workspace_config
from ...support.daemon import daemon_env
from ...support.scripted import action
from ...support.waiting import wait_for

STUBBORN = Path(__file__).parents[2] / "support" / "stubborn_eliciting_server.py"


class LateEditor(Recorder):
    """A client whose person answers the question "accept" only when told to."""

    def __init__(self) -> None:
        super().__init__()
        self.asked = 0
        self.answer_now = asyncio.Event()
        self.questions: list[Any] = []  # the ids of the elicitation/create requests
        self.withdrawn: list[Any] = []

    async def create_elicitation(self, message: str, mode: Any, **_: Any) -> Any:
        self.asked += 1
        await self.answer_now.wait()
        return AcceptElicitationResponse(action="accept", content={"name": "Late"})

    def observe(self, event: StreamEvent) -> None:
        message = event.message
        if event.direction is not StreamDirection.INCOMING:
            return
        if message.get("method") == "elicitation/create":
            self.questions.append(message["id"])
        elif message.get("method") == "$/cancel_request":
            self.withdrawn.append(message["params"]["requestId"])


@pytest.mark.asyncio
async def test_a_cancelled_turns_question_is_withdrawn_and_its_late_accept_never_reaches_the_server(
    tmp_path: Path,
) -> None:
    answers = tmp_path / "answers.txt"
    env = [EnvVariable(name="PYTHONPATH", value=os.pathsep.join(sys.path))]
    server = McpServerStdio(name="stubborn", command=sys.executable, args=[str(STUBBORN), str(answers)],
                            env=env)
    editor = LateEditor()
    editor.answer = lambda request: next(
        str(o["optionId"]) for o in request["options"] if o["kind"] == "allow_once"
    )
    forms = ElicitationCapabilities(form=ElicitationFormCapabilities())
    script = [action("stubborn_ask_name", {}), {"content": "Final Answer: done"}]
    async with ReplayServer(script) as model:
        workspace_config(tmp_path, model.base_url, tools="")
        async with spawn_agent_process(
            editor, *AGENT, "--trust", env=daemon_env(), cwd=tmp_path,
            transport_kwargs={"stderr": None}, use_unstable_protocol=True, observers=[editor.observe],
        ) as (conn, _process):  # fmt: skip
            capabilities = ClientCapabilities(elicitation=forms)
            await conn.initialize(protocol_version=1, client_capabilities=capabilities)
            session = await conn.new_session(cwd=str(tmp_path), mcp_servers=[server])
            turn = asyncio.create_task(conn.prompt(session_id=session.session_id, prompt=text("greet me")))
            await wait_for(lambda: editor.asked > 0)
            await conn.cancel(session_id=session.session_id)
            answer = await asyncio.wait_for(turn, 30)
            assert answer.stop_reason == "cancelled"
            await wait_for(lambda: bool(editor.withdrawn))  # the client may close what it shows
            assert editor.withdrawn == editor.questions and len(editor.questions) == 1
            editor.answer_now.set()  # the person answers anyway, late
            await asyncio.sleep(1.0)
    recorded = answers.read_text().splitlines() if answers.exists() else []
    assert recorded == ["cancel"]  # the server was told cancel, never the late accept
