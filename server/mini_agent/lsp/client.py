"""The LSP door's side of `app.port.Client`: the application's four needs as `agent/*` messages.

Events go out as `agent/update`, tool lists as `agent/toolsChanged`, permission prompts as the
`agent/requestPermission` request and client tools as `agent/executeTool`; `wire` renders each value.
A tool source's question goes out as `agent/elicit` to a client that announced
`capabilities.experimental.agent.elicitation` (others get a decline), and a link to open as the
standard `window/showDocument` with `external: true` (a client without it is shown the link in a
`window/showMessage`).
"""

from __future__ import annotations

import logging
from collections.abc import Awaitable, Callable
from typing import Any

from mini_agent.app.port import Answer, ToolList
from mini_agent.core.asking import ElicitAction, ElicitAnswer, Elicitation
from mini_agent.core.contracts import ToolCall, ToolSpec
from mini_agent.core.events import AgentEvent
from mini_agent.core.expansion import choice_name, offered
from mini_agent.core.session import AgentSession, Decision
from mini_agent.lsp import wire

log = logging.getLogger(__name__)

Notify = Callable[[str, dict[str, Any]], None]
Request = Callable[[str, Any], Awaitable[Any]]  # params: JSON, or an lsprotocol value for a standard method


Capabilities = Callable[[], Any]  # the client's `initialize` capabilities (lsprotocol's)


class LspClient:
    def __init__(self, notify: Notify, request: Request, capabilities: Capabilities = dict) -> None:
        self._notify = notify
        self._request = request
        self._capabilities = capabilities

    def publish(self, event: AgentEvent) -> None:
        self._notify("agent/update", wire.update_params(event))

    def tools_changed(self, tools: ToolList) -> None:
        self._notify("agent/toolsChanged", {"tools": wire.tool_list(tools)})

    async def ask_permission(self, session: AgentSession, call: ToolCall, spec: ToolSpec) -> Answer | None:
        """Ask the editor; any failure means 'no answer yet' and the decision may come via agent/approve."""
        params: dict[str, Any] = {
            "sessionId": session.session_id,
            "toolCall": wire.tool_call(call),
            "tool": wire.tool_spec(spec),
            "options": wire.PERMISSION_OPTIONS,
        }
        expansion = offered(session, call.id)
        if expansion is not None:  # the sandbox refused this tool's last call: once-options, and the grant
            expanded, name = Decision.ALLOW_ONCE_EXPANDED.value, choice_name(expansion)
            grant = {"optionId": expanded, "name": name, "kind": "allow_once"}
            once = [o for o in wire.PERMISSION_OPTIONS if o["kind"] in ("allow_once", "reject_once")]
            params["options"] = [once[0], grant, *once[1:]]
            params["expansion"] = {"network": expansion.network, "write": expansion.write}
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

    async def elicit(self, request: Elicitation) -> ElicitAnswer:
        """`agent/elicit` to a client that supports it (URL mode only where it says `url`); a decline
        for any other client and for an answer that is not `{action, content?}`."""
        supported = _dig(wire.capabilities(self._capabilities()), "experimental", "agent", "elicitation")
        if not isinstance(supported, dict) or (request.is_url and "url" not in supported):
            return ElicitAnswer.declined()
        params: dict[str, Any] = {
            "sessionId": request.session_id,
            "serverName": request.server,
            "message": request.message,
        }
        if request.is_url:
            params |= {"mode": "url", "url": request.url, "elicitationId": request.elicitation_id}
        else:
            params["requestedSchema"] = request.schema or {"type": "object", "properties": {}}
        try:
            answer = await self._request("agent/elicit", params)
            action = ElicitAction(answer["action"])
            content = answer.get("content") or {}
            if not isinstance(content, dict):
                raise TypeError(f"content is {type(content).__name__}, not an object")
        except Exception as exc:  # an unusable answer is nobody's answer
            log.warning("agent/elicit got no usable answer: %s", exc)
            return ElicitAnswer.declined()
        return ElicitAnswer(action, content if action is ElicitAction.ACCEPT else {})

    async def open_url(self, session_id: str, url: str, purpose: str) -> bool:
        """`window/showDocument {external: true}` where the client supports it; the link is also
        shown in words, so a person whose client cannot open it can open it by hand."""
        opened = False
        if _dig(wire.capabilities(self._capabilities()), "window", "showDocument", "support") is True:
            from lsprotocol import types as lsp  # a standard method: pygls (un)structures its types

            try:
                shown = lsp.ShowDocumentParams(uri=url, external=True)
                answer = await self._request("window/showDocument", shown)
                opened = getattr(answer, "success", None) is True or (
                    isinstance(answer, dict) and answer.get("success") is True
                )
            except Exception as exc:
                log.info("window/showDocument failed: %s", exc)
        if not opened:
            self._notify("window/showMessage", {"type": 3, "message": f"{purpose}: open {url}"})
        return opened


def _dig(value: Any, *keys: str) -> Any:
    for key in keys:
        if not isinstance(value, dict):
            return None
        value = value.get(key)
    return value
