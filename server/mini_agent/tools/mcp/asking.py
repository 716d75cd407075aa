"""Whom an MCP server's request to the person is for, and how long the question may stand: a server is
shared by sessions, its requests (an elicitation, a login) name none of them.

The answer is the session whose call is in flight (the latest, when several are), else the session
that is starting the server; with neither, nobody is asked and the request is declined.

A question lives no longer than the calls it was asked for: when the last call (or start) of its
session on this server ends — finished, cancelled, timed out, the turn or the session or the daemon
ending — a question still open is withdrawn (`ask` answers None), whether or not the server withdraws
it itself. The door then takes it back from the editor, and the server is told `cancel`.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Iterator

from mini_agent.core.asking import ElicitAnswer, Elicitation, Person


class Asking:
    """The person behind one server's requests, the sessions that may be asked, and the questions
    open for each."""

    def __init__(self, person: Person, server: str) -> None:
        self.person = person
        self.server = server  # the server's configured name, shown to the person
        self.unasked: set[str] = set()  # sessions a question went to while nobody could answer it
        self._calling: list[str] = []
        self._starting: list[str] = []
        self._open: dict[str, set[asyncio.Task[ElicitAnswer]]] = {}  # the questions of each session
        self._withdrawn: set[asyncio.Task[ElicitAnswer]] = set()

    def session(self) -> str | None:
        """The session to ask now, or None when no session is calling or starting the server."""
        if self._calling:
            return self._calling[-1]
        return self._starting[-1] if self._starting else None

    @contextlib.contextmanager
    def calling(self, session_id: str) -> Iterator[None]:
        """`session_id` has a call in flight for the duration."""
        with self._pushed(self._calling, session_id):
            yield

    @contextlib.contextmanager
    def starting(self, session_id: str) -> Iterator[None]:
        """`session_id` is starting the server (initialize and first listing) for the duration."""
        with self._pushed(self._starting, session_id):
            yield

    async def ask(self, session_id: str, request: Elicitation) -> ElicitAnswer | None:
        """The person's answer to `request`, put for `session_id`; None when the question was withdrawn
        first because the session's calls on this server ended (`withdraw`). A cancellation of the
        caller (the server withdrew the question) withdraws it from the person too."""
        question = asyncio.ensure_future(self.person.elicit(request))
        self._open.setdefault(session_id, set()).add(question)
        try:
            return await question
        except asyncio.CancelledError:
            current = asyncio.current_task()
            if question in self._withdrawn and (current is None or current.cancelling() == 0):
                return None
            raise
        finally:
            self._withdrawn.discard(question)
            questions = self._open.get(session_id)
            if questions is not None:
                questions.discard(question)
                if not questions:
                    del self._open[session_id]

    def withdraw(self, session_id: str | None = None) -> int:
        """Withdraw the questions open for `session_id` (every session's, with None); how many."""
        sessions = list(self._open) if session_id is None else [session_id]
        count = 0
        for session in sessions:
            for question in self._open.get(session, ()):
                if not question.done():
                    self._withdrawn.add(question)
                    question.cancel()
                    count += 1
        return count

    @contextlib.contextmanager
    def _pushed(self, stack: list[str], session_id: str) -> Iterator[None]:
        stack.append(session_id)
        try:
            yield
        finally:
            stack.remove(session_id)
            if session_id not in self._calling and session_id not in self._starting:
                self.withdraw(session_id)
