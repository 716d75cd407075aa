"""The agent runtime: sessions started, stepped, run, cancelled, approved and replayed.

`AgentRuntime` composes the session book (`book.py`: cache, staleness, leases, and its
`checkpoints.py`), the approvals (`approvals.py`) and the stepper (`stepper.py`: model turn, tools,
conclusion); a step's cancellation is its flight's (`flight.py`). The runtime owns the tasks that
outlive a step (an approver's prompt) and cancels them in `aclose`. It owns no I/O: the model server,
the tools, the store and the editor's permission prompts are ports (`ports.py`), and its only output
is typed events (`events.py`) that each front door maps to its own wire format.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Coroutine, Mapping, Sequence
from dataclasses import dataclass, replace
from typing import Any

from mini_agent.core import budget, content
from mini_agent.core.approvals import Approvals
from mini_agent.core.book import SessionBook
from mini_agent.core.context import ContextKeeper
from mini_agent.core.contracts import (
    Image,
    LLMConfig,
    Message,
    Part,
    ReplyFormats,
    Role,
    SessionStatus,
    StopReason,
    ToolMode,
    ToolSpec,
    plain_replies,
)
from mini_agent.core.errors import SessionBusy, UnknownTool
from mini_agent.core.events import AgentEvent, ConfigChanged, EventSink, StatusChanged, UserTurn
from mini_agent.core.flight import Flight
from mini_agent.core.fork import fork
from mini_agent.core.images import left_out_status
from mini_agent.core.ports import Approver, LLMClient, SessionStore, ToolExecutor, WindowProbe
from mini_agent.core.session import (
    AgentConfig,
    AgentSession,
    ConfigChange,
    Decision,
    PermissionMode,
    StepRecord,
    new_session_id,
)
from mini_agent.core.stepper import Stepper
from mini_agent.core.trajectory import replay


@dataclass(slots=True)
class RunSummary:
    session: AgentSession
    last: StepRecord
    steps_run: int
    stop_reason: StopReason | None


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
        probe: WindowProbe | None = None,
        formats: ReplyFormats = plain_replies,
    ) -> None:
        """`keys` are API keys by the base URL each was configured for: a key is sent to that server
        only, never to whatever server a session (perhaps one from a cloned store) points at.
        `formats` is the model adapter's word on each tool mode's replies."""
        self._formats = formats
        self._tools = tools
        self._llm, self._probe = llm, probe  # for a compaction asked for between steps (`compact`)
        self._events = events
        self.defaults = defaults or AgentConfig()
        self._keys = {_server(url): key for url, key in (keys or {}).items()}
        self._own_keys: dict[str, tuple[str, str]] = {}  # session id -> (server, the key it was given)
        self._book = SessionBook(store)
        self._background: set[asyncio.Task[None]] = set()  # work that outlives its step: see `aclose`
        self._approvals = Approvals(tools, store, approver, spawn=self._spawn, decided=self.approve)
        self._stepper = Stepper(
            llm,
            tools,
            self._book.checkpoints,
            self._approvals,
            api_key=self._api_key,
            emit=events,
            probe=probe,
            formats=formats,
        )

    @property
    def owner(self) -> str:
        """This runtime's name on the store's leases."""
        return self._book.owner

    # -- sessions -------------------------------------------------------------------------------

    def start_session(
        self,
        task: str,
        *,
        system_prompt: str | None = None,
        tool_names: Sequence[str] | None = None,
        llm: LLMConfig | None = None,
        max_steps: int | None = None,
        session_id: str | None = None,
        standing: Mapping[str, Decision] | None = None,
        permission_mode: PermissionMode | None = None,
        images: Sequence[Image] = (),
        parts: Sequence[Part] = (),
    ) -> AgentSession:
        """Snapshot the tools now: the prompt must not change under a running session. An API key in
        `llm` is the session's own: kept in memory for its server, never stored. `session_id`
        lets a front door hand out the id before the task is known (ACP's session/new); `standing`
        are decisions it starts with (a workspace's approval policy). `parts` is the task as the person
        gave it (`content.kept`), when `task` and `images` are what the model is given of it."""
        config = self.defaults.with_overrides(
            llm=llm, max_steps=max_steps, system_prompt=system_prompt, permission_mode=permission_mode
        )
        config = config.with_overrides(llm=replace(config.llm, api_key=None))
        tools = self._select_tools(tool_names)
        sid = session_id or new_session_id()
        session = AgentSession(session_id=sid, task=task, config=config, tools=tools)
        session.standing_decisions.update(standing or {})
        session.messages.append(Message(Role.SYSTEM, config.system_prompt))
        session.messages.append(Message(Role.USER, task, images=tuple(images), parts=content.kept(parts)))
        failure = self._book.add(session)
        if failure is not None:  # nothing has happened yet: refuse rather than keep it in memory only
            self.forget(session.session_id)
            raise failure
        self._bind_key(session, llm)
        self._say_left_out(session, images)
        return session

    def _say_left_out(self, session: AgentSession, images: Sequence[Image]) -> None:
        """A status message when the session's tool mode sends the model text only: the images of
        the turn just given are left out (the model is told so in the turn itself)."""
        message = left_out_status(session.config.llm.tool_mode, len(images), "attached")
        if message is not None and self._events is not None:
            step = len(session.steps)
            self._events(StatusChanged(session.session_id, step, session.status, message=message))

    def add_key(self, base_url: str, key: str) -> None:
        """A daemon key set up for `base_url` since it started (sent to that server only)."""
        self._keys[_server(base_url)] = key

    def fork(self, session_id: str, *, step: int | None = None) -> AgentSession:
        """A new session whose history is this one's up to the end of step `step` (None: every step
        that has ended), stored at once (`fork`); the source is left as it is. The fork keeps the
        source's own API key for the same server, not its standing decisions."""
        source = self.get(session_id)
        forked = fork(source, new_session_id(), step=step, busy=self.is_busy(session_id))
        failure = self._book.add(forked)
        if failure is not None:
            self.forget(forked.session_id)
            raise failure
        own = self._own_keys.get(session_id)
        if own is not None:
            self._own_keys[forked.session_id] = own
        return forked

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
        available = {spec.name: spec for spec in self._tools.list_tools()}
        if names is None:
            return list(available.values())
        unknown = [name for name in names if name not in available]
        if unknown:
            raise UnknownTool(unknown, sorted(available))
        return [available[name] for name in names]

    def get(self, session_id: str) -> AgentSession:
        """The session's latest state: re-read from the store when another daemon wrote it since."""
        return self._book.get(session_id)

    def add_tools(self, session_id: str, specs: Sequence[ToolSpec]) -> list[ToolSpec]:
        """Give a session that has had no model turn yet the tools of `specs` it lacks (by name), and
        save it; returns those added. From its first model turn on a session's tool set is fixed (the
        prompt must not change under it): a session past it gets none."""
        session = self.get(session_id)
        have = {spec.name for spec in session.tools}
        adding = [spec for spec in specs if spec.name not in have]
        if session.steps or not adding:
            return []
        session.tools = [*session.tools, *adding]
        session.touch()
        self._book.checkpoints.now(session)
        return adding

    def resume(self, session_id: str, *, llm: LLMConfig | None = None) -> AgentSession:
        """Take a stored session up here (e.g. after a crash), optionally with new model settings;
        stepping stays agent/step or agent/run."""
        session = self.get(session_id)
        if session.finished or self.is_busy(session_id):
            return session
        session = self._book.take(session_id)
        if session.status is SessionStatus.RUNNING:  # its daemon died mid-step; the next step goes on from it
            session.status = SessionStatus.READY
        if llm is not None:
            session.config = session.config.with_overrides(llm=replace(llm, api_key=None))
            self._bind_key(session, llm)
        self._book.checkpoints.now(session)
        self._book.release(session_id)
        return session

    def configure(
        self,
        session_id: str,
        *,
        model: str | None = None,
        permission_mode: PermissionMode | None = None,
        tool_mode: ToolMode | None = None,
    ) -> AgentSession:
        """Change the session's model, permission mode or tool mode; it applies from the next model
        turn (a running step keeps the request it sent), is stored with the session and goes out as a
        `ConfigChanged` event that the session's history keeps. Nothing changed: nothing happens."""
        session = self.get(session_id)
        before = session.config
        llm = replace(
            before.llm, model=model or before.llm.model, tool_mode=tool_mode or before.llm.tool_mode
        )
        mode = permission_mode or before.permission_mode
        said = [
            *([f"Model: {llm.model}"] if llm.model != before.llm.model else []),
            *([f"Tool mode: {llm.tool_mode}"] if llm.tool_mode != before.llm.tool_mode else []),
            *([f"Permission mode: {mode.label}"] if mode is not before.permission_mode else []),
        ]
        if not said:
            return session
        message = "; ".join(said)
        change = ConfigChange(len(session.steps), llm.model, llm.tool_mode, mode, session.status, message)
        session.config = replace(before, llm=llm, permission_mode=mode, changes=(*before.changes, change))
        session.touch()
        self._book.checkpoints.now(session)
        if self._events is not None:
            self._events(ConfigChanged.of(session_id, change))
        return session

    def prompt(
        self, session_id: str, text: str, images: Sequence[Image] = (), parts: Sequence[Part] = ()
    ) -> AgentSession:
        """A follow-up user turn: a session that ended its turn (answered, ran out of its step budget,
        stopped on a loop) or is ready takes the user's words and is ready again, with a fresh budget.
        The history is only appended to, so the next model request starts with the bytes of the last
        one (the model server's prefix cache keeps working). The words go out as a `UserTurn` event
        (the task does not: its client gave it)."""
        session = self.get(session_id)
        stepping = (SessionStatus.RUNNING, SessionStatus.AWAITING_APPROVAL)
        if self.is_busy(session_id) or session.status in stepping:
            raise SessionBusy(session_id)
        self._stepper.abandon_open_calls(session)
        kept = content.kept(parts)
        session.messages.append(Message(Role.USER, text, images=tuple(images), parts=kept))
        session.status, session.stop_reason, session.final_answer = SessionStatus.READY, None, None
        session.touch()
        self._book.checkpoints.now(session)
        if self._events is not None:
            self._events(UserTurn(session_id, len(session.steps), text, tuple(images), kept))
        self._say_left_out(session, images)
        return session

    def sessions(self, *, status: str | None = None) -> list[AgentSession]:
        """Sessions this daemon holds, newest first."""
        held = sorted(self._book.held(), key=lambda s: s.updated_at, reverse=True)
        return [s for s in held if status is None or s.status.value == status]

    def forget(self, session_id: str) -> None:
        self._book.forget(session_id)
        self._own_keys.pop(session_id, None)

    def is_unsaved(self, session_id: str) -> bool:
        """True while the store lacks this daemon's newest state of the session (it failed to write)."""
        return self._book.checkpoints.failure(session_id) is not None

    def is_busy(self, session_id: str) -> bool:
        return self._book.flight(session_id) is not None

    def replay(self, session_id: str, *, task: bool = False) -> list[AgentEvent]:
        """The trajectory as the events a live run sent (for an editor that just opened it); the task
        too with `task`."""
        return replay(self.get(session_id), task=task, formats=self._formats)

    # -- control --------------------------------------------------------------------------------

    def cancel(self, session_id: str) -> bool:
        """Ask the in-flight step of a session to stop, and those asked for with `expecting` that
        have not started; False when there was none."""
        return self._book.cancel(session_id)

    def expecting(self, session_id: str) -> contextlib.AbstractContextManager[Flight]:
        """A flight for a `run` or `step` about to be asked for (pass it as `flight`): a `cancel`
        from now on stops that step, even one that has not started yet."""
        return self._book.expecting(session_id)

    def approve(self, session_id: str, call_id: str, decision: Decision, reason: str | None = None) -> None:
        session = self.get(session_id)
        self._approvals.decide(session, call_id, decision, reason)
        self._book.checkpoints.now(session)

    async def compact(self, session_id: str) -> str:
        """Compact the session's context now, as an overflow would (older turns summarised by the model,
        the task and the latest turn kept), and say what was done. The compaction is kept on the last
        step, so the next model turn starts from it; the stored history keeps everything. A session
        stepping is busy; one that starts stepping while the summary is written keeps its context."""
        session = self.get(session_id)
        if self._stepping(session):
            raise SessionBusy(session_id)
        if not session.steps:
            return "Nothing to compact: the session has had no model turn yet."
        index = len(session.steps) - 1

        def emit(event: AgentEvent) -> None:
            if self._events is not None and isinstance(event, StatusChanged):
                self._events(replace(event, status=session.status))

        keeper = ContextKeeper(self._llm, self._probe, lambda event: None)
        config = replace(session.config.llm, api_key=self._api_key(session))
        request = await keeper.prepare(session, index, config, force=True)
        if request.compaction is None:
            return "Nothing to compact: every message is part of the latest turn."
        if self._stepping(session) or len(session.steps) != index + 1:
            raise SessionBusy(session_id, " (it started a turn while the summary was written)")
        session.steps[index].compaction = request.compaction
        session.touch()
        self._book.checkpoints.now(session)
        message = budget.describe(request.compaction, request.window)
        emit(StatusChanged(session_id, index, session.status, message=message))
        return message

    def _stepping(self, session: AgentSession) -> bool:
        stepping = (SessionStatus.RUNNING, SessionStatus.AWAITING_APPROVAL)
        return self.is_busy(session.session_id) or session.status in stepping

    def close(self, session_id: str) -> None:
        """Let a session that is not stepping go from memory; the store keeps it, so it can be loaded
        again (the door cancels its work and waits for it first)."""
        session = self.get(session_id)
        if self.is_busy(session_id):
            raise SessionBusy(session_id)
        self._book.checkpoints.now(session)
        self.forget(session_id)

    # -- stepping -------------------------------------------------------------------------------

    async def run(
        self, session_id: str, *, max_steps: int | None = None, flight: Flight | None = None
    ) -> RunSummary:
        """Step until a stop reason; waits for approvals rather than returning on them. The lease is
        held for the whole run, and a cancel ends the run."""
        steps_run = 0
        async with self._book.leased(session_id, flight) as (session, flight):
            while True:
                record = await self._stepper.step(session, flight, wait_for_approval=True)
                steps_run += 1
                if record.stop_reason is not None:
                    return RunSummary(session, record, steps_run, record.stop_reason)
                if max_steps is not None and steps_run >= max_steps:
                    return RunSummary(session, record, steps_run, StopReason.MAX_TURN_REQUESTS)

    async def step(
        self, session_id: str, *, wait_for_approval: bool = False, flight: Flight | None = None
    ) -> StepRecord:
        async with self._book.leased(session_id, flight) as (session, flight):
            return await self._stepper.step(session, flight, wait_for_approval)

    # -- background work ------------------------------------------------------------------------

    def _spawn(self, work: Coroutine[Any, Any, None]) -> None:
        task = asyncio.ensure_future(work)
        self._background.add(task)
        task.add_done_callback(self._background.discard)

    async def aclose(self) -> None:
        """Cancel the work that outlives a step (an approver's prompt still open) and wait for it."""
        tasks = list(self._background)
        for task in tasks:
            task.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)


def _server(base_url: str) -> str:
    return base_url.rstrip("/")
