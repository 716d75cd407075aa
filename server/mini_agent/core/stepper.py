"""The stepper: one step of a session — a model turn, the approvals it needs, its tool calls, and the
step's conclusion — with a checkpoint committed before any tool runs, one after each result while other
calls still run, and one committed at the step's end (which also holds its last result).

Every change the world should hear of is emitted as a typed event (`events.py`); the stepper spells no
wire format and does no I/O of its own beyond its ports.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable, Sequence
from dataclasses import asdict, replace

from mini_agent.core import answercheck, changecheck, nudges, repair, windup
from mini_agent.core.approvals import Approvals, pending_for
from mini_agent.core.budget import spent_on_context, too_long, window_use
from mini_agent.core.checkpoints import Checkpoints
from mini_agent.core.context import ContextKeeper
from mini_agent.core.contracts import (
    Expansion,
    LLMError,
    Message,
    Observation,
    ReplyFormats,
    Role,
    SessionStatus,
    StopReason,
    ToolCall,
)
from mini_agent.core.events import (
    LIVE_SINK,
    AgentEvent,
    AnswerChunk,
    EventSink,
    LiveSink,
    LiveUpdate,
    StatusChanged,
    ThoughtChunk,
    ToolCallFinished,
    ToolCallPending,
    ToolCallProgress,
    ToolCallStarted,
    UsageReported,
)
from mini_agent.core.expansion import GRANTED
from mini_agent.core.flight import Flight, StepCancelled
from mini_agent.core.images import left_out_status
from mini_agent.core.ports import LLMClient, ToolExecutor, WindowProbe
from mini_agent.core.session import AgentSession, Decision, StepRecord
from mini_agent.core.trajectory import answered

LOOP_STOPPED = "Not run: the session stopped on a repeated tool call."
INTERRUPTED = (
    "Interrupted: the agent daemon stopped while this tool was running, so its outcome is unknown. "
    "Check the current state before relying on or repeating its effect."
)
CANCELLED_NOTE = "Cancelled by the user before the tool finished."
DECLINED = "The user declined to run this tool call."
NO_ACTION = "The reply had neither a tool call nor an answer."
NOT_SAVED_BEFORE_TOOLS = "the session could not be saved, so no tool was run (step again to retry): {error}"
NOT_SAVED_AFTER = (
    "this step's results could not be saved: {error}; they are kept in this daemon's memory and written "
    "by the next checkpoint that succeeds (step again once the store is usable)"
)


class _NotSaved(Exception):
    """Raised inside a step when the checkpoint that must precede running its tools failed."""


class Stepper:
    def __init__(
        self,
        llm: LLMClient,
        tools: ToolExecutor,
        checkpoints: Checkpoints,
        approvals: Approvals,
        *,
        api_key: Callable[[AgentSession], str | None],
        emit: EventSink | None,
        probe: WindowProbe | None = None,
        formats: ReplyFormats,
    ) -> None:
        self._llm = llm
        self._formats = formats
        self._context = ContextKeeper(llm, probe, self._emit)
        self._tools = tools
        self._checkpoints = checkpoints
        self._approvals = approvals
        self._api_key = api_key
        self._sink = emit

    async def step(self, session: AgentSession, flight: Flight, wait_for_approval: bool) -> StepRecord:
        started = time.perf_counter()
        try:
            self._set_status(session, SessionStatus.RUNNING)
            record = await self._advance(session, flight, wait_for_approval)
        except StepCancelled:
            record = _cancelled(session)
        except LLMError as exc:
            record = StepRecord(index=len(session.steps), stop_reason=StopReason.ERROR, error=str(exc))
        except _NotSaved as exc:
            error = NOT_SAVED_BEFORE_TOOLS.format(error=exc)
            record = StepRecord(index=len(session.steps) - 1, stop_reason=StopReason.ERROR, error=error)
        record.elapsed_ms += (time.perf_counter() - started) * 1000.0
        return await self._conclude(session, record)

    async def _advance(self, session: AgentSession, flight: Flight, wait: bool) -> StepRecord:
        last = session.steps[-1] if session.steps else None
        if last is not None and last.open_calls():
            record = last
        else:
            if windup.spent(session):
                session.finish(StopReason.MAX_TURN_REQUESTS)
                return StepRecord(index=len(session.steps), stop_reason=StopReason.MAX_TURN_REQUESTS)
            record = await self._model_turn(session, flight)
            if record.stop_reason is not None or not record.tool_calls:
                return record
        await self._resolve_calls(session, record, flight, wait)
        return record

    async def _model_turn(self, session: AgentSession, flight: Flight) -> StepRecord:
        sid, index = session.session_id, len(session.steps)
        sent_at, sent = time.time(), time.perf_counter()
        first_chunk: list[float] = []

        def on_text(delta: str) -> None:
            if not first_chunk:
                first_chunk.append((time.perf_counter() - sent) * 1000.0)
            self._emit(ThoughtChunk(sid, index, delta))

        def on_retry(message: str) -> None:
            self._emit(StatusChanged(sid, index, session.status, message=message))

        llm_config = replace(session.config.llm, api_key=self._api_key(session))
        last = session.steps[-1] if len(session.steps) > session.turn_start else None
        turn_mode = last.tool_mode or None if last is not None else None
        answer_with = answercheck.asked_words(last) if last is not None else ()
        turn = session.steps[session.turn_start :]
        hints = session.config.llm.harness.repair_hints
        task = answercheck.current_task(session.messages)
        leave_out = repair.pinned(turn, self._tools.get, task) if hints else {}
        rest = repair.resting(turn) if hints else ()
        only = repair.grounded(turn, task) if session.config.llm.harness.grounded_values else {}
        answer_only = (
            session.config.llm.harness.last_step
            and windup.is_last(session)
            and not (last is not None and changecheck.checked([last]))  # it was told to make a change
        )
        for force in (False, True):  # a refusal for length gets one compaction and one retry
            request = await flight.race(self._context.prepare(session, index, llm_config, force=force))
            reply = self._llm.generate(
                request.messages,
                request.tools,
                request.config,
                on_text,
                on_retry=on_retry,
                turn_mode=turn_mode,
                answer_with=answer_with,
                leave_out=leave_out,
                rest=rest,
                answer_only=answer_only,
                only=only,
            )
            try:
                response = await flight.race(reply)
                break
            except LLMError as exc:
                if not exc.context_overflow:
                    raise
                self._context.learn(llm_config, exc)
        else:
            why = too_long(request.window, request.use.tokens)
            return StepRecord(index, stop_reason=StopReason.MAX_TOKENS, error=why)
        calls, model_ids = _keyed(session, index, response.tool_calls)
        record = StepRecord(
            index=index,
            thought=response.thought,
            completion=response.content,
            tool_calls=calls,
            final_answer=response.final_answer,
            usage=response.usage,
            tool_mode=response.tool_mode,
            model_ids=model_ids,
            context=request.use,
            compaction=request.compaction,
            started_at=sent_at,
            model_ms=(time.perf_counter() - sent) * 1000.0,
            first_chunk_ms=first_chunk[0] if first_chunk else None,
            finish_reason=response.finish_reason,
        )
        session.steps.append(record)
        session.messages.append(Message(Role.ASSISTANT, response.content, tool_calls=response.tool_calls))
        session.usage = session.usage + response.usage + spent_on_context(record)
        self._emit(UsageReported(sid, index, record.usage, session.usage, *window_use(record)))
        if answered(record) and response.refusal is None and self._second_look(session, record):
            pass  # the answer was held back: the model gets the task again, and one more turn
        elif answered(record):
            self._emit(AnswerChunk(sid, index, record.final_answer or ""))
            reason = StopReason.END_TURN if response.refusal is None else StopReason.REFUSAL
            record.stop_reason = reason
            session.finish(reason, record.final_answer)
        elif response.format_error is not None or not response.tool_calls:
            error = response.format_error or NO_ACTION
            observation = Observation(f"format-{index}", "", error, is_error=True)
            record.observations.append(observation)
            session.messages.append(Message(Role.TOOL, error))
        else:
            for call in record.tool_calls:
                self._emit(ToolCallPending(sid, index, call))
            for loop_note in nudges.loop_notes(session, record, self._finish(record), self._tools.get):
                self._observe(session, record, loop_note)
        # no checkpoint here: the next one (before any tool runs, or the step's end) follows without an await
        return record

    async def _resolve_calls(
        self, session: AgentSession, record: StepRecord, flight: Flight, wait: bool
    ) -> None:
        if record.stop_reason is StopReason.LOOP_DETECTED:
            self._fill_missing(session, record, LOOP_STOPPED)
            return
        for call in record.open_calls():
            if call.id in record.started:
                spec = self._tools.get(call.name)
                if spec is None or not spec.idempotent:
                    self._observe(session, record, note(call, INTERRUPTED))
        calls = record.open_calls()
        if not await self._decisions(session, record, calls, flight, wait):
            return
        runnable: list[ToolCall] = []
        for call in calls:
            pending = pending_for(session, call.id)
            if pending is not None and pending.decision is not None and not pending.decision.allows:
                text = DECLINED + (f" Reason: {pending.reason}" if pending.reason else "")
                self._observe(session, record, note(call, text))
            else:
                runnable.append(call)
        grants = {
            p.call.id: p.expansion for p in session.pending
            if p.step_index == record.index and p.decision is Decision.ALLOW_ONCE_EXPANDED
        }  # fmt: skip
        session.pending = [p for p in session.pending if p.step_index != record.index]
        await self._execute_all(session, record, runnable, flight, grants)

    async def _decisions(
        self, session: AgentSession, record: StepRecord, calls: list[ToolCall], flight: Flight, wait: bool
    ) -> bool:
        """Collect decisions for calls that need one; False while any is still open and we may not wait."""
        if self._approvals.open(session, record.index, calls):
            return True
        self._set_status(session, SessionStatus.AWAITING_APPROVAL)
        self._checkpoints.now(session)
        if not wait:
            return False
        await self._approvals.wait(session, flight)
        self._set_status(session, SessionStatus.RUNNING)
        return True

    async def _execute_all(
        self,
        session: AgentSession,
        record: StepRecord,
        calls: list[ToolCall],
        flight: Flight,
        grants: dict[str, Expansion | None],
    ) -> None:
        """Run the calls (each with the sandbox expansion a person granted it, if any: `GRANTED`)."""
        if not calls:
            return
        ids = {call.id for call in calls}
        record.started.update(ids)
        failure = await self._checkpoints.commit(session)
        if failure is not None:  # unrecorded, a crash would make a run of them look like none
            record.started.difference_update(ids)
            raise _NotSaved(str(failure))

        async def one(call: ToolCall) -> None:
            self._emit(ToolCallStarted(session.session_id, record.index, call.id))
            if self._context.serves(session, call):
                observation = self._context.read(session, record, call)
            else:
                live = LIVE_SINK.set(self._live(session.session_id, record.index, call.id))
                granted = GRANTED.set(grants.get(call.id))
                try:
                    observation = await self._tools.execute(call, session_id=session.session_id)
                finally:
                    GRANTED.reset(granted)
                    LIVE_SINK.reset(live)
                if observation.is_error and session.config.llm.harness.repair_hints:
                    task = answercheck.current_task(session.messages)
                    hint = repair.hint(call, self._tools.get(call.name), task)
                    observation = _with_hint(observation, hint)
            self._observe(session, record, self._context.fit(session, record, observation))

        try:
            await flight.race(one(calls[0]) if len(calls) == 1 else asyncio.gather(*map(one, calls)))
        except StepCancelled:
            self._fill_missing(session, record, CANCELLED_NOTE)
            raise

    def abandon_open_calls(self, session: AgentSession) -> None:
        """A new user turn leaves the last one's unrun calls behind (e.g. cancelled while awaiting
        approval): each gets the cancelled note, so nobody is asked about them again."""
        if session.steps:
            self._fill_missing(session, session.steps[-1], CANCELLED_NOTE)
        session.pending = []

    def _observe(self, session: AgentSession, record: StepRecord, observation: Observation) -> None:
        record.observations.append(observation)
        self._emit(ToolCallFinished(session.session_id, record.index, observation))
        whose = f"{observation.tool_name} returned"
        self._told(session, record, left_out_status(record.tool_mode, len(observation.images), whose))
        if not record.open_calls():
            order = [call.id for call in record.tool_calls]
            record.observations.sort(key=lambda obs: order.index(obs.call_id))
            session.messages += [
                Message(
                    Role.TOOL,
                    obs.output if obs.shown is None else obs.shown,
                    tool_call_id=record.model_ids.get(obs.call_id, obs.call_id),
                    name=obs.tool_name,
                    images=obs.images,
                )
                for obs in record.observations
            ]
        else:
            self._checkpoints.soon(session)  # the last result is saved by the step's end, which follows

    def _fill_missing(self, session: AgentSession, record: StepRecord, text: str) -> None:
        for call in record.open_calls():
            self._observe(session, record, note(call, text))

    async def _conclude(self, session: AgentSession, record: StepRecord) -> StepRecord:
        """End the step: its stop reason, the status, the last checkpoint; returns the step as
        reported (a checkpoint that failed makes it an error, without changing the stored record)."""
        if record.stop_reason is StopReason.LOOP_DETECTED and not session.finished:
            session.finish(StopReason.LOOP_DETECTED)
        self._told(session, record, nudges.last_step(session, record, self._finish(record)))
        if (
            not session.finished
            and record.stop_reason is None
            and windup.spent(session)
        ):
            record.stop_reason = StopReason.MAX_TURN_REQUESTS
            session.finish(StopReason.MAX_TURN_REQUESTS)
        if session.status is SessionStatus.RUNNING:
            session.status = SessionStatus.READY
        if record.stop_reason is StopReason.CANCELLED and session.status is SessionStatus.AWAITING_APPROVAL:
            session.status = SessionStatus.READY
        session.touch()
        failure = await self._checkpoints.commit(session)
        if failure is not None and record.error is None:
            error = NOT_SAVED_AFTER.format(error=failure)
            record = replace(record, stop_reason=StopReason.ERROR, error=error)
        self._emit(
            StatusChanged(session.session_id, record.index, session.status, record.stop_reason, record.error)
        )
        return record

    def _second_look(self, session: AgentSession, record: StepRecord) -> bool:
        """Whether a check held back this step's answer (a claimed change no tool made, then a left-out
        result); it said so to the person."""
        finish = self._finish(record)
        return self._told(
            session, record, nudges.change_look(session, record, finish, self._tools.list_tools())
        ) or self._told(session, record, nudges.another_look(session, record, finish))

    def _told(self, session: AgentSession, record: StepRecord, message: str | None) -> bool:
        """Tell the person `message` as a status entry of this step; whether there was one."""
        if message is not None:
            self._emit(StatusChanged(session.session_id, record.index, session.status, message=message))
        return message is not None

    def _finish(self, record: StepRecord) -> str:
        return self._formats(record.tool_mode).finish

    def _set_status(self, session: AgentSession, status: SessionStatus) -> None:
        if session.status is status:
            return
        session.status = status
        self._emit(StatusChanged(session.session_id, len(session.steps), status))

    def _live(self, session_id: str, index: int, call_id: str) -> LiveSink:
        def sink(update: LiveUpdate) -> None:
            self._emit(ToolCallProgress(session_id, index, call_id, **asdict(update)))

        return sink

    def _emit(self, event: AgentEvent) -> None:
        if self._sink is not None:
            self._sink(event)


def _keyed(
    session: AgentSession, index: int, calls: Sequence[ToolCall]
) -> tuple[list[ToolCall], dict[str, str]]:
    """The calls keyed by ids unique in the session, whatever the model sent: an id that is empty,
    repeated in the reply or used earlier gets one derived from the step and position (so a replay
    derives the same), and the model's own id is kept in the returned map for its history."""
    used = {call.id for step in session.steps for call in step.tool_calls}
    keyed: list[ToolCall] = []
    model_ids: dict[str, str] = {}
    for position, call in enumerate(calls):
        key = call.id
        if not key or key in used:
            key = base = f"{call.id or 'call'}~{index}.{position}"
            suffix = 1
            while key in used:
                key, suffix = f"{base}.{suffix}", suffix + 1
            model_ids[key] = call.id
            call = replace(call, id=key)
        used.add(key)
        keyed.append(call)
    return keyed, model_ids


def _cancelled(session: AgentSession) -> StepRecord:
    last = session.steps[-1] if session.steps else None
    if last is not None and last.stop_reason is None and not last.open_calls():
        last.stop_reason = StopReason.CANCELLED
        return last
    return StepRecord(index=len(session.steps), stop_reason=StopReason.CANCELLED)


def _with_hint(observation: Observation, text: str) -> Observation:
    """The error observation with a repair hint after the error's text."""
    return replace(observation, output=observation.output + "\n" + text) if text else observation


def note(call: ToolCall, text: str) -> Observation:
    return Observation(call.id, call.name, text, is_error=True)
