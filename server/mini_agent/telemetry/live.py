"""A workspace's tracing while it runs: each of the runtime's events handed to the mapper as it comes,
and each tool call run inside its `execute_tool` span's context, so that an MCP server (the MCP SDK
sends the context in the request's `_meta`) joins the trace. Built only when an endpoint is set.
"""

from __future__ import annotations

import time
from collections.abc import Callable

from mini_agent.core.contracts import Observation, ToolCall, ToolSpec
from mini_agent.core.events import AgentEvent
from mini_agent.core.ports import ToolExecutor
from mini_agent.core.session import AgentSession
from mini_agent.telemetry.config import Settings
from mini_agent.telemetry.mapper import SessionLookup, SpanMapper


class Tracing:
    """Spans of a workspace's sessions (`observe` is its event sink's tap), exported as they end."""

    def __init__(self, settings: Settings, sessions: SessionLookup) -> None:
        from mini_agent.telemetry import otel  # the SDK, loaded only here

        self._provider = otel.provider(settings)
        self.mapper = SpanMapper(otel.SdkSpans(self._provider), sessions, capture=settings.capture)

    def observe(self, event: AgentEvent) -> None:
        self.mapper.observe(event, time.time_ns())

    def parent(self, session_id: str, traceparent: str | None) -> None:
        if traceparent:
            self.mapper.parent(session_id, traceparent)

    def tools(self, inner: ToolExecutor) -> ToolExecutor:
        return TracedTools(inner, self.mapper)

    def close(self) -> None:
        """Send what is batched, then stop."""
        self._provider.shutdown()


class TracedTools:
    """A `ToolExecutor` that runs each call in the context of its `execute_tool` span."""

    def __init__(self, inner: ToolExecutor, mapper: SpanMapper) -> None:
        self._inner = inner
        self._mapper = mapper

    def list_tools(self) -> list[ToolSpec]:
        return self._inner.list_tools()

    def get(self, name: str) -> ToolSpec | None:
        return self._inner.get(name)

    async def execute(self, call: ToolCall, *, session_id: str) -> Observation:
        span = self._mapper.tool_span(session_id, call.id)
        if span is None:
            return await self._inner.execute(call, session_id=session_id)
        with span.current():
            return await self._inner.execute(call, session_id=session_id)


def lookup(get: Callable[[str], AgentSession]) -> SessionLookup:
    """A runtime's `get` as a lookup that answers None for a session it does not hold."""

    def find(session_id: str) -> AgentSession | None:
        try:
            return get(session_id)
        except Exception:  # an unknown session: nothing to trace
            return None

    return find
