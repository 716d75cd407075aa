"""What `mini-agent mcp --http` holds for its clients at most: live sessions, a session's idle time, and
the time a connection has to send a request. Imports nothing heavy, so the command line can build one."""

from __future__ import annotations

import math
from dataclasses import dataclass

DEFAULT_MAX_SESSIONS = 256
DEFAULT_SESSION_IDLE_SEC = 15 * 60.0
DEFAULT_HEADER_TIMEOUT_SEC = 30.0


@dataclass(frozen=True)
class HttpBounds:
    """`max_sessions`: live MCP sessions at most (past it a new one is refused with 503);
    `session_idle_sec`: a session with no request in flight for this long is closed and forgotten;
    `header_timeout_sec`: a connection's time to send a request's head (from when it opens, or its last
    response ends) and then its body; past it the connection is dropped."""

    max_sessions: int = DEFAULT_MAX_SESSIONS
    session_idle_sec: float = DEFAULT_SESSION_IDLE_SEC
    header_timeout_sec: float = DEFAULT_HEADER_TIMEOUT_SEC

    def __post_init__(self) -> None:
        if self.max_sessions < 1:
            raise ValueError(f"max_sessions must be 1 or more, got {self.max_sessions}")
        for name in ("session_idle_sec", "header_timeout_sec"):
            value = getattr(self, name)
            if not (math.isfinite(value) and value > 0):
                raise ValueError(f"{name} must be a positive number of seconds, got {value}")

    @classmethod
    def given(
        cls, max_sessions: int | None, session_idle_sec: float | None, header_timeout_sec: float | None
    ) -> HttpBounds:
        """The bounds with the defaults in place of what was not given (None)."""
        return cls(
            DEFAULT_MAX_SESSIONS if max_sessions is None else max_sessions,
            DEFAULT_SESSION_IDLE_SEC if session_idle_sec is None else session_idle_sec,
            DEFAULT_HEADER_TIMEOUT_SEC if header_timeout_sec is None else header_timeout_sec,
        )
