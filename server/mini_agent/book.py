"""The session book: which sessions this daemon holds, whether they are current, and who may step them.

Sessions are cached here and re-read when another daemon wrote them since; with a store, a finished
session it holds whole is not kept (a daemon that runs thousands would hold them all), and is read
back when asked for. A session is stepped by one
flight in this daemon and under one lease in the store, which a heartbeat keeps fresh while it runs.
Checkpoints are best effort: a store that fails (disk full) leaves the newest state here, marked
unsaved, and the next save that works writes it all.

Checkpoints are group-committed. A step asks for one of three kinds: `checkpoint` writes at once (the
calls a client makes, which answer only after it); `commit` is awaited and lands with every other
checkpoint asked for in the same turn of the event loop, in one transaction (before a tool runs, at a
step's end: the caller learns whether it was saved before it goes on), or at once when no other
session is stepping (nobody could join; the turn would be a wait for nothing); `note` is not awaited and
lands the same way (a result while other calls of the step still run). Every checkpoint of the
sessions still waiting is written by whichever save comes first, so they stay in order.
"""

from __future__ import annotations

import asyncio
import contextlib
import uuid
from collections.abc import AsyncIterator
from dataclasses import dataclass, field
from typing import Any

from .errors import SessionBusy, SessionFinished, UnknownSession
from .ports import SessionStore
from .session import AgentSession, StoreUnavailable


@dataclass(slots=True)
class Flight:
    """A session being stepped right now: its cancel switch, the tasks awaiting work the switch stops
    (see `stepper.race`), those it has cancelled, and its 'a decision arrived' signal."""

    cancelled: bool = False
    racing: set[asyncio.Task[Any]] = field(default_factory=set)
    struck: set[asyncio.Task[Any]] = field(default_factory=set)
    decided: asyncio.Event = field(default_factory=asyncio.Event)

    def cancel(self) -> None:
        self.cancelled = True
        for task in self.racing - self.struck:
            self.struck.add(task)
            task.cancel()


class SessionBook:
    def __init__(self, store: SessionStore | None) -> None:
        self.store = store
        self.owner = uuid.uuid4().hex
        self._sessions: dict[str, AgentSession] = {}
        self._flights: dict[str, Flight] = {}
        self.unsaved: dict[str, StoreUnavailable] = {}  # sessions newer here than in the store
        self._due: dict[str, AgentSession] = {}  # checkpoints asked for, waiting for the loop's next turn
        self._waiting: dict[str, Exception | None] = {}  # sessions in `commit`, and what their save raised

    def add(self, session: AgentSession) -> None:
        self._sessions[session.session_id] = session
        self.checkpoint(session)

    def get(self, session_id: str) -> AgentSession:
        """The session's latest state: re-read from the store when another daemon wrote it since
        (unless the store could not take this daemon's newest state: then memory is the latest)."""
        session = self._sessions.get(session_id)
        store = self.store
        newest_here = session_id in self._flights or session_id in self.unsaved or session_id in self._due
        if store is not None and not newest_here and (session is None or not store.is_current(session)):
            loaded = store.load(session_id)
            if loaded is not None:
                session = self._sessions[session_id] = loaded
                self._settle(loaded)
        if session is None:
            raise UnknownSession(session_id)
        return session

    def _settle(self, session: AgentSession) -> None:
        """Let go of a finished session the store holds as it is here, not being stepped."""
        sid = session.session_id
        held_here = sid in self._flights or sid in self.unsaved or sid in self._due
        if self.store is None or not session.finished or held_here:
            return
        self._sessions.pop(sid, None)
        self.store.forget(sid)

    def held(self) -> list[AgentSession]:
        return list(self._sessions.values())

    def forget(self, session_id: str) -> None:
        self._sessions.pop(session_id, None)
        self.unsaved.pop(session_id, None)
        self._due.pop(session_id, None)

    def flight(self, session_id: str) -> Flight | None:
        return self._flights.get(session_id)

    def checkpoint(self, session: AgentSession) -> None:
        """Save the session now (with any checkpoints still due)."""
        if self.store is not None:
            self._due[session.session_id] = session
            self._save_due()

    def note(self, session: AgentSession) -> None:
        """Save the session at the loop's next turn, with the other checkpoints due then."""
        if self.store is not None:
            if not self._due:
                asyncio.get_running_loop().call_soon(self._save_due)
            self._due[session.session_id] = session

    async def commit(self, session: AgentSession) -> None:
        """Save the session at the loop's next turn and wait for it; `unsaved` then says whether it worked.
        With no other session stepping, nobody could join the group, so it is saved at once.

        The wait is one turn of the loop: whichever of the group wakes first saves it for all (a future
        set by a callback would cost each of them a second turn, behind every other session's work)."""
        if self.store is None:
            return
        sid = session.session_id
        if len(self._flights) <= 1:
            self.checkpoint(session)
            return
        self._due[sid] = session
        self._waiting[sid] = None
        try:
            await asyncio.sleep(0)
        finally:  # saved even when this step is cancelled meanwhile: the checkpoint was asked for
            if sid in self._due:
                with contextlib.suppress(Exception):  # each waiter of the group gets it below
                    self._save_due()
            failure = self._waiting.pop(sid, None)
        if failure is not None:
            raise failure

    def _save_due(self) -> None:
        """Write what is due. Should the store fail in a way it does not report as unavailable, the
        sessions of the group still waiting in `commit` are given the error, so that their steps fail
        instead of going on as if saved."""
        due, self._due = list(self._due.values()), {}
        if not due:
            return
        try:
            self._save_all(due)
        except Exception as exc:
            for session in due:
                if session.session_id in self._waiting:
                    self._waiting[session.session_id] = exc
            raise

    def _save_all(self, due: list[AgentSession]) -> None:
        failure = self._save(due)
        for session in due:  # a group that failed is tried one by one: a bad session costs only itself
            error = failure if failure is None or len(due) == 1 else self._save([session])
            if error is None:
                self.unsaved.pop(session.session_id, None)
            else:
                self.unsaved[session.session_id] = error

    def _save(self, sessions: list[AgentSession]) -> StoreUnavailable | None:
        assert self.store is not None
        try:
            self.store.save(*sessions)
        except StoreUnavailable as exc:
            return exc
        return None

    def adopt_decisions(self, session: AgentSession) -> None:
        """Take up decisions another daemon sharing the store recorded (its agent/approve) while this
        one holds the session; only the decisions: everything else here is the newer state."""
        if self.store is None:
            return
        try:
            if self.store.is_current(session):
                return
            stored = self.store.load(session.session_id)
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

    def take(self, session_id: str) -> AgentSession:
        """Lease the session, then read its latest state: another daemon may have stepped it meanwhile."""
        self.get(session_id)  # an unknown session gets no lease row
        if self.store is not None and not self.store.acquire(session_id, self.owner):
            raise SessionBusy(session_id, " in another daemon")
        session = self.get(session_id)
        if session.finished:
            self.release(session_id)
            raise SessionFinished(session_id, session.stop_reason)
        return session

    def release(self, session_id: str) -> None:
        """A lease that cannot be released (the store failed) must not hide the step's outcome; it
        is ours, so it lapses with this process and our next acquire takes it anyway."""
        if self.store is not None:
            with contextlib.suppress(StoreUnavailable):
                self.store.release(session_id, self.owner)

    @contextlib.asynccontextmanager
    async def leased(self, session_id: str) -> AsyncIterator[tuple[AgentSession, Flight]]:
        """This daemon steps the session, and no other: a flight here, a lease in the store kept fresh."""
        if session_id in self._flights:
            raise SessionBusy(session_id)
        session = self.take(session_id)
        self._flights[session_id] = flight = Flight()
        beating = asyncio.ensure_future(self._heartbeat()) if self.store is not None else None
        try:
            yield session, flight
        finally:
            if beating is not None:
                beating.cancel()
                await asyncio.gather(beating, return_exceptions=True)
            del self._flights[session_id]
            self.release(session_id)
            self._settle(session)

    async def _heartbeat(self) -> None:
        """Refresh this daemon's leases well within the stale-after time, for as long as a step runs."""
        assert self.store is not None
        period = max(self.store.lease_stale_after / 3, 0.01)
        while True:
            await asyncio.sleep(period)
            with contextlib.suppress(StoreUnavailable):  # a failing store: try again next period
                self.store.heartbeat(self.owner)
