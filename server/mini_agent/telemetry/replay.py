"""A stored session as the events its live run emitted, each with the time it happened, read from the
store: what `SpanMapper` turns into the same spans as the live run (`sessions export --otlp`).

Each step's events are the trajectory's (`trajectory.step_events`, the constructors the live run used),
framed as the live run frames them: the running status at the request's start, the step's stop reason
at its end. A call is timed from the model's reply for as long as its tool ran.
"""

from __future__ import annotations

from mini_agent.core.contracts import SessionStatus, TokenUsage
from mini_agent.core.events import AgentEvent, StatusChanged, ToolCallFinished, UserTurn
from mini_agent.core.session import AgentSession
from mini_agent.core.trajectory import step_events, user_turns
from mini_agent.telemetry.mapper import SpanMapper, ns


def timed_events(session: AgentSession) -> list[tuple[AgentEvent, int]]:
    """The session's events with their times (ns since the epoch). A step stored without times (an
    older session) starts where the one before ended, the first at the session's creation."""
    sid = session.session_id
    turns = user_turns(session)
    out: list[tuple[AgentEvent, int]] = []
    clock = ns(session.created_at)
    for record in session.steps:
        start = ns(record.started_at) if record.started_at else clock
        out += [(turn, start) for turn in turns if turn.step == record.index]
        out.append((StatusChanged(sid, record.index, SessionStatus.RUNNING), start))
        replied = start + ns(record.model_ms / 1000.0)
        for event in step_events(sid, record, TokenUsage()):
            ran = event.observation.execution_time_ms if isinstance(event, ToolCallFinished) else 0.0
            out.append((event, replied + ns(ran / 1000.0)))
        clock = max(start + ns(record.elapsed_ms / 1000.0), replied)
        status = SessionStatus.FINISHED if record.stop_reason is not None else SessionStatus.READY
        out.append((StatusChanged(sid, record.index, status, record.stop_reason, record.error), clock))
    out += [(turn, clock) for turn in turns if turn.step >= len(session.steps) and turn.step > 0]
    return [(event, at) for event, at in out if not _task_turn(event)]


def _task_turn(event: AgentEvent) -> bool:
    """The task is not a turn's event live (the client gave it); the agent span holds it when captured."""
    return isinstance(event, UserTurn) and event.step == 0


def replay(mapper: SpanMapper, session: AgentSession) -> None:
    """Feed one stored session through `mapper`; a turn it left open ends with its last step."""
    events = timed_events(session)
    for event, at in events:
        mapper.observe(event, at)
    mapper.end_open(max((at for _, at in events), default=ns(session.updated_at)))
