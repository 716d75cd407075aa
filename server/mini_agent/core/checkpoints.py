"""Checkpoints: sessions written to the store, group-committed, each asker told how its save went.

A checkpoint is one of three kinds: `now` writes at once (the calls a client makes, which answer only
after it); `commit` is awaited and lands with every other checkpoint asked for in the same turn of the
event loop, in one transaction (before a tool runs, at a step's end: the caller learns whether it was
saved before it goes on), or at once when no other session is stepping (nobody could join; the turn
would be a wait for nothing); `soon` is not awaited and lands the same way (a result while other calls
of the step still run). Every checkpoint of the sessions still waiting is written by whichever save
comes first, so they stay in order.

Checkpoints are best effort: a store that fails as unavailable (disk full) leaves the newest state in
memory, and the next save that works writes it all. `now` and `commit` return that failure; until a
save works, `failure` still says it. A store that fails in any other way is a bug: the error is raised
to every asker of the group.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Callable

from mini_agent.core.ports import SessionStore
from mini_agent.core.session import AgentSession, StoreUnavailable


class Checkpoints:
    def __init__(self, store: SessionStore | None, stepping: Callable[[], int]) -> None:
        """`stepping` counts the sessions this daemon steps now (the group a commit could join)."""
        self._store = store
        self._stepping = stepping
        self._failed: dict[str, StoreUnavailable] = {}  # sessions newer here than in the store
        self._due: dict[str, AgentSession] = {}  # checkpoints asked for, waiting for the loop's next turn
        self._waiting: dict[str, Exception | None] = {}  # sessions in `commit`, and what their save raised

    def failure(self, session_id: str) -> StoreUnavailable | None:
        """Why the store lacks this daemon's newest state of the session; None when it has it."""
        return self._failed.get(session_id)

    def newer_here(self, session_id: str) -> bool:
        """True while memory holds a state of the session the store has not taken (yet)."""
        return session_id in self._failed or session_id in self._due

    def drop(self, session_id: str) -> None:
        """Forget the session: nothing of it is due any more."""
        self._failed.pop(session_id, None)
        self._due.pop(session_id, None)

    def now(self, session: AgentSession) -> StoreUnavailable | None:
        """Save the session now (with any checkpoints still due); returns why it was not saved."""
        if self._store is None:
            return None
        self._due[session.session_id] = session
        self._save_due()
        return self._failed.get(session.session_id)

    def soon(self, session: AgentSession) -> None:
        """Save the session at the loop's next turn, with the other checkpoints due then."""
        if self._store is not None:
            if not self._due:
                asyncio.get_running_loop().call_soon(self._save_due)
            self._due[session.session_id] = session

    async def commit(self, session: AgentSession) -> StoreUnavailable | None:
        """Save the session at the loop's next turn and wait for it; returns why it was not saved.
        With no other session stepping, nobody could join the group, so it is saved at once.

        The wait is one turn of the loop: whichever of the group wakes first saves it for all (a future
        set by a callback would cost each of them a second turn, behind every other session's work)."""
        if self._store is None:
            return None
        if self._stepping() <= 1:
            return self.now(session)
        sid = session.session_id
        self._due[sid] = session
        self._waiting[sid] = None
        try:
            await asyncio.sleep(0)
        finally:  # saved even when this step is cancelled meanwhile: the checkpoint was asked for
            if sid in self._due:
                with contextlib.suppress(Exception):  # each waiter of the group gets it below
                    self._save_due()
            broke = self._waiting.pop(sid, None)
        if broke is not None:
            raise broke
        return self._failed.get(sid)

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
                self._failed.pop(session.session_id, None)
            else:
                self._failed[session.session_id] = error

    def _save(self, sessions: list[AgentSession]) -> StoreUnavailable | None:
        assert self._store is not None
        try:
            self._store.save(*sessions)
        except StoreUnavailable as exc:
            return exc
        return None
