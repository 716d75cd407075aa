"""The composition root: one workspace's runtime, tools, model client and store, wired together.

Built once the client has said who it is (`initialize`); knows nothing of JSON-RPC framing — the
server hands it two callables to reach the client with.
"""

from __future__ import annotations

import logging
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

from . import wire
from .contracts import LLMConfig, ToolCall, ToolSpec
from .llm.client import OpenAICompatibleClient
from .params import InitOptions
from .runtime import AgentRuntime, AgentUpdate
from .session import AgentConfig, AgentSession, Decision
from .tools import ToolRegistry

log = logging.getLogger(__name__)

Notify = Callable[[str, dict[str, Any]], None]
Request = Callable[[str, dict[str, Any]], Awaitable[Any]]

PERMISSION_OPTIONS = [
    {"optionId": "allow_once", "name": "Allow once", "kind": "allow_once"},
    {"optionId": "allow_always", "name": "Always allow this tool in this session", "kind": "allow_always"},
    {"optionId": "reject_once", "name": "Reject", "kind": "reject_once"},
    {"optionId": "reject_always", "name": "Always reject this tool in this session", "kind": "reject_always"},
]


class Daemon:
    def __init__(self, root: Path, options: InitOptions, *, notify: Notify, request: Request) -> None:
        self.root = root
        self.options = options
        self._notify = notify
        self._request = request
        self.llm = OpenAICompatibleClient()
        self.registry = ToolRegistry(
            root,
            timeout_sec=options.tools.timeout_sec,
            max_output_bytes=options.tools.max_output_bytes,
            client_caller=self._call_client_tool,
        )
        defaults = AgentConfig(llm=options.llm.apply(LLMConfig()), max_steps=options.max_steps)
        if options.system_prompt is not None:
            defaults = defaults.with_overrides(system_prompt=options.system_prompt)
        self.runtime = AgentRuntime(self.llm, self.registry, defaults=defaults, events=self._on_update,
                                    approver=self)
        self._watchers: dict[str, list[Callable[[AgentUpdate], None]]] = {}

    def watch(self, session_id: str, callback: Callable[[AgentUpdate], None]) -> Callable[[], None]:
        """Also send a session's updates to `callback` (e.g. a $/progress reporter); returns the undo."""
        callbacks = self._watchers.setdefault(session_id, [])
        callbacks.append(callback)
        return lambda: callbacks.remove(callback)

    def tools_changed(self) -> None:
        self._notify("agent/toolsChanged", {"tools": [wire.tool_spec(spec) for spec in self.registry.list()]})

    def _on_update(self, update: AgentUpdate) -> None:
        self._notify("agent/update", {"sessionId": update.session_id, "step": update.step, "update": update.update})
        for callback in list(self._watchers.get(update.session_id, ())):
            callback(update)

    async def request_permission(
        self, session: AgentSession, call: ToolCall, spec: ToolSpec
    ) -> tuple[Decision, str | None] | None:
        """Ask the editor; any failure means 'no answer yet' and the decision may come via agent/approve."""
        params = {
            "sessionId": session.session_id,
            "toolCall": wire.tool_call(call),
            "tool": wire.tool_spec(spec),
            "options": PERMISSION_OPTIONS,
        }
        try:
            answer = await self._request("agent/requestPermission", params)
        except Exception as exc:  # the client may not implement it; agent/approve still works
            log.info("agent/requestPermission got no decision: %s", exc)
            return None
        return _decision_from(answer)

    async def _call_client_tool(self, session_id: str, call: ToolCall) -> Any:
        params = {"sessionId": session_id, "toolCallId": call.id, "name": call.name, "arguments": call.arguments}
        return await self._request("agent/executeTool", params)

    async def aclose(self) -> None:
        await self.registry.aclose()
        await self.llm.aclose()


def _decision_from(answer: Any) -> tuple[Decision, str | None] | None:
    """Accept `{decision, reason?}` and ACP's `{outcome: {outcome: "selected", optionId}}`."""
    if not isinstance(answer, dict):
        return None
    outcome = answer.get("outcome")
    choice = outcome.get("optionId") if isinstance(outcome, dict) else answer.get("decision")
    try:
        decision = Decision(choice)
    except ValueError:
        return None
    reason = answer.get("reason")
    return decision, reason if isinstance(reason, str) else None
