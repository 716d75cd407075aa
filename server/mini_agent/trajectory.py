"""Replay as a pure function: a stored session as the events a live run of it emitted.

Per step: thought, calls, outcomes, answer, usage; then the session's status. That is the live order
but for usage, which a live run reports as soon as the model turn ends and a replay at the end of the
step (as `agent/loadSession` always has). What only mattered while it ran — a call starting, the
running / awaiting-approval statuses, each step's interim status — is left out.
"""

from __future__ import annotations

from .budget import spent_on_context, window_use
from .contracts import TokenUsage
from .events import (
    AgentEvent,
    AnswerChunk,
    StatusChanged,
    ThoughtChunk,
    ToolCallFinished,
    ToolCallPending,
    UsageReported,
)
from .session import AgentSession, StepRecord


def step_events(session_id: str, record: StepRecord, total: TokenUsage) -> list[AgentEvent]:
    """A finished step's lasting events; the stepper's live ones are made by the same constructors."""
    sid, index = session_id, record.index
    events: list[AgentEvent] = []
    streamed = record.thought if record.tool_mode == "json" else record.completion  # as sent live
    if streamed:
        events.append(ThoughtChunk(sid, index, streamed))
    events += [ToolCallPending(sid, index, call) for call in record.tool_calls]
    # a reply in the wrong format gets its note as a bare observation: the model reads it, no call shows it
    events += [ToolCallFinished(sid, index, obs) for obs in record.observations if record.tool_calls]
    if answered(record):
        events.append(AnswerChunk(sid, index, record.final_answer or ""))
    events.append(UsageReported(sid, index, record.usage, total, *window_use(record)))
    return events


def answered(record: StepRecord) -> bool:
    return record.final_answer is not None and not record.tool_calls


def replay(session: AgentSession) -> list[AgentEvent]:
    events: list[AgentEvent] = []
    total = TokenUsage()
    for record in session.steps:
        total = total + record.usage + spent_on_context(record)
        events += step_events(session.session_id, record, total)
    events.append(StatusChanged(session.session_id, len(session.steps), session.status, session.stop_reason))
    return events
