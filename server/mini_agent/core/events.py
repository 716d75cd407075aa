"""What the agent core tells the world: typed domain events, the runtime's only output.

Each front door maps these to its own wire format (the LSP door in `wire.update_body`); the core never
spells a wire key. Replaying a stored session (`trajectory.replay`) builds the same event types the live
path emits, so an editor that opens a session late sees what it would have seen live.
"""

from __future__ import annotations

from collections.abc import Callable
from contextvars import ContextVar
from dataclasses import dataclass

from mini_agent.core.contracts import (
    Image,
    Observation,
    Part,
    SessionStatus,
    StopReason,
    TokenUsage,
    ToolCall,
)
from mini_agent.core.session import ConfigChange, PermissionMode


@dataclass(frozen=True, slots=True)
class Event:
    """Where an event belongs: a session, and the index of the step it is about."""

    session_id: str
    step: int


@dataclass(frozen=True, slots=True)
class UserTurn(Event):
    """The user's words of a turn, appended to the history; `step` is the one that answers them. Live
    only a follow-up's (the client gave the task); a replay has the task's on request."""

    text: str
    images: tuple[Image, ...] = ()
    parts: tuple[Part, ...] = ()  # the turn as the person gave it, when more than words then images


@dataclass(frozen=True, slots=True)
class ThoughtChunk(Event):
    """Model text as it streams (deltas); the whole completion when replayed."""

    text: str


@dataclass(frozen=True, slots=True)
class AnswerChunk(Event):
    text: str


@dataclass(frozen=True, slots=True)
class ToolCallPending(Event):
    """The model asked for a call; it has not run (it may wait for approval, or never run)."""

    call: ToolCall


@dataclass(frozen=True, slots=True)
class ToolCallStarted(Event):
    call_id: str


@dataclass(frozen=True, slots=True)
class ToolCallProgress(Event):
    """Live output of a running call, for the person watching (never stored, never replayed, never
    shown to the model): `text` printed since the last one (may be empty), `shown` all of it so far,
    the tool's latest progress report (`message`, `fraction` in 0..1). `truncated`: the call's shown
    output reached its cap and `text` ends with the summary of what was left out."""

    call_id: str
    text: str = ""
    message: str | None = None
    fraction: float | None = None
    truncated: bool = False
    shown: str = ""


@dataclass(frozen=True, slots=True)
class ToolCallFinished(Event):
    """A call's outcome: the tool's result, or a note standing in for it (declined, loop, cancelled)."""

    observation: Observation


@dataclass(frozen=True, slots=True)
class UsageReported(Event):
    """Tokens of one model turn, the session's running total after it, and the model's window: how
    much of it the request and reply took (`used`) of its `size` (0 when not known)."""

    usage: TokenUsage
    total: TokenUsage
    used: int = 0
    size: int = 0


@dataclass(frozen=True, slots=True)
class StatusChanged(Event):
    status: SessionStatus
    stop_reason: StopReason | None = None
    message: str | None = None


@dataclass(frozen=True, slots=True)
class ConfigChanged(Event):
    """The user changed the session's model, tool mode or permission mode (the configuration after the
    change, the session's status then, and `message` saying what changed): it applies from the next
    model turn, `step`."""

    model: str
    tool_mode: str
    permission_mode: PermissionMode
    status: SessionStatus
    message: str

    @classmethod
    def of(cls, session_id: str, change: ConfigChange) -> ConfigChanged:
        """The one constructor, live and replayed."""
        return cls(
            session_id, change.step, change.model, change.tool_mode, change.permission_mode, change.status,
            change.message,
        )


AgentEvent = (
    UserTurn
    | ThoughtChunk
    | AnswerChunk
    | ToolCallPending
    | ToolCallStarted
    | ToolCallProgress
    | ToolCallFinished
    | UsageReported
    | StatusChanged
    | ConfigChanged
)
EventSink = Callable[[AgentEvent], None]


@dataclass(frozen=True, slots=True)
class LiveUpdate:
    """What a tool source reports about the call it runs, as `ToolCallProgress` carries it."""

    text: str = ""
    message: str | None = None
    fraction: float | None = None
    truncated: bool = False
    shown: str = ""


LiveSink = Callable[[LiveUpdate], None]
# The running call's live sink: set by the stepper around each call, read by the tool sources.
LIVE_SINK: ContextVar[LiveSink | None] = ContextVar("mini_agent_live_sink", default=None)
