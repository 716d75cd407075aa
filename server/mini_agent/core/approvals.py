"""Approvals: the decisions tool calls need before they run.

How each call is decided (`session.Ask`) is the approver's word where it gives one (`CallPolicy`: it
may know that a call reaches outside the workspace), else its tool's `requires_approval`; the session's
permission mode then has its say (`with_mode`). A call of a tool whose last call the sandbox refused is
asked every time, in every mode, with the expansion that would let it run on offer (`expansion`). A call that
needs a decision gets a pending entry: decided at once by a standing decision of the session (unless
it is asked every time), else asked of the approver (the editor's prompt, in a task the runtime owns,
since the answer may come long after the step that asked has returned) and decided by whoever answers
first: that prompt, `agent/approve` here, or another daemon sharing the store. A step that may wait for the
decisions waits here, woken by a decision made in this daemon and looking in the store for one made
elsewhere every `APPROVAL_POLL_SEC`.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Coroutine, Sequence
from typing import Any, Protocol, runtime_checkable

from mini_agent.core.contracts import ToolCall, ToolSpec
from mini_agent.core.errors import UnknownApproval
from mini_agent.core.expansion import needed
from mini_agent.core.flight import Flight
from mini_agent.core.ports import Approver, SessionStore, ToolExecutor
from mini_agent.core.session import (
    AgentSession,
    Ask,
    Decision,
    PendingApproval,
    PermissionMode,
    StoreUnavailable,
)

APPROVAL_POLL_SEC = 0.5  # how often a run waiting on a decision looks for one made by another daemon

Spawn = Callable[[Coroutine[Any, Any, None]], None]


@runtime_checkable
class CallPolicy(Protocol):
    """An approver that also says how each call is decided (its tool's `requires_approval` is the
    default, and the approver may know more, e.g. where a call's path leads)."""

    def ask_for(self, session: AgentSession, call: ToolCall, spec: ToolSpec) -> Ask: ...


class Approvals:
    def __init__(
        self,
        tools: ToolExecutor,
        store: SessionStore | None,
        approver: Approver | None,
        *,
        spawn: Spawn,
        decided: Callable[[str, str, Decision, str | None], None],
    ) -> None:
        """`spawn` runs an approver's prompt in a task its owner cancels; `decided` records an answer
        the prompt gives as the runtime records any decision (the session re-read, the checkpoint)."""
        self._tools = tools
        self._store = store
        self._approver = approver
        # asked once: an isinstance against a runtime-checkable protocol costs more than a whole call
        self._policy = approver if isinstance(approver, CallPolicy) else None
        self._spawn = spawn
        self._decided = decided
        self._wakes: dict[str, asyncio.Event] = {}  # sessions whose step waits for a decision

    def open(self, session: AgentSession, step_index: int, calls: Sequence[ToolCall]) -> bool:
        """Give each call that needs a decision its pending entry (asking the approver where no
        standing decision covers it); True when every pending call of the session is decided."""
        for call in calls:
            spec = self._tools.get(call.name)
            if spec is None or pending_for(session, call.id) is not None:
                continue
            expansion = needed(session, call.name)
            ask = Ask.EVERY_TIME if expansion is not None else self.ask_for(session, call, spec)
            if ask is Ask.NEVER:
                continue
            every_time = ask is Ask.EVERY_TIME
            standing = None if every_time else session.standing_decisions.get(call.name)
            entry = PendingApproval(call, step_index, standing, every_time=every_time, expansion=expansion)
            session.pending.append(entry)
            if standing is None:
                self._prompt(session, call, spec)
        return all(p.decision is not None for p in session.pending)

    def ask_for(self, session: AgentSession, call: ToolCall, spec: ToolSpec) -> Ask:
        """How `call` is decided: the approver's word (`CallPolicy`), else the tool's, as the session's
        permission mode takes it."""
        if self._policy is not None:
            ask = self._policy.ask_for(session, call, spec)
        else:
            ask = Ask.UNLESS_STANDING if spec.requires_approval else Ask.NEVER
        standing = session.standing_decisions.get(call.name)
        return with_mode(ask, session.config.permission_mode, standing)

    def decide(self, session: AgentSession, call_id: str, decision: Decision, reason: str | None) -> None:
        """Record a decision on a pending call, and wake the step waiting for it. A call asked every
        time takes an `always` answer as its `once` twin: it stands for no other call."""
        pending = pending_for(session, call_id)
        if pending is None:
            raise UnknownApproval(session.session_id, call_id)
        if pending.every_time:
            decision = decision.once
        if decision is Decision.ALLOW_ONCE_EXPANDED and pending.expansion is None:
            decision = Decision.ALLOW_ONCE  # nothing was offered: the call runs as confined as ever
        pending.decision, pending.reason = decision, reason
        if decision.standing:
            session.standing_decisions[pending.call.name] = decision
        wake = self._wakes.get(session.session_id)
        if wake is not None:
            wake.set()

    async def wait(self, session: AgentSession, flight: Flight) -> None:
        """Wait until every pending call of the session is decided (or the flight is cancelled)."""
        sid = session.session_id
        wake = self._wakes[sid] = asyncio.Event()
        try:
            while any(p.decision is None for p in session.pending):
                wake.clear()
                try:
                    await flight.race(asyncio.wait_for(wake.wait(), APPROVAL_POLL_SEC))
                except TimeoutError:
                    self.adopt(session)
        finally:
            if self._wakes.get(sid) is wake:
                del self._wakes[sid]

    def adopt(self, session: AgentSession) -> None:
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
        theirs = {p.call.id: p for p in stored.pending}
        for pending in session.pending:
            other = theirs.get(pending.call.id)
            if pending.decision is None and other is not None and other.decision is not None:
                pending.decision, pending.reason = other.decision, other.reason
        for name, decision in stored.standing_decisions.items():
            session.standing_decisions.setdefault(name, decision)

    def _prompt(self, session: AgentSession, call: ToolCall, spec: ToolSpec) -> None:
        if self._approver is None:
            return
        approver = self._approver

        async def ask() -> None:
            answer = await approver.request_permission(session, call, spec)
            pending = pending_for(session, call.id)
            if answer is not None and pending is not None and pending.decision is None:
                self._decided(session.session_id, call.id, answer[0], answer[1])

        self._spawn(ask())


def with_mode(ask: Ask, mode: PermissionMode, standing: Decision | None) -> Ask:
    """`ask` under a session's permission mode: `ask_always` asks of every call (a standing decision
    still answers the calls it covers), `ask_never` of none but a call asked every time (one reaching
    outside the workspace); there a standing reject still rejects."""
    if ask is Ask.EVERY_TIME or mode is PermissionMode.ASK_WHEN_NEEDED:
        return ask
    if mode is PermissionMode.ASK_ALWAYS:
        return Ask.UNLESS_STANDING
    return Ask.UNLESS_STANDING if standing is not None and not standing.allows else Ask.NEVER


def pending_for(session: AgentSession, call_id: str) -> PendingApproval | None:
    return next((p for p in session.pending if p.call.id == call_id), None)
