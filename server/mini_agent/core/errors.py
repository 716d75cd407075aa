"""One base for every error a client may be told about: it carries its JSON-RPC code and `data.reason`.

A front door maps `AgentError` and nothing else; details travel as snake_case keyword values and the
door spells them in its own wire format. Anything that is not an `AgentError` is a bug, not an answer.

The whole tree, with each class's `data.reason` (code -32602 unless named):

    AgentError                     invalid_params   (the base; also a plain refusal with details)
    ├── UnknownSession             unknown_session
    ├── SessionBusy                session_busy     -32001
    ├── SessionFinished            session_finished
    ├── UnknownTool                unknown_tool
    ├── UnknownApproval            unknown_approval
    ├── UnknownToolCall            unknown_tool_call
    ├── WorkspaceUntrusted         workspace_untrusted
    ├── core.strict.InvalidParams  invalid_params   (one line per field in `errors`)
    ├── app.config.ConfigError     bad_workspace_config
    ├── store.sqlite.StoreError    store            -32003 (also `session.StoreUnavailable`)
    └── tools.registry.RegistrationError  registration_refused

Failures a model can repair from (a tool's exception, a bad argument, an MCP server gone) are not
errors here: they come back to the model as an error observation.
"""

from __future__ import annotations

from typing import Any, ClassVar

from mini_agent.plumbing import jsonrpc
from mini_agent.plumbing.jsonrpc import INVALID_PARAMS

SESSION_BUSY = -32001  # a valid request the session cannot take now
STORE_FAILED = -32003  # the session store failed (corrupt, locked); the message names the file


class AgentError(Exception):
    code: ClassVar[int] = INVALID_PARAMS
    reason: ClassVar[str] = "invalid_params"

    def __init__(self, message: str, **details: Any) -> None:
        super().__init__(message)
        self.details = details


def error_data(exc: AgentError) -> dict[str, Any]:
    """The `data` of a JSON-RPC error on every door: `reason`, then the details in camelCase
    (`plumbing.jsonrpc.error_data`)."""
    return jsonrpc.error_data(exc.reason, exc.details)


class UnknownSession(AgentError, LookupError):
    reason = "unknown_session"

    def __init__(self, session_id: str) -> None:
        super().__init__(f"unknown session {session_id!r}", session_id=session_id)
        self.session_id = session_id


class SessionBusy(AgentError):
    code = SESSION_BUSY
    reason = "session_busy"

    def __init__(self, session_id: str, where: str = "") -> None:
        super().__init__(
            f"session {session_id!r} is already stepping{where}; wait for it or cancel it",
            session_id=session_id,
        )
        self.session_id = session_id


class SessionFinished(AgentError):
    reason = "session_finished"

    def __init__(self, session_id: str, stop_reason: str | None) -> None:
        super().__init__(
            f"session {session_id!r} is finished (stop reason {stop_reason}); start a new one",
            session_id=session_id,
        )
        self.session_id = session_id


class UnknownTool(AgentError, LookupError):
    """A tool name that is not registered (e.g. in startSession's `tools`)."""

    reason = "unknown_tool"

    def __init__(self, unknown: list[str], available: list[str]) -> None:
        super().__init__(f"unknown tools {unknown}; registered tools are {available}", tools=unknown)


class UnknownApproval(AgentError, LookupError):
    """A tool call id that no pending approval of the session has."""

    reason = "unknown_approval"

    def __init__(self, session_id: str, call_id: str) -> None:
        super().__init__(
            f"session {session_id!r} has no tool call {call_id!r} awaiting approval",
            session_id=session_id,
            tool_call_id=call_id,
        )


class UnknownToolCall(AgentError, LookupError):
    """A tool call id that no step of the session has a result for."""

    reason = "unknown_tool_call"

    def __init__(self, session_id: str, call_id: str) -> None:
        super().__init__(
            f"session {session_id!r} has no result for tool call {call_id!r}",
            session_id=session_id,
            tool_call_id=call_id,
        )


class WorkspaceUntrusted(AgentError):
    """Something only a trusted folder may ask for (the permission mode `ask_never`), asked in one that
    is not trusted."""

    reason = "workspace_untrusted"

    def __init__(self, what: str, root: str) -> None:
        super().__init__(
            f"{what} is refused: the folder {root} is not trusted. Trust it first "
            f"(`mini-agent trust {root}`, your editor's workspace trust, or `mini-agent acp --trust`), "
            "then ask again",
            root=root,
        )
