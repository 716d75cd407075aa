"""The agent loop: one model call plus the tool calls it asked for, repeated until a stop reason.

`AgentRuntime` owns no I/O. The model server, the tools, the session store, the editor's permission
prompts and the event stream are ports (`typing.Protocol`s) handed in by whoever builds it — the daemon
in `server.py`, or a test with fakes.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import time
import uuid
from collections.abc import AsyncIterator, Awaitable, Callable, Coroutine, Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import Any, Protocol, TypeVar

from . import wire
from .contracts import (
    LLMConfig,
    LLMError,
    LLMResponse,
    Message,
    Observation,
    Role,
    SessionStatus,
    StopReason,
    TextSink,
    ToolCall,
    ToolSpec,
)
from .session import (
    AgentConfig,
    AgentSession,
    Decision,
    PendingApproval,
    StepRecord,
    StoreUnavailable,
    new_session_id,
)

T = TypeVar("T")


class LLMClient(Protocol):
    async def generate(
        self,
        messages: Sequence[Message],
        tools: Sequence[ToolSpec],
        config: LLMConfig,
        on_text: TextSink | None = None,
    ) -> LLMResponse: ...


class ToolExecutor(Protocol):
    def list(self) -> list[ToolSpec]: ...

    def get(self, name: str) -> ToolSpec | None: ...

    async def execute(self, call: ToolCall, *, session_id: str) -> Observation: ...


class SessionStore(Protocol):
    """Durable sessions. `save` is called at every checkpoint and must write only what changed; a
    lease keeps two daemons from stepping one session at once. A store that cannot do its job raises
    `StoreUnavailable`."""

    def save(self, session: AgentSession) -> None: ...

    def load(self, session_id: str) -> AgentSession | None: ...

    def is_current(self, session: AgentSession) -> bool: ...

    def acquire(self, session_id: str, owner: str) -> bool: ...

    def release(self, session_id: str, owner: str) -> bool: ...


class Approver(Protocol):
    """Asks a person about a tool call; None when nobody answered (the decision may come later)."""

    async def request_permission(
        self, session: AgentSession, call: ToolCall, spec: ToolSpec
    ) -> tuple[Decision, str | None] | None: ...


@dataclass(frozen=True, slots=True)
class AgentUpdate:
    """One `agent/update` notification: `update` is the wire payload, `kind` first."""

    session_id: str
    step: int
    update: dict[str, Any]


EventSink = Callable[[AgentUpdate], None]


class UnknownSession(LookupError):
    def __init__(self, session_id: str) -> None:
        super().__init__(f"unknown session {session_id!r}")
        self.session_id = session_id


class SessionBusy(RuntimeError):
    def __init__(self, session_id: str, where: str = "") -> None:
        super().__init__(f"session {session_id!r} is already stepping{where}; wait for it or cancel it")
        self.session_id = session_id


class SessionFinished(RuntimeError):
    def __init__(self, session: AgentSession) -> None:
        super().__init__(
            f"session {session.session_id!r} is finished (stopReason {session.stop_reason}); start a new one"
        )
        self.session_id = session.session_id


class UnknownToolCall(LookupError):
    pass


class _StepCancelled(Exception):
    """Raised inside a step when its session's cancel event fires."""


class _NotSaved(Exception):
    """Raised inside a step when the checkpoint that must precede running its tools failed."""


@dataclass(slots=True)
class RunSummary:
    session: AgentSession
    last: StepRecord
    steps_run: int
    stop_reason: StopReason | None


@dataclass(slots=True)
class _Flight:
    """Book-keeping for a session that is being stepped right now."""

    cancel: asyncio.Event = field(default_factory=asyncio.Event)
    decided: asyncio.Event = field(default_factory=asyncio.Event)


LOOP_NOTE = (
    "You have called {name} with exactly these arguments {count} times in a row and it was not run again: "
    "the result would not change. Use what you already have, try different arguments or another tool, "
    "or give your Final Answer."
)
INTERRUPTED = (
    "Interrupted: the agent daemon stopped while this tool was running, so its outcome is unknown. "
    "Check the current state before relying on or repeating its effect."
)
CANCELLED_NOTE = "Cancelled by the user before the tool finished."
NOT_SAVED_BEFORE_TOOLS = "the session could not be saved, so no tool was run (step again to retry): {error}"
NOT_SAVED_AFTER = (
    "this step's results could not be saved: {error}; they are kept in this daemon's memory and written "
    "by the next checkpoint that succeeds (step again once the store is usable)"
)
APPROVAL_POLL_SEC = 0.5  # how often a run waiting on a decision looks for one made by another daemon
DECLINED = "The user declined to run this tool call."


class AgentRuntime:
    def __init__(
        self,
        llm: LLMClient,
        tools: ToolExecutor,
        *,
        defaults: AgentConfig | None = None,
        store: SessionStore | None = None,
        events: EventSink | None = None,
        approver: Approver | None = None,
        keys: Mapping[str, str] | None = None,
    ) -> None:
        """`keys` are API keys by the base URL each was configured for: a key is sent to that server
        only, never to whatever server a session (perhaps one from a cloned store) points at."""
        self._llm = llm
        self._tools = tools
        self.defaults = defaults or AgentConfig()
        self._store = store
        self._emit_sink = events
        self._approver = approver
        self._keys = {_server(url): key for url, key in (keys or {}).items()}
        self.owner = uuid.uuid4().hex
        self._sessions: dict[str, AgentSession] = {}
        self._flights: dict[str, _Flight] = {}
        self._waiters: dict[str, asyncio.Event] = {}
        self._own_keys: dict[str, tuple[str, str]] = {}  # session id -> (server, the key it was given)
        self._unsaved: dict[str, StoreUnavailable] = {}  # sessions newer in memory than in the store

    # -- sessions -------------------------------------------------------------------------------

    def start_session(
        self,
        task: str,
        *,
        system_prompt: str | None = None,
        tool_names: Sequence[str] | None = None,
        llm: LLMConfig | None = None,
        max_steps: int | None = None,
    ) -> AgentSession:
        """Snapshot the tools now: the prompt must not change under a running session. An API key in
        `llm` is the session's own: kept in memory for its server, never stored."""
        config = self.defaults.with_overrides(llm=llm, max_steps=max_steps, system_prompt=system_prompt)
        config = config.with_overrides(llm=replace(config.llm, api_key=None))
        tools = self._select_tools(tool_names)
        session = AgentSession(session_id=new_session_id(), task=task, config=config, tools=tools)
        session.messages.append(Message(Role.SYSTEM, config.system_prompt))
        session.messages.append(Message(Role.USER, task))
        self._sessions[session.session_id] = session
        self._checkpoint(session)
        failure = self._unsaved.get(session.session_id)
        if failure is not None:  # nothing has happened yet: refuse rather than keep it in memory only
            self.forget(session.session_id)
            raise failure
        self._bind_key(session, llm)
        return session

    def _bind_key(self, session: AgentSession, llm: LLMConfig | None) -> None:
        if llm is not None and llm.api_key:
            self._own_keys[session.session_id] = (_server(llm.base_url), llm.api_key)

    def _api_key(self, session: AgentSession) -> str | None:
        """The session's own key if it was given for the server the session uses now, else the
        daemon's key for that server, else none."""
        server = _server(session.config.llm.base_url)
        own = self._own_keys.get(session.session_id)
        if own is not None and own[0] == server:
            return own[1]
        return self._keys.get(server)

    def _select_tools(self, names: Sequence[str] | None) -> list[ToolSpec]:
        available = {spec.name: spec for spec in self._tools.list()}
        if names is None:
            return list(available.values())
        unknown = [name for name in names if name not in available]
        if unknown:
            raise UnknownToolCall(f"unknown tools {unknown}; registered tools are {sorted(available)}")
        return [available[name] for name in names]

    def get(self, session_id: str) -> AgentSession:
        """The session's latest state: re-read from the store when another daemon wrote it since
        (unless the store could not take this daemon's newest state: then memory is the latest)."""
        session = self._sessions.get(session_id)
        newest_here = session_id in self._flights or session_id in self._unsaved
        if self._store is not None and not newest_here and (
            session is None or not self._store.is_current(session)
        ):
            loaded = self._store.load(session_id)
            if loaded is not None:
                session = self._sessions[session_id] = loaded
        if session is None:
            raise UnknownSession(session_id)
        return session

    def resume(self, session_id: str, *, llm: LLMConfig | None = None) -> AgentSession:
        """Take a stored session up here (e.g. after a crash), optionally with new model settings;
        stepping stays agent/step or agent/run."""
        session = self.get(session_id)
        if session.finished or session_id in self._flights:
            return session
        session = self._take(session_id)
        if session.status is SessionStatus.RUNNING:  # its daemon died mid-step; the next step goes on from it
            session.status = SessionStatus.READY
        if llm is not None:
            session.config = session.config.with_overrides(llm=replace(llm, api_key=None))
            self._bind_key(session, llm)
        self._checkpoint(session)
        self._release(session_id)
        return session

    def sessions(self, *, status: str | None = None) -> list[AgentSession]:
        """Sessions this daemon holds, newest first."""
        held = sorted(self._sessions.values(), key=lambda s: s.updated_at, reverse=True)
        return [s for s in held if status is None or s.status.value == status]

    def forget(self, session_id: str) -> None:
        self._sessions.pop(session_id, None)
        self._own_keys.pop(session_id, None)
        self._unsaved.pop(session_id, None)

    def is_unsaved(self, session_id: str) -> bool:
        """True while the store lacks this daemon's newest state of the session (it failed to write)."""
        return session_id in self._unsaved

    def is_busy(self, session_id: str) -> bool:
        return session_id in self._flights

    # -- control --------------------------------------------------------------------------------

    def cancel(self, session_id: str) -> bool:
        """Ask the in-flight step of a session to stop; False when nothing was running."""
        flight = self._flights.get(session_id)
        if flight is None:
            return False
        flight.cancel.set()
        return True

    def approve(self, session_id: str, call_id: str, decision: Decision, reason: str | None = None) -> None:
        session = self.get(session_id)
        for pending in session.pending:
            if pending.call.id == call_id:
                pending.decision, pending.reason = decision, reason
                if decision.standing:
                    session.standing_decisions[pending.call.name] = decision
                self._checkpoint(session)
                waiter = self._waiters.get(session_id)
                if waiter is not None:
                    waiter.set()
                return
        raise UnknownToolCall(f"session {session_id!r} has no tool call {call_id!r} awaiting approval")

    # -- stepping -------------------------------------------------------------------------------

    async def run(self, session_id: str, *, max_steps: int | None = None) -> RunSummary:
        """Step until a stop reason; waits for approvals rather than returning on them. The lease is
        held for the whole run, and a cancel ends the run."""
        steps_run = 0
        async with self._leased(session_id) as (session, flight):
            while True:
                record = await self._step(session, flight, wait_for_approval=True)
                steps_run += 1
                if record.stop_reason is not None:
                    return RunSummary(session, record, steps_run, record.stop_reason)
                if max_steps is not None and steps_run >= max_steps:
                    return RunSummary(session, record, steps_run, StopReason.MAX_TURN_REQUESTS)

    async def step(self, session_id: str, *, wait_for_approval: bool = False) -> StepRecord:
        async with self._leased(session_id) as (session, flight):
            return await self._step(session, flight, wait_for_approval)

    @contextlib.asynccontextmanager
    async def _leased(self, session_id: str) -> AsyncIterator[tuple[AgentSession, _Flight]]:
        """This daemon steps the session, and no other: a flight here, a lease in the store."""
        if session_id in self._flights:
            raise SessionBusy(session_id)
        session = self._take(session_id)
        self._flights[session_id] = flight = _Flight()
        try:
            yield session, flight
        finally:
            del self._flights[session_id]
            self._release(session_id)

    def _release(self, session_id: str) -> None:
        """A lease that cannot be released (the store failed) must not hide the step's outcome; it
        is ours, so it lapses with this process and our next acquire takes it anyway."""
        if self._store is not None:
            with contextlib.suppress(StoreUnavailable):
                self._store.release(session_id, self.owner)

    async def _step(self, session: AgentSession, flight: _Flight, wait_for_approval: bool) -> StepRecord:
        started = time.perf_counter()
        try:
            self._set_status(session, SessionStatus.RUNNING)
            record = await self._advance(session, flight, wait_for_approval)
        except _StepCancelled:
            record = self._cancelled(session)
        except LLMError as exc:
            record = StepRecord(index=len(session.steps), stop_reason=StopReason.ERROR, error=str(exc))
        except _NotSaved as exc:
            error = NOT_SAVED_BEFORE_TOOLS.format(error=exc)
            record = StepRecord(index=len(session.steps) - 1, stop_reason=StopReason.ERROR, error=error)
        record.elapsed_ms += (time.perf_counter() - started) * 1000.0
        return self._conclude(session, record)

    def _take(self, session_id: str) -> AgentSession:
        """Lease the session, then read its latest state: another daemon may have stepped it meanwhile."""
        self.get(session_id)  # an unknown session gets no lease row
        if self._store is not None and not self._store.acquire(session_id, self.owner):
            raise SessionBusy(session_id, " in another daemon")
        session = self.get(session_id)
        if session.finished:
            self._release(session_id)
            raise SessionFinished(session)
        return session

    async def _advance(self, session: AgentSession, flight: _Flight, wait: bool) -> StepRecord:
        last = session.steps[-1] if session.steps else None
        if last is not None and _unfinished(last):
            record = last
        else:
            if len(session.steps) >= session.config.max_steps:
                record = StepRecord(index=len(session.steps), stop_reason=StopReason.MAX_TURN_REQUESTS)
                session.finish(StopReason.MAX_TURN_REQUESTS)
                return record
            record = await self._model_turn(session, flight)
            if record.stop_reason is not None or not record.tool_calls:
                return record
        await self._resolve_calls(session, record, flight, wait)
        return record

    async def _model_turn(self, session: AgentSession, flight: _Flight) -> StepRecord:
        index = len(session.steps)

        def on_text(delta: str) -> None:
            self._emit(session, index, {"kind": "agent_thought_chunk", "text": delta})

        llm_config = replace(session.config.llm, api_key=self._api_key(session))
        response = await self._race(
            flight, self._llm.generate(session.messages, session.tools, llm_config, on_text)
        )
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
        )
        session.steps.append(record)
        session.messages.append(Message(Role.ASSISTANT, response.content, tool_calls=response.tool_calls))
        session.usage = session.usage + response.usage
        self._emit(
            session, index, {"kind": "usage_update", **wire.usage_update(response.usage, session.usage)}
        )
        if response.final_answer is not None and not response.tool_calls:
            self._emit(session, index, {"kind": "agent_message_chunk", "text": response.final_answer})
            record.stop_reason = StopReason.END_TURN
            session.finish(StopReason.END_TURN, response.final_answer)
        elif response.format_error is not None or not response.tool_calls:
            error = response.format_error or "The reply had neither a tool call nor an answer."
            observation = Observation(f"format-{index}", "", error, is_error=True)
            record.observations.append(observation)
            session.messages.append(Message(Role.TOOL, error))
        else:
            for call in record.tool_calls:
                self._emit(session, index, {"kind": "tool_call", **wire.tool_call_event(call, "pending")})
            self._check_loops(session, record)
        # no checkpoint here: the next one (before any tool runs, or the step's end) follows without an await
        return record

    def _check_loops(self, session: AgentSession, record: StepRecord) -> None:
        """The same call N times in a row gets one note instead of a run; once more ends the session."""
        earlier = [call for step in session.steps[:-1] for call in step.tool_calls]
        threshold = session.config.loop_threshold
        for position, call in enumerate(record.tool_calls):
            key = _canonical(call)
            streak = 1
            for previous in reversed(earlier + record.tool_calls[:position]):
                if _canonical(previous) != key:
                    break
                streak += 1
            if streak > threshold:
                record.stop_reason = StopReason.LOOP_DETECTED
                self._observe(session, record, _note(call, LOOP_NOTE.format(name=call.name, count=streak)))
            elif streak == threshold:
                self._observe(session, record, _note(call, LOOP_NOTE.format(name=call.name, count=streak)))

    async def _resolve_calls(
        self, session: AgentSession, record: StepRecord, flight: _Flight, wait: bool
    ) -> None:
        if record.stop_reason is StopReason.LOOP_DETECTED:
            self._fill_missing(session, record, "Not run: the session stopped on a repeated tool call.")
            return
        open_calls = [call for call in record.tool_calls if _observation_for(record, call.id) is None]
        for call in open_calls:
            if call.id in record.started:
                spec = self._tools.get(call.name)
                if spec is None or not spec.idempotent:
                    self._observe(session, record, _note(call, INTERRUPTED))
        open_calls = [call for call in open_calls if _observation_for(record, call.id) is None]
        if not await self._approvals(session, record, open_calls, flight, wait):
            return
        runnable: list[ToolCall] = []
        for call in open_calls:
            pending = _pending_for(session, call.id)
            if pending is not None and pending.decision is not None and not pending.decision.allows:
                text = DECLINED + (f" Reason: {pending.reason}" if pending.reason else "")
                self._observe(session, record, _note(call, text))
            else:
                runnable.append(call)
        session.pending = [p for p in session.pending if p.step_index != record.index]
        await self._execute_all(session, record, runnable, flight)

    async def _approvals(
        self, session: AgentSession, record: StepRecord, calls: list[ToolCall], flight: _Flight, wait: bool
    ) -> bool:
        """Collect decisions for calls that need one; False while any is still open and we may not wait."""
        for call in calls:
            spec = self._tools.get(call.name)
            if spec is None or not spec.requires_approval or _pending_for(session, call.id) is not None:
                continue
            standing = session.standing_decisions.get(call.name)
            session.pending.append(PendingApproval(call, record.index, standing))
            if standing is None:
                self._ask(session, call, spec)
        if all(p.decision is not None for p in session.pending):
            return True
        self._set_status(session, SessionStatus.AWAITING_APPROVAL)
        self._checkpoint(session)
        if not wait:
            return False
        waiter = self._waiters.setdefault(session.session_id, asyncio.Event())
        while any(p.decision is None for p in session.pending):
            waiter.clear()
            try:
                await self._race(flight, asyncio.wait_for(waiter.wait(), APPROVAL_POLL_SEC))
            except TimeoutError:
                self._adopt_decisions(session)
        self._set_status(session, SessionStatus.RUNNING)
        return True

    def _adopt_decisions(self, session: AgentSession) -> None:
        """Take up decisions another daemon sharing the store recorded (its agent/approve) while this
        one holds the session; only the decisions: everything else here is the newer state."""
        if self._store is None:
            return
        try:
            if self._store.is_current(session):
                return
            stored = self._store.load(session.session_id)
        except StoreUnavailable:
            return  # look again at the next tick
        if stored is None:
            return
        for pending in session.pending:
            theirs = _pending_for(stored, pending.call.id)
            if pending.decision is None and theirs is not None and theirs.decision is not None:
                pending.decision, pending.reason = theirs.decision, theirs.reason
        for name, decision in stored.standing_decisions.items():
            session.standing_decisions.setdefault(name, decision)

    def _ask(self, session: AgentSession, call: ToolCall, spec: ToolSpec) -> None:
        if self._approver is None:
            return
        approver = self._approver

        async def ask() -> None:
            answer = await approver.request_permission(session, call, spec)
            pending = _pending_for(session, call.id)
            if answer is not None and pending is not None and pending.decision is None:
                self.approve(session.session_id, call.id, answer[0], answer[1])

        _spawn(ask())

    async def _execute_all(
        self, session: AgentSession, record: StepRecord, calls: list[ToolCall], flight: _Flight
    ) -> None:
        if not calls:
            return
        ids = {call.id for call in calls}
        record.started.update(ids)
        self._checkpoint(session)
        failure = self._unsaved.get(session.session_id)
        if failure is not None:  # unrecorded, a crash would make a run of them look like none
            record.started.difference_update(ids)
            raise _NotSaved(str(failure))

        async def one(call: ToolCall) -> None:
            self._emit(
                session,
                record.index,
                {"kind": "tool_call_update", "toolCallId": call.id, "status": "in_progress"},
            )
            observation = await self._tools.execute(call, session_id=session.session_id)
            self._observe(session, record, observation)

        try:
            await self._race(flight, asyncio.gather(*(one(call) for call in calls)))
        except _StepCancelled:
            self._fill_missing(session, record, CANCELLED_NOTE)
            raise

    def _observe(self, session: AgentSession, record: StepRecord, observation: Observation) -> None:
        record.observations.append(observation)
        status = "failed" if observation.is_error else "completed"
        self._emit(
            session,
            record.index,
            {
                "kind": "tool_call_update",
                "toolCallId": observation.call_id,
                "status": status,
                "observation": wire.observation(observation),
            },
        )
        if all(_observation_for(record, call.id) is not None for call in record.tool_calls):
            order = [call.id for call in record.tool_calls]
            record.observations.sort(key=lambda obs: order.index(obs.call_id))
            for obs in record.observations:
                model_id = record.model_ids.get(obs.call_id, obs.call_id)
                message = Message(Role.TOOL, obs.output, tool_call_id=model_id, name=obs.tool_name)
                session.messages.append(message)
        self._checkpoint(session)

    def _fill_missing(self, session: AgentSession, record: StepRecord, text: str) -> None:
        for call in record.tool_calls:
            if _observation_for(record, call.id) is None:
                self._observe(session, record, _note(call, text))

    def _cancelled(self, session: AgentSession) -> StepRecord:
        last = session.steps[-1] if session.steps else None
        if last is not None and last.stop_reason is None and not _unfinished(last):
            last.stop_reason = StopReason.CANCELLED
            return last
        return StepRecord(index=len(session.steps), stop_reason=StopReason.CANCELLED)

    def _conclude(self, session: AgentSession, record: StepRecord) -> StepRecord:
        """End the step: its stop reason, the status, the last checkpoint; returns the step as
        reported (a checkpoint that failed makes it an error, without changing the stored record)."""
        if record.stop_reason is StopReason.LOOP_DETECTED and not session.finished:
            session.finish(StopReason.LOOP_DETECTED)
        if (
            not session.finished
            and record.stop_reason is None
            and len(session.steps) >= session.config.max_steps
        ):
            record.stop_reason = StopReason.MAX_TURN_REQUESTS
            session.finish(StopReason.MAX_TURN_REQUESTS)
        if session.status is SessionStatus.RUNNING:
            session.status = SessionStatus.READY
        if record.stop_reason is StopReason.CANCELLED and session.status is SessionStatus.AWAITING_APPROVAL:
            session.status = SessionStatus.READY
        session.touch()
        self._checkpoint(session)
        failure = self._unsaved.get(session.session_id)
        if failure is not None and record.error is None:
            error = NOT_SAVED_AFTER.format(error=failure)
            record = replace(record, stop_reason=StopReason.ERROR, error=error)
        update: dict[str, Any] = {"kind": "status", "status": session.status.value}
        if record.stop_reason is not None:
            update["stopReason"] = record.stop_reason.value
        if record.error:
            update["message"] = record.error
        self._emit(session, record.index, update)
        return record

    def replay(self, session_id: str) -> list[AgentUpdate]:
        """The trajectory as the updates a live run would have sent (for an editor that just opened)."""
        session = self.get(session_id)
        updates: list[AgentUpdate] = []
        for record in session.steps:
            bodies: list[dict[str, Any]] = []
            streamed = record.thought if record.tool_mode == "json" else record.completion  # as sent live
            if streamed:
                bodies.append({"kind": "agent_thought_chunk", "text": streamed})
            bodies += [
                {"kind": "tool_call", **wire.tool_call_event(call, "pending")} for call in record.tool_calls
            ]
            bodies += [
                {
                    "kind": "tool_call_update",
                    "toolCallId": obs.call_id,
                    "status": "failed" if obs.is_error else "completed",
                    "observation": wire.observation(obs),
                }
                for obs in record.observations
            ]
            if record.final_answer is not None and not record.tool_calls:
                bodies.append({"kind": "agent_message_chunk", "text": record.final_answer})
            bodies.append({"kind": "usage_update", **wire.usage_update(record.usage, session.usage)})
            updates += [AgentUpdate(session_id, record.index, body) for body in bodies]
        final: dict[str, Any] = {"kind": "status", "status": session.status.value}
        if session.stop_reason is not None:
            final["stopReason"] = session.stop_reason.value
        updates.append(AgentUpdate(session_id, len(session.steps), final))
        return updates

    # -- plumbing -------------------------------------------------------------------------------

    async def _race(self, flight: _Flight, work: Awaitable[T]) -> T:
        """Await `work` unless the session is cancelled first; then stop it and raise _StepCancelled."""
        task: asyncio.Future[T] = asyncio.ensure_future(work)
        stopper: asyncio.Future[Any] = asyncio.ensure_future(flight.cancel.wait())
        try:
            await asyncio.wait((task, stopper), return_when=asyncio.FIRST_COMPLETED)
        finally:
            stopper.cancel()
        if not task.done():
            task.cancel()
            await asyncio.gather(task, return_exceptions=True)
            raise _StepCancelled
        return task.result()

    def _set_status(self, session: AgentSession, status: SessionStatus) -> None:
        if session.status is status:
            return
        session.status = status
        self._emit(session, len(session.steps), {"kind": "status", "status": status.value})

    def _emit(self, session: AgentSession, step: int, update: dict[str, Any]) -> None:
        if self._emit_sink is not None:
            self._emit_sink(AgentUpdate(session.session_id, step, update))

    def _checkpoint(self, session: AgentSession) -> None:
        """Best effort: a store that fails (disk full) leaves the newest state in memory, marked
        unsaved; the step decides what that means, and the next save that works writes it all."""
        if self._store is None:
            return
        try:
            self._store.save(session)
        except StoreUnavailable as exc:
            self._unsaved[session.session_id] = exc
        else:
            self._unsaved.pop(session.session_id, None)


_background: set[asyncio.Task[None]] = set()


def _spawn(coro: Coroutine[Any, Any, None]) -> None:
    task = asyncio.ensure_future(coro)
    _background.add(task)
    task.add_done_callback(_background.discard)


def _server(base_url: str) -> str:
    return base_url.rstrip("/")


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


def _canonical(call: ToolCall) -> str:
    return call.name + "\0" + json.dumps(call.arguments, sort_keys=True, ensure_ascii=False, default=str)


def _note(call: ToolCall, text: str) -> Observation:
    return Observation(call.id, call.name, text, is_error=True)


def _observation_for(record: StepRecord, call_id: str) -> Observation | None:
    return next((obs for obs in record.observations if obs.call_id == call_id), None)


def _pending_for(session: AgentSession, call_id: str) -> PendingApproval | None:
    return next((p for p in session.pending if p.call.id == call_id), None)


def _unfinished(record: StepRecord) -> bool:
    return bool(record.tool_calls) and any(_observation_for(record, c.id) is None for c in record.tool_calls)
