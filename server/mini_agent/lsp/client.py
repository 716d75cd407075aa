"""The LSP door's side of `app.port.Client`: the application's four needs as `agent/*` messages.

Events go out as `agent/update`, tool lists as `agent/toolsChanged`, permission prompts as the
`agent/requestPermission` request and client tools as `agent/executeTool`; `wire` renders each value.
"""

from __future__ import annotations

import logging
from collections.abc import Awaitable, Callable
from typing import Any

from mini_agent.app.port import Answer, ToolList
from mini_agent.core.contracts import ToolCall, ToolSpec
from mini_agent.core.events import AgentEvent
from mini_agent.core.session import AgentSession
from mini_agent.lsp import wire

log = logging.getLogger(__name__)

Notify = Callable[[str, dict[str, Any]], None]
Request = Callable[[str, dict[str, Any]], Awaitable[Any]]


class LspClient:
    def __init__(self, notify: Notify, request: Request) -> None:
        self._notify = notify
        self._request = request

    def publish(self, event: AgentEvent) -> None:
        self._notify("agent/update", wire.update_params(event))

    def tools_changed(self, tools: ToolList) -> None:
        self._notify("agent/toolsChanged", {"tools": wire.tool_list(tools)})

    async def ask_permission(self, session: AgentSession, call: ToolCall, spec: ToolSpec) -> Answer | None:
        """Ask the editor; any failure means 'no answer yet' and the decision may come via agent/approve."""
        params = {
            "sessionId": session.session_id,
            "toolCall": wire.tool_call(call),
            "tool": wire.tool_spec(spec),
            "options": wire.PERMISSION_OPTIONS,
        }
        try:
            answer = await self._request("agent/requestPermission", params)
        except Exception as exc:  # the client may not implement it; agent/approve still works
            log.info("agent/requestPermission got no decision: %s", exc)
            return None
        return wire.decision_from(answer)

    async def run_tool(self, session_id: str, call: ToolCall) -> Any:
        params: dict[str, Any] = {"sessionId": session_id, "toolCallId": call.id, "name": call.name}
        params["arguments"] = call.arguments
        return await self._request("agent/executeTool", params)
