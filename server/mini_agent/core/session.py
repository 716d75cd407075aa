"""A session's configuration, its trajectory and the rules of its status machine.

A session is the unit that gets stepped, checkpointed, paused for approval and resumed. Its
`messages` are the exact history sent to the model (append-only); its `steps` are the same turns
as the editor sees them.
"""

from __future__ import annotations

import time
import uuid
from dataclasses import dataclass, field, replace
from enum import StrEnum

from mini_agent.core.contracts import (
    MAX_STEPS,
    Compaction,
    ContextUse,
    Expansion,
    LLMConfig,
    Message,
    Observation,
    Role,
    SessionStatus,
    StopReason,
    TokenUsage,
    ToolCall,
    ToolSpec,
    user_turn,
)

DEFAULT_SYSTEM_PROMPT = (
    "You are a careful assistant working in the user's code workspace. Use the tools when they give you "
    "facts you do not have; do not guess file contents or numbers. When you know the answer, give it "
    "plainly and briefly."
)


class StoreUnavailable(Exception):
    """What a session store raises when it cannot write or read (disk full, locked, corrupt): the
    runtime keeps the newest state in memory and says so, rather than losing the step."""


class Decision(StrEnum):
    """A person's answer to a permission request (the Agent Client Protocol's option kinds)."""

    ALLOW_ONCE = "allow_once"
    ALLOW_ALWAYS = "allow_always"
    REJECT_ONCE = "reject_once"
    REJECT_ALWAYS = "reject_always"
    # this call, with the sandbox expansion its request offered (ACP kind `allow_once`)
    ALLOW_ONCE_EXPANDED = "allow_once_expanded"

    @property
    def allows(self) -> bool:
        return self in (Decision.ALLOW_ONCE, Decision.ALLOW_ALWAYS, Decision.ALLOW_ONCE_EXPANDED)

    @property
    def standing(self) -> bool:
        return self in (Decision.ALLOW_ALWAYS, Decision.REJECT_ALWAYS)

    @property
    def once(self) -> Decision:
        """The same answer for one call only."""
        if self is Decision.ALLOW_ONCE_EXPANDED:
            return self
        return Decision.ALLOW_ONCE if self.allows else Decision.REJECT_ONCE


class Ask(StrEnum):
    """How a tool call is decided: it runs without asking (`never`); a person is asked unless a
    standing decision of the session answers (`unless_standing`); or a person is asked every time, no
    standing decision covering the call and its answer standing for that call alone (`every_time`)."""

    NEVER = "never"
    UNLESS_STANDING = "unless_standing"
    EVERY_TIME = "every_time"


class PermissionMode(StrEnum):
    """How much of a session's tool calls a person is asked about: every call (`ask_always`, read-only
    ones too), the calls that need approval (`ask_when_needed`), or none (`ask_never`, for a trusted
    folder only). Standing decisions keep answering in the first two; a standing reject still rejects
    in the third, and a call that reaches outside the workspace is asked in every mode."""

    ASK_ALWAYS = "ask_always"
    ASK_WHEN_NEEDED = "ask_when_needed"
    ASK_NEVER = "ask_never"

    @property
    def label(self) -> str:
        """The mode as a picker names it."""
        return _MODE_TITLES[self]

    @property
    def description(self) -> str:
        return _MODE_DESCRIPTIONS[self]


_MODE_TITLES = {
    PermissionMode.ASK_ALWAYS: "Ask before every tool call",
    PermissionMode.ASK_WHEN_NEEDED: "Ask when a tool needs approval",
    PermissionMode.ASK_NEVER: "Never ask (I'm watching)",
}
_MODE_DESCRIPTIONS = {
    PermissionMode.ASK_ALWAYS: "Every tool call waits for your answer, read-only ones too.",
    PermissionMode.ASK_WHEN_NEEDED: "Only the tools marked as needing approval wait for your answer.",
    PermissionMode.ASK_NEVER: "Tool calls run without asking, except those that reach outside the folder.",
}


@dataclass(frozen=True, slots=True)
class ConfigChange:
    """A change of a session's model, tool mode or permission mode, made before step `step` (the
    session's configuration after it, and the session's status then): the history shows it."""

    step: int
    model: str
    tool_mode: str
    permission_mode: PermissionMode
    status: SessionStatus
    message: str


@dataclass(frozen=True, slots=True)
class AgentConfig:
    """What a session runs with; `changes` is how the user changed it while it ran (stored with it)."""

    llm: LLMConfig = field(default_factory=LLMConfig)
    max_steps: int = MAX_STEPS
    loop_threshold: int = 3
    system_prompt: str = DEFAULT_SYSTEM_PROMPT
    permission_mode: PermissionMode = PermissionMode.ASK_WHEN_NEEDED
    changes: tuple[ConfigChange, ...] = ()

    def with_overrides(
        self,
        *,
        llm: LLMConfig | None = None,
        max_steps: int | None = None,
        system_prompt: str | None = None,
        permission_mode: PermissionMode | None = None,
    ) -> AgentConfig:
        return replace(
            self,
            llm=llm or self.llm,
            max_steps=self.max_steps if max_steps is None else max_steps,
            system_prompt=self.system_prompt if system_prompt is None else system_prompt,
            permission_mode=permission_mode or self.permission_mode,
        )


@dataclass(slots=True)
class StepRecord:
    """One model call and the tool calls it asked for."""

    index: int
    thought: str = ""
    completion: str = ""
    tool_calls: list[ToolCall] = field(default_factory=list)
    observations: list[Observation] = field(default_factory=list)
    started: set[str] = field(default_factory=set)  # ids of calls whose tool began to run
    final_answer: str | None = None
    stop_reason: StopReason | None = None
    error: str | None = None
    usage: TokenUsage = field(default_factory=TokenUsage)
    elapsed_ms: float = 0.0
    tool_mode: str = ""
    # The model's own id of each call the daemon keys by another (an id empty, repeated, or used before):
    # decisions and the wire go by `ToolCall.id`, the history sent back to the model by the model's id.
    model_ids: dict[str, str] = field(default_factory=dict)
    context: ContextUse | None = None  # the request's share of the window
    compaction: Compaction | None = None  # set on the step whose request compacted older turns
    # the model request's times (a trace of the session is built from them): when it was sent (seconds
    # since the epoch), how long it took, when its first chunk came (None: not streamed), why it ended
    started_at: float = 0.0
    model_ms: float = 0.0
    first_chunk_ms: float | None = None
    finish_reason: str | None = None

    def result_of(self, call_id: str) -> Observation | None:
        return next((obs for obs in self.observations if obs.call_id == call_id), None)

    def open_calls(self) -> list[ToolCall]:
        """The calls asked for whose result has not come."""
        return [call for call in self.tool_calls if self.result_of(call.id) is None]


@dataclass(slots=True)
class PendingApproval:
    """A tool call held back until a person decides on it."""

    call: ToolCall
    step_index: int
    decision: Decision | None = None
    reason: str | None = None
    every_time: bool = False  # `Ask.EVERY_TIME`: no standing decision answers it, nor does its answer stand
    expansion: Expansion | None = None  # offered with the request: the sandbox refused the tool's last call


@dataclass(slots=True)
class AgentSession:
    session_id: str
    task: str
    config: AgentConfig
    tools: list[ToolSpec]
    messages: list[Message] = field(default_factory=list)
    steps: list[StepRecord] = field(default_factory=list)
    status: SessionStatus = SessionStatus.READY
    stop_reason: StopReason | None = None
    final_answer: str | None = None
    usage: TokenUsage = field(default_factory=TokenUsage)
    standing_decisions: dict[str, Decision] = field(default_factory=dict)
    pending: list[PendingApproval] = field(default_factory=list)
    created_at: float = field(default_factory=time.time)
    updated_at: float = field(default_factory=time.time)

    @property
    def finished(self) -> bool:
        return self.status is SessionStatus.FINISHED

    def finish(self, reason: StopReason, answer: str | None = None) -> None:
        self.status = SessionStatus.FINISHED
        self.stop_reason = reason
        if answer is not None:
            self.final_answer = answer
        self.touch()

    def touch(self) -> None:
        self.updated_at = time.time()

    @property
    def turn_start(self) -> int:
        """Index of the first step of the current user turn: the step budget is per turn, so a
        follow-up prompt gets a fresh one. Each step holds exactly one assistant message."""
        return sum(1 for m in self.messages[: user_turn(self.messages)] if m.role is Role.ASSISTANT)


def new_session_id() -> str:
    return f"sess_{uuid.uuid4().hex[:12]}"


@dataclass(frozen=True, slots=True)
class SessionRow:
    """A session as a listing shows it: the header without history."""

    session_id: str
    task: str
    status: SessionStatus
    stop_reason: StopReason | None
    final_answer: str | None
    step_count: int
    usage: TokenUsage
    created_at: float
    updated_at: float

    @classmethod
    def of(cls, session: AgentSession) -> SessionRow:
        """The row a session held in memory would have."""
        return cls(
            session.session_id,
            session.task,
            session.status,
            session.stop_reason,
            session.final_answer,
            len(session.steps),
            session.usage,
            session.created_at,
            session.updated_at,
        )


SessionPage = tuple[list[SessionRow], int]  # a page of rows and the total the listing holds
