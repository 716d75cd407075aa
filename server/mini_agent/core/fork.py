"""A fork: a new session whose history is another's up to a chosen step, copied, not replayed.

What is copied: the task, the configuration (with the changes the user made), the tools the source was
given, the messages and step records up to the end of the chosen step (the whole finished history by
default), and their token usage. What is not: the source's standing decisions (an "allow always" was
given for the session the user saw, not for a copy), its pending approvals, and a step still running
(a fork of a busy session takes the steps that have ended). The fork starts where the chosen step left
off: answered, it is finished and takes a follow-up prompt; cut mid-turn, it is ready and a run goes on
from there. The source is not touched. Pure: no I/O.
"""

from __future__ import annotations

import copy
import time

from mini_agent.core.contracts import Message, Role, SessionStatus, TokenUsage
from mini_agent.core.errors import AgentError
from mini_agent.core.session import AgentSession, StepRecord


class UnknownStep(AgentError, LookupError):
    """A fork asked for a step the session has not finished (or never had)."""

    reason = "unknown_step"

    def __init__(self, session_id: str, step: int, finished: int) -> None:
        have = f"steps 0 to {finished - 1}" if finished else "no finished step"
        super().__init__(
            f"session {session_id!r} has no finished step {step}: it has {have}",
            session_id=session_id,
            step=step,
            finished_steps=finished,
        )


def finished_steps(source: AgentSession, *, busy: bool) -> int:
    """How many of the source's steps a fork may take: all of them, but a step still running (the last
    one, while its session is busy or waiting on an approval)."""
    count = len(source.steps)
    stepping = busy or source.status in (SessionStatus.RUNNING, SessionStatus.AWAITING_APPROVAL)
    if stepping and count and source.steps[-1].stop_reason is None:
        count -= 1
    return count


def fork(source: AgentSession, session_id: str, *, step: int | None, busy: bool) -> AgentSession:
    """The fork of `source` named `session_id`, with its history up to the end of step `step` (None:
    every finished step); `UnknownStep` for a step not finished."""
    finished = finished_steps(source, busy=busy)
    if step is not None and not 0 <= step < finished:
        raise UnknownStep(source.session_id, step, finished)
    at_rest = source.status in (SessionStatus.READY, SessionStatus.FINISHED) and not busy
    whole = step is None and finished == len(source.steps) and at_rest
    keep = finished if step is None else step + 1
    steps = [copy.deepcopy(record) for record in source.steps[:keep]]
    messages = list(source.messages) if whole else _messages_through(source, keep)
    now = time.time()
    forked = AgentSession(
        session_id=session_id,
        task=source.task,
        config=source.config,
        tools=list(source.tools),
        messages=messages,
        steps=steps,
        usage=sum((record.usage for record in steps), TokenUsage()),
        created_at=now,
        updated_at=now,
    )
    if whole:
        forked.status, forked.stop_reason = source.status, source.stop_reason
        forked.final_answer = source.final_answer
    else:
        _settle(forked, steps[-1] if steps else None)
    return forked


def _messages_through(source: AgentSession, keep: int) -> list[Message]:
    """The messages up to the end of the source's first `keep` steps: each step holds one assistant
    message, and what follows it up to the next (its results, notes) is its own; a user turn begun
    after the last kept step is not."""
    seen = 0
    end = len(source.messages)
    for index, message in enumerate(source.messages):
        if message.role is Role.ASSISTANT:
            if seen == keep:
                end = index
                break
            seen += 1
    kept = source.messages[:end]
    while keep and kept and kept[-1].role is Role.USER:
        kept.pop()
    return kept


def _settle(forked: AgentSession, last: StepRecord | None) -> None:
    """The fork's status from the step it ends on: an ended turn is finished, else it is ready."""
    if last is not None and last.stop_reason is not None:
        forked.status, forked.stop_reason = SessionStatus.FINISHED, last.stop_reason
        forked.final_answer = last.final_answer
    else:
        forked.status = SessionStatus.READY
