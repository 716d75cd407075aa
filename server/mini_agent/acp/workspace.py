"""An ACP session's workspace: the LSP door's composition root (`Daemon`) with its permission prompt
as `session/request_permission`, its client tools as the editor's `fs/*`, and its updates posted as
`session/update`. Imported with the first session, so `initialize` does not wait for the tool and
model adapters to load.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from pathlib import Path
from typing import Any

from acp.connection import Connection
from acp.schema import RequestPermissionResponse, ToolKind

from ..contracts import ToolCall, ToolSpec
from ..daemon import PERMISSION_OPTIONS, Daemon
from ..params import InitOptions
from ..session import AgentSession, Decision
from ..workspace_config import WorkspaceConfig
from . import editor_fs, updates
from .transport import LineTransport

log = logging.getLogger(__name__)


class Workspace(Daemon):
    """One workspace's composition, asking permission over ACP."""

    def __init__(
        self,
        root: Path,
        options: InitOptions,
        config: WorkspaceConfig,
        transport: LineTransport,
        connection: Callable[[], Connection],
    ) -> None:
        super().__init__(root, options, notify=_lsp_only, request=self._editor_tool, config=config)
        self._transport = transport
        self._connection = connection

    def post(self, session_id: str, update: Any) -> None:
        body = update.model_dump(mode="json", by_alias=True, exclude_none=True)
        self._transport.post(
            {
                "jsonrpc": "2.0",
                "method": "session/update",
                "params": {"sessionId": session_id, "update": body},
            }
        )

    def kind_of(self, name: str) -> ToolKind:
        """ACP's kind of one of this workspace's tools, from its spec while its source lists it."""
        return updates.kind_of(name, self.registry.get(name))

    async def request_permission(
        self, session: AgentSession, call: ToolCall, spec: ToolSpec
    ) -> tuple[Decision, str | None] | None:
        """Ask the client; a `cancelled` outcome cancels the turn, a failure leaves the call waiting."""
        tool_call = updates.permission_call(call, self.kind_of(call.name))
        tool_call |= await editor_fs.review(self._connection(), self.root, session.session_id, call)
        params = {"sessionId": session.session_id, "toolCall": tool_call, "options": PERMISSION_OPTIONS}
        try:
            raw = await self._connection().send_request("session/request_permission", params)
            answer = RequestPermissionResponse.model_validate(raw).outcome
        except Exception as exc:  # a client that cannot answer: the call waits, session/cancel still works
            log.warning("session/request_permission got no decision: %s", exc)
            return None
        if answer.outcome == "cancelled":
            self.runtime.cancel(session.session_id)
            return None
        try:
            return Decision(answer.option_id), None
        except ValueError:
            log.warning("session/request_permission: unknown option %r", answer.option_id)
            return None

    async def _editor_tool(self, method: str, params: dict[str, Any]) -> Any:
        """The registry's client tools: here the editor's file tools, run over `fs/*`."""
        if method != "agent/executeTool" or params.get("name") not in (editor_fs.READ, editor_fs.WRITE):
            raise RuntimeError(f"{method}: tools run by an LSP client cannot run in an ACP session")
        conn = self._connection()
        return await editor_fs.run(conn, self.root, params["sessionId"], params["name"], params["arguments"])


def _lsp_only(method: str, params: dict[str, Any]) -> None:
    """The LSP door's notifications (agent/update, agent/toolsChanged) have no ACP reader."""
