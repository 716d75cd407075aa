"""Whom an MCP server's request to the person is for: a server is shared by sessions, its requests
(an elicitation, a login) name none of them.

The answer is the session whose call is in flight (the latest, when several are), else the session
that is starting the server; with neither, nobody is asked and the request is declined.
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator

from mini_agent.core.asking import Person


class Asking:
    """The person behind one server's requests, and the sessions that may be asked."""

    def __init__(self, person: Person, server: str) -> None:
        self.person = person
        self.server = server  # the server's configured name, shown to the person
        self.unasked: set[str] = set()  # sessions a question went to while nobody could answer it
        self._calling: list[str] = []
        self._starting: list[str] = []

    def session(self) -> str | None:
        """The session to ask now, or None when no session is calling or starting the server."""
        if self._calling:
            return self._calling[-1]
        return self._starting[-1] if self._starting else None

    @contextlib.contextmanager
    def calling(self, session_id: str) -> Iterator[None]:
        """`session_id` has a call in flight for the duration."""
        with _pushed(self._calling, session_id):
            yield

    @contextlib.contextmanager
    def starting(self, session_id: str) -> Iterator[None]:
        """`session_id` is starting the server (initialize and first listing) for the duration."""
        with _pushed(self._starting, session_id):
            yield


@contextlib.contextmanager
def _pushed(stack: list[str], item: str) -> Iterator[None]:
    stack.append(item)
    try:
        yield
    finally:
        stack.remove(item)
