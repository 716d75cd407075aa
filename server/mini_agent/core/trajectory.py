"""Replay as a pure function: a stored session as the events a live run of it emitted.

Per step: thought, calls, outcomes, answer, usage; each follow-up's words before the step that
answered them, and each change of the session's configuration before the step it applied from; then
the session's status. That is the live order but for usage, which a live run
reports as soon as the model turn ends and a replay at the end of the step (as `agent/loadSession`
always has). What only mattered while it ran — a call starting, the running / awaiting-approval
statuses, each step's interim status — is left out.
"""

from __future__ import annotations

from mini_agent.core.budget import spent_on_context, window_use
from mini_agent.core.contracts import ReplyFormats, Role, TokenUsage, plain_replies
from mini_agent.core.events import (
    AgentEvent,
    AnswerChunk,
    ConfigChanged,
    StatusChanged,
    ThoughtChunk,
    ToolCallFinished,
    ToolCallPending,
    UsageReported,
    UserTurn,
)
from mini_agent.core.session import AgentSession, StepRecord


def step_events(
    session_id: str, record: StepRecord, total: TokenUsage, formats: ReplyFormats = plain_replies
) -> list[AgentEvent]:
    """A finished step's lasting events; the stepper's live ones are made by the same constructors."""
    sid, index = session_id, record.index
    events: list[AgentEvent] = []
    streamed = record.thought if formats(record.tool_mode).streams_thought_only else record.completion
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


def replay(
    session: AgentSession, *, task: bool = False, formats: ReplyFormats = plain_replies
) -> list[AgentEvent]:
    """The session's lasting events. A follow-up's words are among them, as a live run sent them; the
    task is only with `task` (a live run never sends it: the client gave it; ACP's session/load shows it)."""
    turns = user_turns(session)[0 if task else 1 :]
    events: list[AgentEvent] = []
    total = TokenUsage()
    changes = [ConfigChanged.of(session.session_id, change) for change in session.config.changes]
    for record in session.steps:
        events += [turn for turn in turns if turn.step == record.index]
        events += [change for change in changes if change.step == record.index]
        total = total + record.usage + spent_on_context(record)
        events += step_events(session.session_id, record, total, formats)
    events += [turn for turn in turns if turn.step >= len(session.steps)]
    events += [change for change in changes if change.step >= len(session.steps)]
    events.append(StatusChanged(session.session_id, len(session.steps), session.status, session.stop_reason))
    return events


def user_turns(session: AgentSession) -> list[UserTurn]:
    """Each user message, the task first, at the step that came after it (one assistant message a step)."""
    turns: list[UserTurn] = []
    steps = 0
    for message in session.messages:
        if message.role is Role.USER:
            turns.append(UserTurn(session.session_id, steps, message.content, message.images, message.parts))
        elif message.role is Role.ASSISTANT:
            steps += 1
    return turns
