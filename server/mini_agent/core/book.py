"""The session book: which sessions this daemon holds, whether they are current, and who may step them.

Sessions are cached here and re-read when another daemon wrote them since; with a store, a finished
session it holds whole is not kept (a daemon that runs thousands would hold them all), and is read
back when asked for. A session is stepped by one flight in this daemon and under one lease in the
store, which a heartbeat keeps fresh while it runs. A flight may be taken out before its step starts
(`expecting`), so a cancel that arrives first still stops it. Writing sessions is the book's
`checkpoints`.
"""

from __future__ import annotations

import asyncio
import contextlib
import uuid
from collections.abc import AsyncIterator, Iterator

from mini_agent.core.checkpoints import Checkpoints
from mini_agent.core.errors import SessionBusy, SessionFinished, UnknownSession
from mini_agent.core.flight import Flight
from mini_agent.core.ports import SessionStore
from mini_agent.core.session import AgentSession, StoreUnavailable


class SessionBook:
    def __init__(self, store: SessionStore | None) -> None:
        self.store = store
        self.owner = uuid.uuid4().hex
        self._sessions: dict[str, AgentSession] = {}
        self._flights: dict[str, Flight] = {}
        self._expected: dict[str, list[Flight]] = {}  # flights of steps asked for, not started yet
        self.checkpoints = Checkpoints(store, stepping=self._flights.__len__)

    def add(self, session: AgentSession) -> StoreUnavailable | None:
        """Hold a new session and save it; returns why it was not saved."""
        self._sessions[session.session_id] = session
        return self.checkpoints.now(session)

    def get(self, session_id: str) -> AgentSession:
        """The session's latest state: re-read from the store when another daemon wrote it since
        (unless the store could not take this daemon's newest state: then memory is the latest)."""
        session = self._sessions.get(session_id)
        store = self.store
        newest_here = session_id in self._flights or self.checkpoints.newer_here(session_id)
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
        held_here = sid in self._flights or self.checkpoints.newer_here(sid)
        if self.store is None or not session.finished or held_here:
            return
        self._sessions.pop(sid, None)
        self.store.forget(sid)

    def held(self) -> list[AgentSession]:
        return list(self._sessions.values())

    def forget(self, session_id: str) -> None:
        self._sessions.pop(session_id, None)
        self.checkpoints.drop(session_id)

    def flight(self, session_id: str) -> Flight | None:
        return self._flights.get(session_id)

    def cancel(self, session_id: str) -> bool:
        """Cancel the session's flight and those expected; False when there was none."""
        flights = [*self._expected.get(session_id, []), *filter(None, [self._flights.get(session_id)])]
        for flight in flights:
            flight.cancel()
        return bool(flights)

    @contextlib.contextmanager
    def expecting(self, session_id: str) -> Iterator[Flight]:
        """A flight for a step about to start (hand it to `leased`): a cancel reaches it from now on."""
        flight = Flight()
        expected = self._expected.setdefault(session_id, [])
        expected.append(flight)
        try:
            yield flight
        finally:
            expected.remove(flight)
            if not expected:
                del self._expected[session_id]

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
    async def leased(
        self, session_id: str, flight: Flight | None = None
    ) -> AsyncIterator[tuple[AgentSession, Flight]]:
        """This daemon steps the session, and no other: a flight here (`flight`, when one was
        expected), a lease in the store kept fresh."""
        if session_id in self._flights:
            raise SessionBusy(session_id)
        session = self.take(session_id)
        self._flights[session_id] = flight = flight if flight is not None else Flight()
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
