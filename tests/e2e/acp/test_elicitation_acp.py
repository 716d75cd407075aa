"""An MCP server that asks the person, over the ACP door: `mini-agent acp` over real stdio, the real
eliciting server (tests/support/eliciting_mcp_server.py), a scripted model calling its tools, and the
ACP SDK's client answering `elicitation/create` where it advertises elicitation."""

from __future__ import annotations

import os
import sys
from pathlib import Path
from typing import Any

import pytest
from acp import spawn_agent_process
from acp.schema import (
    AcceptElicitationResponse,
    ClientCapabilities,
    DeclineElicitationResponse,
    ElicitationCapabilities,
    ElicitationFormCapabilities,
    ElicitationUrlCapabilities,
    EnvVariable,
    McpServerStdio,
)
from mini_agent.scripted import ReplayServer

from ...support.acp import AGENT, Recorder, calls, dump, text, workspace_config
from ...support.daemon import daemon_env
from ...support.scripted import action

SERVER = Path(__file__).parents[2] / "support" / "eliciting_mcp_server.py"


class Eliciting(Recorder):
    """The test client, answering `elicitation/create` with `reply` (accept with content, else decline)."""

    def __init__(self, reply: dict[str, Any] | None) -> None:
        super().__init__()
        self.reply = reply
        self.asked: list[dict[str, Any]] = []

    async def create_elicitation(self, message: str, mode: Any, **_: Any) -> Any:
        self.asked.append({"message": message, **dump(mode)})
        if self.reply is None:
            return DeclineElicitationResponse(action="decline")
        return AcceptElicitationResponse(action="accept", content=self.reply)


async def run_tool(
    workspace: Path, tool: str, client: Eliciting, elicitation: ElicitationCapabilities | None
) -> tuple[list[str], dict[str, Any]]:
    """One prompt whose model calls `tool` of the eliciting server: the server's answers, and the
    tool call's last update."""
    answers = workspace / "answers.txt"
    env = [EnvVariable(name="PYTHONPATH", value=os.pathsep.join(sys.path))]
    server = McpServerStdio(
        name="eliciting", command=sys.executable, args=[str(SERVER), str(answers)], env=env
    )
    script = [action(f"eliciting_{tool}", {}), {"content": "Final Answer: {last_observation}"}]
    async with ReplayServer(script) as model:
        workspace_config(workspace, model.base_url, tools="")
        client.answer = lambda request: next(
            str(o["optionId"]) for o in request["options"] if o["kind"] == "allow_once"
        )
        async with spawn_agent_process(
            client, *AGENT, "--trust", env=daemon_env(), cwd=workspace,
            transport_kwargs={"stderr": None}, use_unstable_protocol=True,
        ) as (conn, _process):  # fmt: skip
            await conn.initialize(
                protocol_version=1, client_capabilities=ClientCapabilities(elicitation=elicitation)
            )
            session = await conn.new_session(cwd=str(workspace), mcp_servers=[server])
            answer = await conn.prompt(session_id=session.session_id, prompt=text("greet me"))
            assert answer.stop_reason == "end_turn"
            [updates] = calls(client.of(session.session_id)).values()
    lines = answers.read_text().splitlines() if answers.exists() else []
    return lines, updates[-1]


def output(update: dict[str, Any]) -> str:
    return "".join(c["content"]["text"] for c in update.get("content", []) if c["type"] == "content")


FORM = ElicitationCapabilities(form=ElicitationFormCapabilities())
URL = ElicitationCapabilities(url=ElicitationUrlCapabilities())


@pytest.mark.asyncio
async def test_a_client_advertising_forms_gets_the_question_and_its_answer_reaches_the_server(
    workspace: Path,
) -> None:
    client = Eliciting({"name": "Ada"})
    answers, last = await run_tool(workspace, "ask_name", client, FORM)
    assert answers == ["hello Ada"]
    assert last["status"] == "completed"
    [asked] = client.asked
    assert asked["message"] == "What is your name?" and asked["sessionId"]
    assert asked["requestedSchema"]["required"] == ["name"]


@pytest.mark.asyncio
async def test_a_person_who_declines_in_the_client_is_a_decline_for_the_server(workspace: Path) -> None:
    answers, last = await run_tool(workspace, "ask_name", Eliciting(None), FORM)
    assert answers == ["decline"] and last["status"] == "completed"


@pytest.mark.asyncio
async def test_without_elicitation_the_server_gets_a_decline_and_the_model_an_error(workspace: Path) -> None:
    client = Eliciting({"name": "Ada"})
    answers, last = await run_tool(workspace, "ask_name", client, None)
    assert client.asked == [] and answers == ["decline"]
    assert last["status"] == "failed" and "cannot put questions to the user" in output(last)


@pytest.mark.asyncio
async def test_a_link_goes_out_in_url_mode_to_a_client_advertising_it(workspace: Path) -> None:
    client = Eliciting({})
    answers, _ = await run_tool(workspace, "ask_link", client, URL)
    assert answers == ["link accept"]
    [asked] = client.asked
    assert asked["url"] == "https://example.com/form" and asked["elicitationId"]


@pytest.mark.asyncio
async def test_a_form_is_not_sent_to_a_client_advertising_only_links(workspace: Path) -> None:
    client = Eliciting({"name": "Ada"})
    answers, _ = await run_tool(workspace, "ask_name", client, URL)
    assert client.asked == [] and answers == ["decline"]
