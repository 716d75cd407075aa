"""Served files watched: a saved file is registered again and every connected client is told
(`notifications/tools/list_changed`), over stdio and HTTP alike.

The files are polled (their size and modification time) every `POLL_INTERVAL_SEC`: a handful of
files, no extra dependency, and the same on every platform. A file that no longer registers (a
syntax error half-way through an edit) keeps its previous tools; the reason goes to stderr.
"""

from __future__ import annotations

import logging
import sys
from collections import OrderedDict
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import anyio
from mcp.server.context import CallNext, HandlerResult, ServerRequestContext
from mcp.server.session import ServerSession

from mini_agent.tools.registry import RegistrationError, ToolRegistry

log = logging.getLogger(__name__)

POLL_INTERVAL_SEC = 0.3  # how soon after a save the clients hear of it (at worst)
MAX_CLIENTS = 64  # connections told of a change; the one silent longest is forgotten past this

Stamp = tuple[int, int] | None  # a file's (mtime_ns, size); None while it does not exist


class Clients:
    """The connected clients, each by the session of its latest request (a request's session sends
    notifications on its connection's own channel): one for stdio, one per `Mcp-Session-Id` on HTTP.
    At most `MAX_CLIENTS` are kept; past that the longest silent one hears of no more changes."""

    def __init__(self) -> None:
        self._sessions: OrderedDict[str, ServerSession] = OrderedDict()

    async def remember(self, ctx: ServerRequestContext[Any], call_next: CallNext) -> HandlerResult:
        """Server middleware: note the session of each request."""
        key = _connection_of(ctx)
        if key is not None:
            self._sessions.pop(key, None)
            self._sessions[key] = ctx.session
            while len(self._sessions) > MAX_CLIENTS:
                self._sessions.popitem(last=False)
        return await call_next(ctx)

    async def tools_changed(self) -> None:
        """Tell every client still connected that the tool list changed."""
        for key, session in list(self._sessions.items()):
            try:
                await session.send_tool_list_changed()
            except (anyio.ClosedResourceError, anyio.BrokenResourceError, RuntimeError) as exc:
                log.info("a client left before hearing of the change (%s)", type(exc).__name__)
                self._sessions.pop(key, None)


def _connection_of(ctx: ServerRequestContext[Any]) -> str | None:
    """The empty key for stdio's one connection, the session id on HTTP; None for an HTTP request that has
    none yet (`initialize`: the client's next requests carry it)."""
    headers = getattr(ctx.request, "headers", None)
    if headers is None:
        return ""
    session_id = headers.get("mcp-session-id")
    return session_id if isinstance(session_id, str) else None


class Watcher:
    """Re-registers a served file when it changes on disk, then notifies the clients."""

    def __init__(self, registry: ToolRegistry, root: Path, files: Sequence[str], clients: Clients) -> None:
        self._registry = registry
        self._clients = clients
        self._paths = {path: root / path for path in dict.fromkeys(files)}
        self._stamps = {path: _stamp(full) for path, full in self._paths.items()}

    async def run(self) -> None:
        while True:
            await anyio.sleep(POLL_INTERVAL_SEC)
            await self.check()

    async def check(self) -> bool:
        """Reload each changed file; True when any did and the clients were told."""
        changed = False
        for path, full in self._paths.items():
            stamp = _stamp(full)
            if stamp == self._stamps[path]:
                continue
            self._stamps[path] = stamp
            changed = await self._reload(path) or changed
        if changed:
            await self._clients.tools_changed()
        return changed

    async def _reload(self, path: str) -> bool:
        try:
            specs = await self._registry.reload(path)
        except RegistrationError as exc:
            print(
                f"mini-agent mcp: {path} changed but does not register; its tools stay: {exc}",
                file=sys.stderr,
            )
            return False
        log.info("%s changed: serving %s", path, ", ".join(s.name for s in specs or []) or "no tools")
        return specs is not None


def _stamp(path: Path) -> Stamp:
    try:
        status = path.stat()
    except OSError:
        return None
    return status.st_mtime_ns, status.st_size
