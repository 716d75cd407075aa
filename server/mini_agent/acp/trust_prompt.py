"""The ACP door asks whether to trust a folder, once, at the first prompt that needs it.

ACP carries no workspace trust, so a folder whose workspace file names tools, MCP servers, a model
server or standing approvals (`app.trust.Runs`) and that the user has not trusted before
(`mini-agent trust`, or "Always trust" in an earlier agent) is asked about through
`session/request_permission`, before anything of the folder is imported or started: "Trust for this
session" trusts it for this agent process, "Always trust this folder" also records it in the trust
store, "Don't trust" runs the session without them. An answer holds for every session of that folder
in this agent process; a prompt the client cancels (or cannot answer) asks again at the next one.
Each session of a folder left untrusted first says, as an agent message, what was left out and how
to trust it. The `/trust` command asks the same question (`by_command`) and trusts only on an allow:
"Always trust" is the only answer that is remembered.
"""

from __future__ import annotations

import asyncio
import logging
import uuid
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import TYPE_CHECKING

from acp import helpers
from acp.connection import Connection
from acp.schema import (
    ContentToolCallContent,
    PermissionOption,
    RequestPermissionRequest,
    RequestPermissionResponse,
    TextContentBlock,
    ToolCallUpdate,
)

from mini_agent.acp import asking
from mini_agent.core.errors import AgentError

if TYPE_CHECKING:
    from mini_agent.acp.client import AcpClient
    from mini_agent.app.workspace import Workspace

log = logging.getLogger(__name__)

TITLE = "Trust this folder?"
ONCE, ALWAYS, REJECT = "allow_once", "allow_always", "reject_once"
OPTIONS = [
    PermissionOption(option_id=ONCE, name="Trust for this session", kind="allow_once"),
    PermissionOption(option_id=ALWAYS, name="Always trust this folder", kind="allow_always"),
    PermissionOption(option_id=REJECT, name="Don't trust", kind="reject_once"),
]


class TrustPrompt:
    """The trust answers of one agent process, by folder, and the sessions already told."""

    def __init__(self, conn: Callable[[], Connection], env: Mapping[str, str]) -> None:
        self._conn = conn
        self._env = env
        self._answered: dict[Path, str] = {}  # the folder's answer: ONCE, ALWAYS or REJECT
        self._locks: dict[Path, asyncio.Lock] = {}
        self._told: set[str] = set()  # sessions told what their untrusted folder left out

    async def ensure(self, session_id: str, workspace: Workspace, client: AcpClient) -> None:
        """Before a prompt of `session_id` runs: ask (once per folder) where the folder waits for
        trust, and trust it on an allow; left untrusted, the session is told once what is left out."""
        if workspace.trusted or not workspace.held_back():
            return
        lock = self._locks.setdefault(workspace.root, asyncio.Lock())
        async with lock:  # two sessions' first prompts: one question
            if not workspace.trusted and workspace.root not in self._answered:
                await self._ask(session_id, workspace, client)
        if workspace.trusted or session_id in self._told:
            return
        self._told.add(session_id)
        client.post(session_id, helpers.update_agent_message_text(f"Note: {workspace.held_back_note()}"))

    async def _ask(self, session_id: str, workspace: Workspace, client: AcpClient) -> None:
        choice = await self._question(session_id, workspace)
        if choice is None:
            return  # cancelled or unanswered: no answer, asked again at the next prompt
        self._answered[workspace.root] = choice
        if choice != REJECT:
            await self._trust(session_id, workspace, client, remember=choice == ALWAYS)

    async def by_command(self, session_id: str, workspace: Workspace) -> list[str] | None:
        """`/trust`: the question put, and the folder trusted on an allow (remembered on "Always");
        the problems met, or None when the person did not allow it."""
        choice = await self._question(session_id, workspace)
        if choice is None or choice == REJECT:
            return None
        trusted = await workspace.trust_folder(None, self._env, remember=choice == ALWAYS)
        self._answered[workspace.root] = choice
        if trusted.unremembered is None:
            return trusted.problems
        note = f"trusted for this agent only; it could not be remembered: {trusted.unremembered}"
        return [note, *trusted.problems]

    async def _question(self, session_id: str, workspace: Workspace) -> str | None:
        """Put the question; the option chosen, or None when the client cancelled it or could not
        answer."""
        words = workspace.held_back()
        if words:
            listed = "\n".join(f"- {word}" for word in words)
            said = f"{workspace.config.source} asks to run:\n{listed}"
        else:
            said = f"Trust {workspace.root}? What its workspace file names (tools, MCP servers, a model " \
                   "server, standing approvals) will then load without asking."
        body = TextContentBlock(type="text", text=said)
        call = ToolCallUpdate(
            tool_call_id=f"trust-{uuid.uuid4().hex[:12]}",
            title=TITLE,
            kind="other",
            status="pending",
            content=[ContentToolCallContent(type="content", content=body)],
        )
        request = RequestPermissionRequest(session_id=session_id, tool_call=call, options=OPTIONS)
        try:
            raw = await asking.send(self._conn(), "session/request_permission", request)
            outcome = RequestPermissionResponse.model_validate(raw).outcome
        except Exception as exc:  # a client that cannot answer: not trusted
            log.warning("the trust prompt for %s got no answer: %s", workspace.root, exc)
            return None
        choice = outcome.option_id if outcome.outcome == "selected" else None
        return choice if choice in (ONCE, ALWAYS, REJECT) else None

    async def _trust(
        self, session_id: str, workspace: Workspace, client: AcpClient, *, remember: bool
    ) -> None:
        try:
            trusted = await workspace.trust_folder(None, self._env, remember=remember)
        except AgentError as exc:
            self._answered.pop(workspace.root, None)
            client.post(session_id, helpers.update_agent_message_text(f"Note: not trusted: {exc}"))
            return
        if trusted.unremembered is not None:
            note = f"Note: trusted for this session only; it could not be remembered: {trusted.unremembered}"
            client.post(session_id, helpers.update_agent_message_text(note))
        for problem in trusted.problems:
            client.post(session_id, helpers.update_agent_message_text(f"Note: {problem}"))
