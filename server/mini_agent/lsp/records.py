"""The LSP door's requests over the tool list and the stored sessions (`agent/registerTool`,
`agent/listSessions`, `agent/forkSession` …): each reads or changes what the workspace holds and
answers at once; no model turn runs here (those are `server`'s, with their progress and cancellation).

Each is `(workspace, params) -> result`, registered by `server.method` from `REQUESTS`. `wire` is
imported in each, not at the top: the daemon starts without pydantic and the wire mapping.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from mini_agent.app.workspace import Workspace
    from mini_agent.lsp.params import (
        ForkParams,
        ListSessionsParams,
        NameParams,
        ObservationParams,
        RegisterToolParams,
        ResumeParams,
        SessionParams,
    )


async def register_tool(workspace: Workspace, p: RegisterToolParams) -> dict[str, Any]:
    from mini_agent.lsp import wire

    specs = await workspace.register_tool(p.registration())
    return {"tools": [wire.tool_spec(spec) for spec in specs]}


async def unregister_tool(workspace: Workspace, p: NameParams) -> dict[str, Any]:
    from mini_agent.lsp import wire

    return {"tools": [wire.tool_entry(workspace.unregister(p.name))]}


async def list_tools(workspace: Workspace, p: object) -> dict[str, Any]:
    from mini_agent.lsp import wire

    return {"tools": wire.tool_list(workspace.tool_list())}


async def get_session(workspace: Workspace, p: SessionParams) -> dict[str, Any]:
    from mini_agent.lsp import wire

    return wire.session_full(workspace.sessions.get(p.session_id))


async def get_observation(workspace: Workspace, p: ObservationParams) -> dict[str, Any]:
    from mini_agent.lsp import wire

    found = workspace.sessions.observation(p.session_id, p.tool_call_id)
    return {"sessionId": p.session_id, **wire.observation(found), "output": found.output}


async def list_sessions(workspace: Workspace, p: ListSessionsParams) -> dict[str, Any]:
    from mini_agent.lsp import wire

    rows, total = workspace.sessions.list_sessions(p.status, p.limit, p.offset)
    return {"sessions": [wire.session_row(row) for row in rows], "total": total}


async def resume_session(workspace: Workspace, p: ResumeParams) -> dict[str, Any]:
    from mini_agent.lsp import wire

    return wire.session_full(workspace.sessions.resume(p.session_id, p.llm))


async def fork_session(workspace: Workspace, p: ForkParams) -> dict[str, Any]:
    from mini_agent.lsp import wire

    return wire.session_full(workspace.sessions.fork(p.session_id, p.step))


async def load_session(workspace: Workspace, p: SessionParams) -> dict[str, Any]:
    from mini_agent.lsp import wire

    sent = workspace.sessions.load(p.session_id)
    return {**wire.session_summary(workspace.sessions.get(p.session_id)), "updatesSent": sent}


async def delete_session(workspace: Workspace, p: SessionParams) -> dict[str, Any]:
    return {"sessionId": p.session_id, "deleted": workspace.sessions.delete(p.session_id)}


# (method, params model, handler), registered by the server in this order
REQUESTS: list[tuple[str, str, Callable[[Workspace, Any], Awaitable[Any]]]] = [
    ("agent/registerTool", "RegisterToolParams", register_tool),
    ("agent/unregisterTool", "NameParams", unregister_tool),
    ("agent/listTools", "Params", list_tools),
    ("agent/getSession", "SessionParams", get_session),
    ("agent/getObservation", "ObservationParams", get_observation),
    ("agent/listSessions", "ListSessionsParams", list_sessions),
    ("agent/resumeSession", "ResumeParams", resume_session),
    ("agent/forkSession", "ForkParams", fork_session),
    ("agent/loadSession", "SessionParams", load_session),
    ("agent/deleteSession", "SessionParams", delete_session),
]
