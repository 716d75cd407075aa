"""A chat: an ACP session as this connection follows it, and its model and permission mode.

Before its first prompt a chat has no session in the workspace yet (`started` is false): what the user
chooses then is kept here and the session starts with it; from then on a choice changes the session
from its next model turn.
"""

from __future__ import annotations

import asyncio
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from acp.schema import SessionModeState

from mini_agent.acp import checks, updates
from mini_agent.core.errors import AgentError
from mini_agent.core.session import PermissionMode
from mini_agent.tools.mcp.config import McpServer

if TYPE_CHECKING:
    from mini_agent.acp.client import AcpClient
    from mini_agent.app.workspace import Workspace

SHOWN_MODELS = 20  # of the choices, in the error message refusing a model


@dataclass(slots=True)
class Chat:
    """An ACP session: its workspace and client, whether its task is known yet, and its prompt queue."""

    session_id: str
    workspace: Workspace
    client: AcpClient
    started: bool
    mcp_servers: list[McpServer]  # the client's, for this session (with the workspace's, for every one)
    turn: asyncio.Lock = field(default_factory=asyncio.Lock)
    cancels: int = 0  # bumped by session/cancel: a prompt queued before it answers `cancelled`
    beginning: asyncio.Future[None] | None = None  # the prompt's start (its MCP servers), while it runs
    warned: bool = False  # told that its sessions will not be saved, when the store could not be opened
    model: str | None = None  # chosen before the first prompt starts the session: it starts with them
    mode: PermissionMode | None = None

async def configure(
    chat: Chat, *, model: str | None = None, mode: PermissionMode | None = None
) -> None:
    """A started session changes from its next model turn (and says so in updates of its own
    kinds); one not started yet starts with the choice."""
    chat.workspace.check_mode(mode)
    if chat.started:
        chat.workspace.configure_session(chat.session_id, model=model, permission_mode=mode)
        return
    chat.model, chat.mode = model or chat.model, mode or chat.mode


async def model_choice(chat: Chat, value: str) -> str:
    """`value` when it is a model to offer: one the server lists, or the session's own; never a
    name holding control or bidi characters."""
    checks.model_name(value, "value")
    choices = await chat.workspace.list_models()
    now, _mode_now = current(chat)
    if value == now or value in choices.models:
        return value
    offered = ", ".join(repr(m) for m in choices.models[:SHOWN_MODELS])
    raise AgentError(f"model {checks.quoted(value)} is not one to choose: the choices are {offered}",
                     value=checks.quoted(value))


def current(chat: Chat) -> tuple[str, PermissionMode]:
    """The session's model and permission mode (the chosen or the default ones before it starts)."""
    if chat.started:
        config = chat.workspace.sessions.get(chat.session_id).config
        return config.llm.model, config.permission_mode
    defaults = chat.workspace.sessions.defaults
    return chat.model or defaults.llm.model, chat.mode or defaults.permission_mode


async def options(chat: Chat) -> tuple[list[updates.ConfigOption], SessionModeState]:
    """The session's `configOptions` and legacy `modes`; the model server is asked once."""
    choices = await chat.workspace.list_models()
    model, mode = current(chat)
    listed = updates.config_options(model, choices.models, mode, choices.message)
    return listed, updates.mode_state(mode)
