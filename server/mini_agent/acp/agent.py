"""The ACP agent: `session/*` handlers over `app.workspace.Workspace`, as the LSP door's are.

Each `cwd` is one `Workspace` whose client (`client.AcpClient`) is this connection: its events go out
as `session/update`, its permission prompts as `session/request_permission`. Nothing here steps an
agent itself.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
from collections.abc import Callable
from datetime import UTC, datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any

from acp import RequestError, helpers
from acp.connection import Connection
from acp.schema import (
    AgentCapabilities,
    AuthenticateResponse,
    ClientCapabilities,
    CloseSessionResponse,
    DeleteSessionResponse,
    FileSystemCapabilities,
    ForkSessionResponse,
    Implementation,
    InitializeResponse,
    ListSessionsResponse,
    LoadSessionResponse,
    McpCapabilities,
    NewSessionResponse,
    PromptCapabilities,
    PromptResponse,
    ResumeSessionResponse,
    SessionCapabilities,
    SessionCloseCapabilities,
    SessionDeleteCapabilities,
    SessionForkCapabilities,
    SessionInfo,
    SessionInfoUpdate,
    SessionListCapabilities,
    SessionResumeCapabilities,
    SetSessionConfigOptionResponse,
    SetSessionModeResponse,
)

from mini_agent.acp import auth, checks, slash, updates
from mini_agent.acp import chat as chat_config
from mini_agent.acp.chat import Chat
from mini_agent.acp.folders import Folders
from mini_agent.acp.transport import LineTransport
from mini_agent.acp.trust_prompt import TrustPrompt
from mini_agent.app import commands
from mini_agent.core import content
from mini_agent.core.contracts import Part, StopReason
from mini_agent.core.errors import AgentError, UnknownSession
from mini_agent.core.images import checked
from mini_agent.core.session import PermissionMode, new_session_id
from mini_agent.plumbing.jsonrpc import JsonRpcError, error_data
from mini_agent.plumbing.version import VERSION
from mini_agent.tools.mcp.config import McpServer, parse_servers

if TYPE_CHECKING:
    from mini_agent.acp.client import AcpClient
    from mini_agent.app.model_choices import ModelAccess
    from mini_agent.app.workspace import Workspace
    from mini_agent.core.session import SessionRow

log = logging.getLogger(__name__)

TITLE_CHARS = 80
PAGE = 50
STOP_NOTES = {
    StopReason.MAX_TURN_REQUESTS: "Stopped: this prompt used up its step budget ({max_steps} steps).",
    StopReason.LOOP_DETECTED: "Stopped: the model repeated the same tool call with the same arguments.",
}


class MiniAgent:
    """The ACP `Agent`: the SDK's router calls these with snake_case keyword arguments."""

    def __init__(
        self,
        transport: LineTransport,
        *,
        trusted: bool,
        env: dict[str, str] | None = None,
        access: ModelAccess | None = None,
    ) -> None:
        self._transport = transport
        self._env = dict(os.environ if env is None else env)
        self._folders = Folders(
            self._client_for, lambda: self._fs, trusted=trusted, env=self._env, access=access
        )
        self._chats: dict[str, Chat] = {}
        self.connection: Connection | None = None
        self._fs: FileSystemCapabilities | None = None  # what the client said it can do, at initialize
        self._client_capabilities: ClientCapabilities | None = None
        self._trust = TrustPrompt(self._conn, self._env)  # asks, once per folder, where it waits for trust

    def _conn(self) -> Connection:
        assert self.connection is not None
        return self.connection

    def _capabilities(self) -> ClientCapabilities | None:
        return self._client_capabilities

    # -- lifecycle ------------------------------------------------------------------------------

    async def initialize(
        self, protocol_version: int, client_capabilities: ClientCapabilities | None = None, **_: Any
    ) -> InitializeResponse:
        self._fs = client_capabilities.fs if client_capabilities is not None else None
        self._client_capabilities = client_capabilities
        capabilities = AgentCapabilities(
            load_session=True,
            prompt_capabilities=PromptCapabilities(embedded_context=True, image=True),
            mcp_capabilities=McpCapabilities(http=True, sse=False),
            session_capabilities=SessionCapabilities(
                list=SessionListCapabilities(),
                resume=SessionResumeCapabilities(),
                fork=SessionForkCapabilities(),
                delete=SessionDeleteCapabilities(),
                close=SessionCloseCapabilities(),
            ),
        )
        return InitializeResponse(
            protocol_version=1,
            agent_capabilities=capabilities,
            agent_info=Implementation(name="mini-agent", title="mini-agent", version=VERSION),
            auth_methods=auth.methods(),
        )

    async def authenticate(self, method_id: str, **_: Any) -> AuthenticateResponse:
        """Succeeds when `method_id`'s model server is set up and answers (`auth`); the workspaces
        open here take it up for their new sessions, so the model picker shows its models at once."""
        await auth.authenticate(method_id, self._env)
        await self._folders.use_model_servers()
        return AuthenticateResponse()

    async def aclose(self) -> None:
        """Stop every workspace's tool hosts, HTTP session and store."""
        for chat in self._chats.values():
            chat.workspace.sessions.cancel(chat.session_id)
        await self._folders.aclose()

    # -- sessions -------------------------------------------------------------------------------

    async def new_session(
        self, cwd: str, mcp_servers: list[Any] | None = None, **_: Any
    ) -> NewSessionResponse:
        pair = await self._folders.get(cwd)
        chat = self._adopt(new_session_id(), pair, started=False, mcp_servers=mcp_servers)
        options, modes = await chat_config.options(chat)
        # after the answer, which tells the client the session's id
        asyncio.get_running_loop().call_soon(self._announce, chat)
        return NewSessionResponse(session_id=chat.session_id, config_options=options, modes=modes)

    async def load_session(
        self, cwd: str, session_id: str, mcp_servers: list[Any] | None = None, **_: Any
    ) -> LoadSessionResponse:
        """Replay the whole history, user turns included, before answering."""
        workspace, client = await self._folders.get(cwd)
        events = workspace.sessions.replay(session_id, task=True)  # an unknown session stops here
        chat = self._adopt(session_id, (workspace, client), started=True, mcp_servers=mcp_servers)
        self._warn(chat)
        options, modes = await chat_config.options(chat)
        for update in updates.history(events, client.kind_of, client.models):
            client.post(session_id, update)
        self._announce(chat)
        return LoadSessionResponse(config_options=options, modes=modes)

    async def resume_session(
        self, session_id: str, cwd: str, mcp_servers: list[Any] | None = None, **_: Any
    ) -> ResumeSessionResponse:
        pair = await self._folders.get(cwd)
        pair[0].sessions.resume(session_id)
        chat = self._adopt(session_id, pair, started=True, mcp_servers=mcp_servers)
        options, modes = await chat_config.options(chat)
        self._announce(chat)
        return ResumeSessionResponse(config_options=options, modes=modes)

    async def fork_session(
        self, session_id: str, cwd: str, mcp_servers: list[Any] | None = None, **_: Any
    ) -> ForkSessionResponse:
        """A new session with the whole ended history of `session_id` (a copy in the store, not a
        replay), followed by this connection like one it made; the source goes on untouched."""
        pair = await self._folders.get(cwd)
        servers = _mcp_servers(mcp_servers) if mcp_servers is not None else None
        forked = pair[0].sessions.fork(session_id, mcp_servers=servers)
        chat = self._adopt(forked.session_id, pair, started=True, mcp_servers=mcp_servers)
        options, modes = await chat_config.options(chat)
        self._announce(chat)
        return ForkSessionResponse(session_id=forked.session_id, config_options=options, modes=modes)

    async def list_sessions(
        self, cwd: str | None = None, cursor: str | None = None, **_: Any
    ) -> ListSessionsResponse:
        """Newest first, `PAGE` at a time; the cursor is the offset of the next page."""
        pairs = [await self._folders.get(cwd)] if cwd is not None else self._folders.pairs()
        offset = checks.offset(cursor)
        infos: list[SessionInfo] = []
        more = False
        for workspace, _client in pairs:
            rows, total = workspace.sessions.list_sessions(None, PAGE, offset)
            more = more or offset + PAGE < total  # counted before unreadable rows are skipped
            infos += [info for row in rows if (info := _info(row, workspace.root)) is not None]
        return ListSessionsResponse(sessions=infos, next_cursor=str(offset + PAGE) if more else None)

    async def close_session(self, session_id: str, **_: Any) -> CloseSessionResponse:
        """Stop the session's work (its turn is cancelled, a prompt queued behind it answers
        `cancelled`), wait for it, and let the session go: this connection stops following it and the
        daemon frees it from memory. The store keeps it, so a later session/load takes it up again."""
        chat = self._chat(session_id)
        await self.cancel(session_id)
        async with chat.turn:
            self._chats.pop(session_id, None)
            if chat.started:
                with contextlib.suppress(UnknownSession):  # deleted meanwhile
                    chat.workspace.sessions.close(session_id)
        return CloseSessionResponse()

    def _announce(self, chat: Chat) -> None:
        """The slash commands, for the client's prompt box."""
        if self._chats.get(chat.session_id) is chat:
            chat.client.post(chat.session_id, updates.commands_update())

    async def delete_session(self, session_id: str, **_: Any) -> DeleteSessionResponse:
        chat = self._chats.pop(session_id, None)
        if chat is not None:
            if chat.started:
                chat.workspace.sessions.delete(session_id)
            return DeleteSessionResponse()
        for workspace, _client in self._folders.pairs():
            try:
                workspace.sessions.delete(session_id)
            except UnknownSession:
                continue
            return DeleteSessionResponse()
        raise UnknownSession(session_id)

    # -- configuration --------------------------------------------------------------------------

    async def set_config_option(
        self, config_id: str, session_id: str, value: str | bool, **_: Any
    ) -> SetSessionConfigOptionResponse:
        """`model` (one the model server lists) or `mode` (a permission mode); answers every option."""
        chat = self._chat(session_id)
        if not isinstance(value, str):
            raise AgentError(f"configId {config_id!r} takes a value from its options, not {value!r}",
                             config_id=checks.quoted(config_id))
        if config_id == updates.MODEL_OPTION:
            await chat_config.configure(chat, model=await chat_config.model_choice(chat, value))
        elif config_id == updates.MODE_OPTION:
            await chat_config.configure(chat, mode=checks.mode(value, "value"))
        else:
            raise AgentError(
                f"unknown configId {checks.quoted(config_id)}: this agent has {updates.MODEL_OPTION!r} and "
                f"{updates.MODE_OPTION!r}",
                config_id=checks.quoted(config_id),
            )
        options, _modes = await chat_config.options(chat)
        return SetSessionConfigOptionResponse(config_options=options)

    async def set_session_mode(self, mode_id: str, session_id: str, **_: Any) -> SetSessionModeResponse:
        """The legacy session modes: the same permission mode as the `mode` config option."""
        await chat_config.configure(self._chat(session_id), mode=checks.mode(mode_id, "modeId"))
        return SetSessionModeResponse()

    # -- turns ----------------------------------------------------------------------------------

    async def prompt(
        self, session_id: str, prompt: list[updates.PromptBlock], **meta: Any
    ) -> PromptResponse:
        """One user turn: the first is the task, each later one a follow-up in the same history.
        Prompts queue behind the one running; one queued before a session/cancel answers `cancelled`."""
        chat = self._chat(session_id)
        ticket = chat.cancels
        async with chat.turn:
            if chat.cancels != ticket:
                return PromptResponse(stop_reason="cancelled")
            self._warn(chat)
            traceparent = meta.get("traceparent")
            chat.workspace.trace_parent(session_id, traceparent if isinstance(traceparent, str) else None)
            parts = updates.prompt_parts(prompt)
            text = content.words(parts)
            checked([(image.mime_type, image.data) for image in content.images(parts)], "prompt")
            if commands.parse(text) is not None:
                return await self._command(chat, text)
            if not chat.started and not chat.workspace.model_server_named:
                raise auth.required()
            begun = asyncio.ensure_future(self._begin(chat, parts))
            chat.beginning = begun
            try:
                await begun
            except asyncio.CancelledError:
                if chat.cancels == ticket or _cancelling():
                    raise
            finally:
                chat.beginning = None
            if chat.cancels != ticket:  # cancelled while its MCP servers started
                return PromptResponse(stop_reason="cancelled")
            summary = await chat.workspace.sessions.run(session_id)
        reason = summary.stop_reason
        if reason is StopReason.ERROR:
            failed = JsonRpcError.internal_error(
                summary.last.error or "the model server failed", error_data("model_failed")
            )
            raise RequestError(failed.code, failed.message, failed.data)
        note = STOP_NOTES.get(reason) if reason is not None else None
        if note is not None:
            text = note.format(max_steps=summary.session.config.max_steps)
            chat.client.post(session_id, helpers.update_agent_message_text(text))
        return PromptResponse(stop_reason=_ACP_STOP.get(reason, "end_turn") if reason else "end_turn")

    async def cancel(self, session_id: str, **_: Any) -> None:
        """The whole turn: a prompt still starting its MCP servers stops there, a step in flight is
        cancelled, and a prompt queued behind them answers `cancelled` without starting."""
        chat = self._chats.get(session_id)
        if chat is None:
            return
        chat.cancels += 1
        if chat.beginning is not None:
            chat.beginning.cancel()
        chat.workspace.sessions.cancel(session_id)

    async def _command(self, chat: Chat, text: str) -> PromptResponse:
        """A slash command (`slash.run`): its words an agent message, no model turn."""

        async def configure(model: str | None, mode: PermissionMode | None) -> None:
            chosen = await chat_config.model_choice(chat, model) if model else None
            await chat_config.configure(chat, model=chosen, mode=mode)

        session_id = chat.session_id
        async def trust() -> list[str] | None:  # asked first: trusted only on an allow
            return await self._trust.by_command(session_id, chat.workspace)

        said = await slash.run(chat.workspace, session_id if chat.started else None, text, configure,
                               lambda: chat_config.current(chat), trust)
        chat.client.post(session_id, helpers.update_agent_message_text(said))
        return PromptResponse(stop_reason="end_turn")

    async def _begin(self, chat: Chat, parts: tuple[Part, ...]) -> None:
        """The turn up to its first step: the task or the follow-up in the history, once the MCP
        servers are up."""
        workspace, session_id = chat.workspace, chat.session_id
        text, images = content.words(parts), content.images(parts)
        await self._trust.ensure(session_id, workspace, chat.client)
        if chat.started:
            workspace.sessions.prompt(session_id, text, chat.mcp_servers, images, parts)
            return
        from mini_agent.app.options import LLMParams

        llm = LLMParams.model_validate({"model": chat.model}) if chat.model is not None else None
        session = await workspace.start_session(
            text, mcp_servers=chat.mcp_servers, session_id=session_id, llm=llm, permission_mode=chat.mode,
            images=images, parts=parts,
        )
        chat.started = True
        info = SessionInfoUpdate(
            session_update="session_info_update",
            title=text[:TITLE_CHARS],
            updated_at=_iso(session.updated_at),
        )
        chat.client.post(session_id, info)

    def _warn(self, chat: Chat) -> None:
        """A workspace whose store could not be opened says so in each of its sessions, once, before
        anything else the session shows: ACP clients show no stderr."""
        problem = chat.workspace.store_error
        if problem is None or chat.warned:
            return
        chat.warned = True
        text = f"Note: {problem}"
        chat.client.post(chat.session_id, helpers.update_agent_message_text(text))

    # -- parts ----------------------------------------------------------------------------------

    def _chat(self, session_id: str) -> Chat:
        chat = self._chats.get(session_id)
        if chat is None:
            raise AgentError(
                f"unknown session {session_id!r} in this agent: make it with session/new, "
                "or take it up with session/load or session/resume",
                session_id=session_id,
            )
        return chat

    def _adopt(
        self,
        session_id: str,
        pair: tuple[Workspace, AcpClient],
        *,
        started: bool,
        mcp_servers: list[Any] | None,
    ) -> Chat:
        """This connection follows the session from now on: its client posts the session's updates."""
        servers = _mcp_servers(mcp_servers)
        chat = self._chats.get(session_id)
        if chat is not None:
            chat.mcp_servers = servers
            return chat
        chat = self._chats[session_id] = Chat(session_id, pair[0], pair[1], started, servers)
        return chat

    def _follows(self, root: Path) -> Callable[[str], bool]:
        def follows(session_id: str) -> bool:
            chat = self._chats.get(session_id)
            return chat is not None and chat.workspace.root == root

        return follows

    def _client_for(self, root: Path) -> AcpClient:
        from mini_agent.acp.client import AcpClient  # the adapters load with the first workspace

        return AcpClient(root, self._transport, self._conn, self._follows(root), self._capabilities)


_ACP_STOP: dict[StopReason, Any] = {
    StopReason.END_TURN: "end_turn",
    StopReason.CANCELLED: "cancelled",
    StopReason.MAX_TURN_REQUESTS: "max_turn_requests",
    StopReason.LOOP_DETECTED: "max_turn_requests",
    StopReason.MAX_TOKENS: "max_tokens",
    StopReason.REFUSAL: "refusal",
}


def _mcp_servers(raw: list[Any] | None) -> list[McpServer]:
    """ACP's server descriptions as the MCP tool source takes them; stdio and HTTP, not SSE."""
    dumped = [server.model_dump(mode="json", by_alias=True, exclude_none=True) for server in raw or []]
    for server in dumped:
        server.pop("_meta", None)
    return parse_servers("mcpServers", dumped)


def _cancelling() -> bool:
    """Whether the task running this (the request itself) is being cancelled."""
    task = asyncio.current_task()
    return task is not None and task.cancelling() > 0


def _iso(timestamp: float) -> str:
    return datetime.fromtimestamp(timestamp, UTC).isoformat()


def _info(row: SessionRow, root: Path) -> SessionInfo | None:
    """The row as session/list shows it; None (and a log line naming it) for a row that cannot be."""
    try:
        return SessionInfo(
            session_id=row.session_id,
            cwd=str(root),
            title=row.task[:TITLE_CHARS] or None,
            updated_at=_iso(row.updated_at),
        )
    except (TypeError, ValueError, OverflowError, OSError) as exc:
        log.warning("session/list skips session %r of %s: its stored row is unreadable (%s)",
                    row.session_id, root, exc)
        return None
