"""How the LSP door runs agent/step and agent/run: `$/progress` begin/report/end with one short line
per event, so stock clients show a spinner, and `$/cancelRequest` turned into a graceful stop (the
other way, a request to the client the daemon stops waiting for, is `outgoing.py`'s)."""

from __future__ import annotations

import asyncio
import contextlib
import uuid
from collections.abc import AsyncIterator, Awaitable, Callable
from typing import TYPE_CHECKING, TypeVar

from lsprotocol import types
from pygls.lsp.server import LanguageServer

from mini_agent.core.contracts import SessionStatus
from mini_agent.core.events import AgentEvent, StatusChanged, ToolCallPending

if TYPE_CHECKING:
    from mini_agent.app.workspace import Workspace

T = TypeVar("T")


async def cancellable(work: Awaitable[T], cancel: Callable[[], object], stopping: Callable[[], bool]) -> T:
    """Turn `$/cancelRequest` into a graceful stop: the step answers stopReason "cancelled" — unless
    the server is `stopping`, when the request is dropped and the session left as it is."""
    task = asyncio.ensure_future(work)
    try:
        return await asyncio.shield(task)
    except asyncio.CancelledError:
        if stopping():
            raise
        cancel()
        current = asyncio.current_task()
        if current is not None:
            current.uncancel()
        return await task


async def server_token(server: LanguageServer) -> str | None:
    """A token of our own when the client can show server-initiated progress (LSP window capability)."""
    window = server.client_capabilities.window
    if window is None or not window.work_done_progress:
        return None
    token = f"mini-agent-{uuid.uuid4().hex[:12]}"
    try:
        await server.work_done_progress.create_async(token)
    except Exception:  # the client refused: run without a spinner
        return None
    return token


@contextlib.asynccontextmanager
async def progress(
    server: LanguageServer, workspace: Workspace, session_id: str, token: str | int | None, title: str
) -> AsyncIterator[None]:
    """Mirror a session's updates as standard $/progress begin/report/end, one short line each."""
    if token is None:
        yield
        return
    reporter = server.work_done_progress
    reporter.begin(token, types.WorkDoneProgressBegin(title=title, cancellable=True, message="starting"))
    last: dict[str, str] = {"message": "done"}

    def report(event: AgentEvent) -> None:
        message = progress_line(event)
        if message is not None:
            last["message"] = message
            reporter.report(token, types.WorkDoneProgressReport(message=message))

    unwatch = workspace.watch(session_id, report)
    try:
        yield
    finally:
        unwatch()
        reporter.end(token, types.WorkDoneProgressEnd(message=last["message"]))


def progress_line(event: AgentEvent) -> str | None:
    step_no = event.step + 1
    if isinstance(event, ToolCallPending):
        return f"step {step_no} · {event.call.name} …"
    if not isinstance(event, StatusChanged):
        return None
    if event.status is SessionStatus.RUNNING:
        return f"step {step_no} · thinking …"
    if event.status is SessionStatus.AWAITING_APPROVAL:
        return f"step {step_no} · waiting for approval"
    if event.stop_reason is not None:
        return event.stop_reason.value + (f": {event.message}" if event.message else "")
    return None
