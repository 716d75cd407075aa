"""An OAuth-protected MCP server used from a session over the ACP door: `mini-agent acp` over real
stdio, the real test server on the SDK's auth pieces (tests/support/oauth_mcp_server.py), a scripted
model calling its tool, and the ACP SDK's client that "opens" the sign-in link by fetching it — given
as a URL-mode `elicitation/create` to a client advertising it, else in a permission-style prompt."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from acp import spawn_agent_process
from acp.schema import (
    AcceptElicitationResponse,
    AllowedOutcome,
    ClientCapabilities,
    ElicitationCapabilities,
    ElicitationUrlCapabilities,
    HttpMcpServer,
    RequestPermissionResponse,
)
from mini_agent.scripted import ReplayServer

from ...support.acp import AGENT, Recorder, dump, text, workspace_config
from ...support.daemon import daemon_env
from ...support.oauth import open_page, serving
from ...support.scripted import action

URL_MODE = ElicitationCapabilities(url=ElicitationUrlCapabilities())


class Person(Recorder):
    """The editor: opens every sign-in link it is given, allows every tool call."""

    def __init__(self) -> None:
        super().__init__()
        self.links: list[str] = []

    async def create_elicitation(self, message: str, mode: Any, **_: Any) -> Any:
        link = dump(mode)["url"]
        self.links.append(link)
        await open_page(link)
        return AcceptElicitationResponse(action="accept")

    async def request_permission(
        self, session_id: str, tool_call: Any, options: list[Any], **kwargs: Any
    ) -> RequestPermissionResponse:
        if any(option.option_id == "opened" for option in options):
            (shown,) = dump(tool_call)["content"]
            self.links.append(shown["content"]["text"].split()[-1])  # the prompt's text ends with the link
            await open_page(self.links[-1])
            return RequestPermissionResponse(outcome=AllowedOutcome(outcome="selected", option_id="opened"))
        self.answer = lambda request: next(
            o["optionId"] for o in request["options"] if o["kind"] == "allow_once"
        )
        return await super().request_permission(session_id, tool_call, options, **kwargs)


async def prompt_once(workspace: Path, state: Path, url: str, person: Person, log: Path, caps: Any) -> str:
    """One `mini-agent acp`, one prompt whose model calls the server's tool: what the agent said."""
    script = [action("oauth_whoami", {}), {"content": "Final Answer: {last_observation}"}]
    async with ReplayServer(script) as model:
        workspace_config(workspace, model.base_url, tools="")
        with log.open("ab") as stderr:
            async with spawn_agent_process(
                person, *AGENT, "--trust", cwd=workspace,
                env=daemon_env(MINI_AGENT_STATE_DIR=str(state), MINI_AGENT_LOG="DEBUG"),
                transport_kwargs={"stderr": stderr}, use_unstable_protocol=True,
            ) as (conn, _process):  # fmt: skip
                await conn.initialize(
                    protocol_version=1, client_capabilities=ClientCapabilities(elicitation=caps)
                )
                server = HttpMcpServer(type="http", name="oauth", url=url, headers=[])
                session = await conn.new_session(cwd=str(workspace), mcp_servers=[server])
                answer = await conn.prompt(session_id=session.session_id, prompt=text("who am I?"))
                assert answer.stop_reason == "end_turn"
    return json.dumps([update for _, update in person.updates])


@pytest.mark.asyncio
@pytest.mark.parametrize("caps", [URL_MODE, None], ids=["url-elicitation", "permission-prompt"])
async def test_a_protected_server_signs_in_once_over_acp(tmp_path: Path, caps: Any) -> None:
    workspace, state, log = tmp_path / "ws", tmp_path / "state", tmp_path / "agent.log"
    workspace.mkdir()
    async with serving(tmp_path) as (url, issued):
        first = Person()
        said = await prompt_once(workspace, state, url, first, log, caps)
        assert "signed in" in said, said
        (link,) = first.links
        assert link.startswith(url.removesuffix("/mcp") + "/authorize?")
        second = Person()  # a new agent: the stored token is used, nobody is asked
        said_again = await prompt_once(workspace, state, url, second, log, caps)
        assert "signed in" in said_again
        assert second.links == []
    tokens = issued.read_text().split()
    assert len(tokens) == 2
    daemon_log = log.read_bytes()
    workspace_files = [path.read_bytes() for path in workspace.rglob("*") if path.is_file()]
    for token in tokens:
        assert token not in said + said_again
        assert token.encode() not in daemon_log
        assert not any(token.encode() in data for data in workspace_files)
