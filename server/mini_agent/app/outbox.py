"""What a workspace sends its client: the core's events, in order, thought deltas of one loop turn as one.

`Outbox` is the core's event sink for a workspace. One network read often holds many SSE events, so the
thought deltas that arrive together go out as one `ThoughtChunk` at the next turn of the loop; any other
event first flushes them, keeping the order. Each event goes to the door (`Client.publish`) and to the
session's watchers (e.g. a `$/progress` reporter).
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable

from mini_agent.app.port import Client
from mini_agent.core.contracts import SessionStatus
from mini_agent.core.events import AgentEvent, EventSink, StatusChanged, ThoughtChunk


class Outbox:
    """The events of one workspace's sessions on their way to `client`. `tap` sees each as the core
    emits it (tracing); `finished(session_id)` is called when a session's turn ends (its MCP servers
    can go)."""

    def __init__(self, client: Client, *, tap: EventSink | None, finished: Callable[[str], None]) -> None:
        self._client = client
        self._tap = tap
        self._finished = finished
        self._watchers: dict[str, list[Callable[[AgentEvent], None]]] = {}
        self._thought_parts: dict[tuple[str, int], list[str]] = {}

    def watch(self, session_id: str, callback: Callable[[AgentEvent], None]) -> Callable[[], None]:
        """Also send a session's updates to `callback` (e.g. a $/progress reporter); returns the undo."""
        callbacks = self._watchers.setdefault(session_id, [])
        callbacks.append(callback)
        return lambda: callbacks.remove(callback)

    def emit(self, event: AgentEvent) -> None:
        """The core's event sink: thought deltas that arrive together go out as one notification at the
        next turn of the loop; anything else first flushes them, keeping order."""
        if self._tap is not None:
            self._tap(event)
        if isinstance(event, ThoughtChunk):
            if not self._thought_parts:
                asyncio.get_running_loop().call_soon(self._flush_thoughts)
            self._thought_parts.setdefault((event.session_id, event.step), []).append(event.text)
            return
        self._flush_thoughts()
        self.send(event)

    def _flush_thoughts(self) -> None:
        parts, self._thought_parts = self._thought_parts, {}
        for (session_id, step), texts in parts.items():
            self.send(ThoughtChunk(session_id, step, "".join(texts)))

    def send(self, event: AgentEvent) -> None:
        """One event to the client and the session's watchers now (a replayed one, a status of the
        app's own), not through the batching of `emit`."""
        if isinstance(event, StatusChanged) and event.status is SessionStatus.FINISHED:
            self._finished(event.session_id)
        self._client.publish(event)
        for callback in list(self._watchers.get(event.session_id, ())):
            callback(event)
