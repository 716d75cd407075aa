"""The one interface a door implements for the application layer: how `app` reaches the client.

Whatever the protocol: ask a person about a tool call, run a tool the client owns, say that the tool
list changed, publish one of the core's typed events, and (`core.asking.Person`) put a tool source's
question or link before the person. The LSP door renders these as
`agent/*` messages, the ACP door as `session/*` ones; `app` never spells either.

A door whose own tools name paths also says where a call of them reaches (`Scoping`): the workspace
decides such a call by its scope (`scope.ask_for`).

`RecordingClient` is the fake that ships beside the seam: it answers permission prompts from a queue,
runs client tools with a function, answers elicitations from a queue (declining once it runs out),
opens no links, and keeps what it was told, for tests of `app` without a door.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from typing import Any, Protocol, runtime_checkable

from mini_agent.app.scope import Scope
from mini_agent.core.asking import ElicitAnswer, Elicitation, Person
from mini_agent.core.contracts import ToolCall, ToolSpec
from mini_agent.core.events import AgentEvent
from mini_agent.core.session import AgentSession, Decision


@dataclass(frozen=True, slots=True)
class HeldRegistration:
    """A stored tool registration not imported (the workspace is not trusted yet). The record may come
    from a hostile store: every field is read defensively, and `record` is kept as it was to save back."""

    name: str
    description: str
    path: str
    function: str
    requires_approval: bool
    client: bool
    record: dict[str, Any] = field(compare=False, repr=False)

    @classmethod
    def of(cls, record: dict[str, Any]) -> HeldRegistration:
        path, function = str(record.get("path") or ""), record.get("function")
        return cls(
            name=str(record.get("name") or function or path or "unnamed"),
            description=str(record.get("description") or f"from {path}; {HELD_NOTE}"),
            path=path,
            function=str(function or ""),
            requires_approval=bool(record.get("requires_approval")),
            client=bool(record.get("client")),
            record=record,
        )


@dataclass(frozen=True, slots=True)
class ToolList:
    """The workspace's tools: those loaded, then the stored registrations held back."""

    loaded: list[ToolSpec]
    held: list[HeldRegistration]


Answer = tuple[Decision, str | None]
HELD_NOTE = "loaded once the workspace is trusted"


class Client(Person, Protocol):
    """What a door does for the application layer."""

    async def ask_permission(self, session: AgentSession, call: ToolCall, spec: ToolSpec) -> Answer | None:
        """The person's decision on `call`; None when nobody answered (it may come later)."""
        ...

    async def run_tool(self, session_id: str, call: ToolCall) -> Any:
        """Run a tool the client registered itself; its result, or an exception the model is shown."""
        ...

    def tools_changed(self, tools: ToolList) -> None:
        """The tool list changed (registered, removed, reloaded, trusted, or an MCP server's list)."""
        ...

    def publish(self, event: AgentEvent) -> None:
        """One of the core's events, live or replayed, in order."""
        ...


@runtime_checkable
class Scoping(Protocol):
    """A client whose own tools take paths the model picks (ACP's editor file tools)."""

    def scope(self, call: ToolCall) -> Scope | None:
        """Where `call` reaches, resolved against the session's folder; None for a call of a tool that
        names no path."""
        ...


@dataclass
class RecordingClient:
    """A `Client` that needs no protocol: answers from `answers` (None once it runs out), client tools
    by `tool`, and keeps every event and tool list it was given."""

    answers: list[Answer | None] = field(default_factory=list)
    tool: Callable[[str, ToolCall], Awaitable[Any]] | None = None
    events: list[AgentEvent] = field(default_factory=list)
    tool_lists: list[ToolList] = field(default_factory=list)
    asked: list[ToolCall] = field(default_factory=list)
    elicit_answers: list[ElicitAnswer] = field(default_factory=list)
    elicited: list[Elicitation] = field(default_factory=list)
    links: list[tuple[str, str, str]] = field(default_factory=list)  # (session id, url, purpose)

    async def ask_permission(self, session: AgentSession, call: ToolCall, spec: ToolSpec) -> Answer | None:
        self.asked.append(call)
        return self.answers.pop(0) if self.answers else None

    async def run_tool(self, session_id: str, call: ToolCall) -> Any:
        if self.tool is None:
            raise RuntimeError(f"{call.name}: this client runs no tools")
        return await self.tool(session_id, call)

    def tools_changed(self, tools: ToolList) -> None:
        self.tool_lists.append(tools)

    def publish(self, event: AgentEvent) -> None:
        self.events.append(event)

    async def elicit(self, request: Elicitation) -> ElicitAnswer:
        self.elicited.append(request)
        return self.elicit_answers.pop(0) if self.elicit_answers else ElicitAnswer.declined()

    async def open_url(self, session_id: str, url: str, purpose: str) -> bool:
        self.links.append((session_id, url, purpose))
        return False
