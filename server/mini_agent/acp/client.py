"""The ACP door's side of `app.port.Client`: one workspace's events as `session/update`, its permission
prompts as `session/request_permission` (with a write's diff), and its client tools as the editor's
`fs/*`. Every outgoing message is built from the ACP SDK's schema models. It is also `app.port.Scoping`:
the editor's file tools take paths, and a call that reaches outside the workspace is asked every time,
its request showing the resolved path and offering once-options only.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from dataclasses import replace
from pathlib import Path
from typing import TYPE_CHECKING, Any

from acp.connection import Connection
from acp.schema import (
    ClientCapabilities,
    PermissionOption,
    RequestPermissionRequest,
    RequestPermissionResponse,
    SessionNotification,
    ToolKind,
)

from mini_agent.acp import asking, editor_fs, updates
from mini_agent.acp.transport import LineTransport
from mini_agent.app.port import Answer, ToolList
from mini_agent.app.scope import Scope, Target
from mini_agent.core.asking import ElicitAnswer, Elicitation
from mini_agent.core.contracts import ToolCall, ToolSpec
from mini_agent.core.events import AgentEvent, UserTurn
from mini_agent.core.expansion import choice_name, offered
from mini_agent.core.session import AgentSession, Decision

if TYPE_CHECKING:
    from mini_agent.app.workspace import Workspace

log = logging.getLogger(__name__)


class AcpClient:
    """One workspace's client, for the sessions `follows` names (those this connection adopted)."""

    def __init__(
        self,
        root: Path,
        transport: LineTransport,
        connection: Callable[[], Connection],
        follows: Callable[[str], bool],
        capabilities: Callable[[], ClientCapabilities | None] = lambda: None,
    ) -> None:
        self.root = root
        self._capabilities = capabilities  # the client's, from `initialize`
        self._transport = transport
        self._connection = connection
        self._follows = follows
        self.workspace: Workspace | None = None  # set once the workspace is built around this client
        self._decided: dict[str, Target] = {}  # call id -> where its path led when decided

    def post(self, session_id: str, update: Any) -> None:
        notification = SessionNotification(session_id=session_id, update=update)
        body = notification.model_dump(mode="json", by_alias=True, exclude_none=True)
        self._transport.post({"jsonrpc": "2.0", "method": "session/update", "params": body})

    def kind_of(self, name: str) -> ToolKind:
        """ACP's kind of one of this workspace's tools, from its spec while its source lists it."""
        spec = self.workspace.registry.get(name) if self.workspace is not None else None
        return updates.kind_of(name, spec)

    # -- app.port.Client ----------------------------------------------------------------------------

    def publish(self, event: AgentEvent) -> None:
        """A live event of an adopted session; the client shows the prompt it sent, so a live
        `UserTurn` is not echoed (session/load replays it)."""
        if isinstance(event, UserTurn) or not self._follows(event.session_id):
            return
        for update in updates.updates_for(event, self.kind_of, self.models):
            self.post(event.session_id, update)

    def models(self) -> list[str]:
        """The models the workspace's model server listed, as far as it was asked (see `acp.agent`)."""
        if self.workspace is None:
            return []
        return self.workspace.known_models(self.workspace.sessions.defaults.llm.base_url)

    def tools_changed(self, tools: ToolList) -> None:
        """ACP has no tool-list notification: a new tool shows when the model calls it."""

    def scope(self, call: ToolCall) -> Scope | None:
        """`app.port.Scoping`: where a call of the editor's file tools reaches, as it is decided (kept
        until it runs: `run_tool` refuses a path that resolves elsewhere by then)."""
        where = editor_fs.scope(self.root, call)
        if where is not None:
            self._decided[call.id] = where
        return where.scope if where is not None else None

    async def ask_permission(self, session: AgentSession, call: ToolCall, spec: ToolSpec) -> Answer | None:
        """Ask the client; a `cancelled` outcome cancels the turn, a failure leaves the call waiting. A
        call outside the workspace is shown by its resolved path, with once-options only, and its
        rejection tells the model why."""
        conn = self._connection()
        where = editor_fs.scope(self.root, call)
        outside = editor_fs.outside_note(self.root, where)
        content, locations = await editor_fs.review(conn, self.root, session.session_id, call)
        tool_call = updates.permission_call(call, self.kind_of(call.name), content, locations)
        if where is not None and outside is not None:
            shown = replace(call, arguments={**call.arguments, "path": str(where.path)})
            tool_call.title = f"{updates.title(shown)} outside the workspace"
        choices = editor_fs.options(where)
        expansion = offered(session, call.id)
        if expansion is not None:  # the sandbox refused this tool's last call: once-options, and the grant
            expanded, name = Decision.ALLOW_ONCE_EXPANDED.value, choice_name(expansion)
            grant = PermissionOption(option_id=expanded, name=name, kind="allow_once")
            choices = [editor_fs.ONCE_OPTIONS[0], grant, *editor_fs.ONCE_OPTIONS[1:]]
        sid = session.session_id
        request = RequestPermissionRequest(session_id=sid, tool_call=tool_call, options=choices)
        try:
            raw = await editor_fs.send(conn, "session/request_permission", request)
            answer = RequestPermissionResponse.model_validate(raw).outcome
        except Exception as exc:  # a client that cannot answer: the call waits, session/cancel still works
            log.warning("session/request_permission got no decision: %s", exc)
            return None
        if answer.outcome == "cancelled":
            if self.workspace is not None:
                self.workspace.sessions.cancel(session.session_id)
            return None
        try:
            decision = Decision(answer.option_id)
        except ValueError:
            log.warning("session/request_permission: unknown option %r", answer.option_id)
            return None
        if not decision.allows:
            self._decided.pop(call.id, None)  # it will not run
        return decision, None if decision.allows else outside

    async def run_tool(self, session_id: str, call: ToolCall) -> Any:
        """The registry's client tools: here the editor's file tools, run over `fs/*`."""
        if call.name not in (editor_fs.READ, editor_fs.WRITE):
            raise RuntimeError(f"{call.name}: tools run by an LSP client cannot run in an ACP session")
        editor_fs.unchanged(self.root, call, self._decided.pop(call.id, None))
        return await editor_fs.run(self._connection(), self.root, session_id, call.name, call.arguments)

    async def elicit(self, request: Elicitation) -> ElicitAnswer:
        """`core.asking.Person`: ACP `elicitation/create` (see `asking`)."""
        return await asking.elicit(self._connection(), self._capabilities(), request)

    async def open_url(self, session_id: str, url: str, purpose: str) -> bool:
        """`core.asking.Person`: a link to open, shown through ACP (see `asking`)."""
        return await asking.open_url(self._connection(), self._capabilities(), session_id, url, purpose)
