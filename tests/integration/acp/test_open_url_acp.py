"""A link the daemon asks the person to open (a login), put through ACP: `acp.asking.open_url` on
the agent side of a real ACP connection (the SDK's, over OS pipes), the SDK's client on the other."""

from __future__ import annotations

import asyncio
import os
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any

import pytest
from acp import connect_to_agent
from acp.connection import Connection
from acp.schema import (
    AcceptElicitationResponse,
    AllowedOutcome,
    CancelElicitationResponse,
    ClientCapabilities,
    DeniedOutcome,
    ElicitationCapabilities,
    ElicitationFormCapabilities,
    ElicitationUrlCapabilities,
    RequestPermissionResponse,
)
from mini_agent.acp import asking

from ...support.acp import dump

LINK = "https://login.example.com/authorize?client_id=mini-agent&state=abc"
PURPOSE = "Sign in to MCP server 'tracker'"


class Person:
    """The client side: answers a URL elicitation with `accept`, and a permission prompt with
    `choice` (an option id, or None for cancelled)."""

    def __init__(self, *, accept: bool = True, choice: str | None = None) -> None:
        self.accept = accept
        self.choice = choice
        self.elicited: list[dict[str, Any]] = []
        self.prompts: list[dict[str, Any]] = []

    async def create_elicitation(self, message: str, mode: Any, **_: Any) -> Any:
        self.elicited.append({"message": message, **dump(mode)})
        return (
            AcceptElicitationResponse(action="accept")
            if self.accept
            else CancelElicitationResponse(action="cancel")
        )

    async def request_permission(self, session_id: str, tool_call: Any, options: list[Any], **_: Any) -> Any:
        self.prompts.append(
            {"sessionId": session_id, "toolCall": dump(tool_call), "options": [dump(o) for o in options]}
        )
        if self.choice is None:
            return RequestPermissionResponse(outcome=DeniedOutcome(outcome="cancelled"))
        return RequestPermissionResponse(outcome=AllowedOutcome(outcome="selected", option_id=self.choice))

    async def session_update(self, session_id: str, update: Any, **_: Any) -> None:
        return None


async def _pipe() -> tuple[asyncio.StreamReader, asyncio.StreamWriter]:
    loop = asyncio.get_running_loop()
    read_fd, write_fd = os.pipe()
    reader = asyncio.StreamReader()
    await loop.connect_read_pipe(lambda: asyncio.StreamReaderProtocol(reader), os.fdopen(read_fd, "rb"))
    transport, protocol = await loop.connect_write_pipe(
        asyncio.streams.FlowControlMixin, os.fdopen(write_fd, "wb")
    )
    return reader, asyncio.StreamWriter(transport, protocol, None, loop)


async def _unhandled(method: str, params: Any, is_notification: bool) -> None:
    return None


@asynccontextmanager
async def agent_side(person: Person) -> AsyncIterator[Connection]:
    """The agent's end of a connection whose client end is `person`, through the ACP SDK."""
    to_client_reader, to_client_writer = await _pipe()
    to_agent_reader, to_agent_writer = await _pipe()
    client = connect_to_agent(person, to_agent_writer, to_client_reader, use_unstable_protocol=True)  # type: ignore[arg-type]
    agent = Connection(_unhandled, to_client_writer, to_agent_reader)
    try:
        yield agent
    finally:
        await agent.close()
        await client.close()


def caps(**elicitation: Any) -> ClientCapabilities:
    return ClientCapabilities(elicitation=ElicitationCapabilities(**elicitation))


@pytest.mark.parametrize(("accept", "opened"), [(True, True), (False, False)])
@pytest.mark.asyncio
async def test_a_client_advertising_links_gets_a_url_elicitation(accept: bool, opened: bool) -> None:
    person = Person(accept=accept)
    async with agent_side(person) as conn:
        assert (
            await asking.open_url(conn, caps(url=ElicitationUrlCapabilities()), "s1", LINK, PURPOSE) is opened
        )
    [asked] = person.elicited
    assert asked["url"] == LINK and asked["sessionId"] == "s1" and asked["message"] == PURPOSE
    assert asked["elicitationId"] and person.prompts == []


@pytest.mark.parametrize(
    ("capabilities", "choice", "opened"),
    [
        (None, "opened", True),
        (caps(form=ElicitationFormCapabilities()), "opened", True),
        (None, "cancel", False),
        (None, None, False),
    ],
)
@pytest.mark.asyncio
async def test_other_clients_get_a_permission_prompt_showing_the_link(
    capabilities: ClientCapabilities | None, choice: str | None, opened: bool
) -> None:
    person = Person(choice=choice)
    async with agent_side(person) as conn:
        assert await asking.open_url(conn, capabilities, "s1", LINK, PURPOSE) is opened
    [prompt] = person.prompts
    assert person.elicited == [] and prompt["sessionId"] == "s1"
    assert prompt["toolCall"]["title"] == f"{PURPOSE}: {LINK}"
    assert LINK in prompt["toolCall"]["content"][0]["content"]["text"]
    kinds = [(o["name"], o["kind"]) for o in prompt["options"]]
    assert kinds == [("I opened it", "allow_once"), ("Cancel", "reject_once")]
