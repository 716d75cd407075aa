"""One running MCP server: started and listed within one bound, stopped within another, contained.

Each connection lives in its own task because the SDK's transports and sessions are anyio context
managers that must be entered and left in one task. A stdio server runs under `reaper`'s warden in a
session of its own, so it and everything it starts (a `setsid` grandchild too) end when it stops or
the daemon dies. Its stdout is read through `stdio`'s bent transport (linear, bounded messages).
"""

from __future__ import annotations

import asyncio
import builtins
import contextlib
import importlib
import logging
import os
import signal
import sys
import threading
from collections import deque
from collections.abc import AsyncIterator, Callable, Iterator
from pathlib import Path
from typing import TYPE_CHECKING, Any

from mini_agent.plumbing.version import VERSION
from mini_agent.tools import reaper, sandbox
from mini_agent.tools.mcp.asking import Asking
from mini_agent.tools.mcp.config import HttpMcpServer, McpServer

if TYPE_CHECKING:
    import mcp_types as types
    from anyio.abc import Process
    from mcp.client.session import ClientSession, MessageHandlerFnT
    from mcp.shared.dispatcher import ProgressFnT

log = logging.getLogger("mini_agent.mcp")

MAX_LIST_PAGES = 32  # pages of one tools/list; past it the pages read so far are used
MAX_TOOLS = 128  # tools of one server (OpenAI's limit for a whole request); the first ones are used
_STDERR_LINES = 20
_STDERR_GRACE_SEC = 1.0
# The SDK's own shutdown (flush, close stdin, SIGTERM, SIGKILL) takes up to 6.5 s; then we cancel it.
_STOP_GRACE_SEC = 10.0
# What a start imports: the SDK and what of ours needs it (loaded off the event loop, see `load_sdk`).
_SDK = (
    "mcp_types",
    "mcp.shared.exceptions",
    "mcp.client.session",
    "mcp.client.stdio",
    "mcp.client.streamable_http",
    "jsonschema",
    "mini_agent.tools.mcp.auth",
    "mini_agent.tools.mcp.elicit",
    "mini_agent.tools.mcp.sdk_compat",
    "mini_agent.tools.mcp.stdio",
)
_importing = threading.Lock()  # one thread imports at a time: no two threads in one module's import


class StartFailed(Exception):
    """A server could not be started; the message names it and quotes its last stderr lines."""


Listing = tuple[builtins.list["types.Tool"], builtins.list[str]]  # tools, notes for the user


class Connection:
    """One running server: the SDK session, the task that holds it open, and its stderr tail."""

    def __init__(
        self,
        config: McpServer,
        root: Path,
        on_message: MessageHandlerFnT,
        on_exit: Callable[[], object],
        asking: Asking,
        *,
        confine: bool = True,
    ) -> None:
        self.config = config
        self._confine = confine
        self.asking = asking  # whom the server's requests to the person (elicitation, login) are for
        self._root = root
        self._on_message = on_message
        self._on_exit = on_exit  # called when a started server's stderr ends: it has exited
        self.exited = False
        self.lost: asyncio.Task[str] | None = None  # reporting its loss, once
        self.stderr: deque[str] = deque(maxlen=_STDERR_LINES)
        self.reason = ""  # why the transport cut the server off, when it did
        self._stderr_done: asyncio.Task[None] | None = None
        self._stop = asyncio.Event()
        self._phase = "initialize"
        self._process: Process | None = None
        self.session: ClientSession | None = None
        self.task: asyncio.Task[None] | None = None
        self._start_clock: asyncio.Timeout | None = None  # the start bound, held while a person signs in

    async def start(self) -> Listing:
        """Initialize and list the tools, within the server's `startTimeoutSec`; on any failure,
        timeout or cancellation the half-started server is stopped."""
        await load_sdk()
        ready: asyncio.Future[tuple[ClientSession, Listing]] = asyncio.get_running_loop().create_future()
        self.task = asyncio.create_task(self._run(ready), name=f"mcp:{self.config.name}")
        limit = self.config.start_timeout_sec
        try:
            async with asyncio.timeout(limit) as self._start_clock:
                self.session, listing = await asyncio.shield(ready)
        except BaseException as exc:
            self._start_clock = None
            await self.stop(cancel=True)
            if ready.done() and not ready.cancelled():
                ready.exception()  # read here: nobody else waits for it any more
            if isinstance(exc, asyncio.CancelledError):
                raise
            reason = self.reason or (
                f"no answer to {self._phase} within {limit:g} s (startTimeoutSec)"
                if isinstance(exc, TimeoutError)
                else describe(exc)
            )
            raise StartFailed(
                f"MCP server '{self.config.name}' could not start: {reason}{self.tail()}"
            ) from exc
        self._start_clock = None
        return listing

    async def call(
        self, tool: str, arguments: dict[str, Any], on_progress: ProgressFnT | None = None
    ) -> types.CallToolResult:
        """Call `tool`; with `on_progress`, a progress token goes with it and each report is handed over."""
        assert self.session is not None  # started
        return await self.session.call_tool(tool, arguments, progress_callback=on_progress)

    async def relist(self) -> Listing:
        assert self.session is not None  # started
        async with asyncio.timeout(self.config.start_timeout_sec):
            return await list_tools(self.session)

    @property
    def alive(self) -> bool:
        return self.task is not None and not self.task.done() and not self._stop.is_set() and not self.exited

    async def stop(self, *, cancel: bool = False) -> None:
        """Let the connection's task close the session and the transport (or cancel it: a server
        stuck in a request never lets it get there), each wait bounded; then end whatever is left."""
        self._stop.set()
        task = self.task
        if task is not None and not task.done():
            if cancel:
                task.cancel()
            done, _ = await asyncio.wait({task}, timeout=_STOP_GRACE_SEC)
            if not done:
                task.cancel()
                await asyncio.wait({task}, timeout=_STOP_GRACE_SEC)
        self._end_tree()
        await self.stderr_closed()

    async def stderr_closed(self) -> None:
        """Give an exiting server a moment to flush stderr, so a report can quote its last words."""
        if self._stderr_done is not None:
            with contextlib.suppress(TimeoutError, asyncio.CancelledError):
                await asyncio.wait_for(asyncio.shield(self._stderr_done), _STDERR_GRACE_SEC)

    def tail(self) -> str:
        return "" if not self.stderr else "\nLast stderr lines:\n" + "\n".join(self.stderr)

    def _end_tree(self) -> None:
        """Kill the warden's tree if the SDK's shutdown did not end it (the process is not reaped
        while `returncode` is None, so its pid is still its own)."""
        process = self._process
        if process is not None and process.returncode is None:
            reaper.kill_tree(process.pid)
            with contextlib.suppress(ProcessLookupError, PermissionError):
                os.killpg(process.pid, signal.SIGKILL)

    async def _run(self, ready: asyncio.Future[tuple[ClientSession, Listing]]) -> None:
        import mcp_types as types
        from mcp.client.session import ClientSession

        from mini_agent.tools.mcp import elicit

        try:
            async with contextlib.AsyncExitStack() as stack:
                read, write = await stack.enter_async_context(self._transport())
                session = await stack.enter_async_context(
                    ClientSession(
                        read,
                        write,
                        message_handler=self._on_message,
                        elicitation_callback=elicit.callback(self.asking),
                        client_info=types.Implementation(name="mini-agent", version=VERSION),
                    )
                )
                await session.initialize()
                self._phase = "tools/list"
                ready.set_result((session, await list_tools(session)))
                await self._stop.wait()
        except BaseException as exc:  # anyio wraps transport faults in groups; the caller sees one
            if not ready.done():
                ready.set_exception(exc if isinstance(exc, Exception) else ConnectionError(repr(exc)))
            elif not self._stop.is_set():
                log.warning("MCP server '%s' connection ended: %s", self.config.name, describe(exc))
            if isinstance(exc, asyncio.CancelledError):
                raise
        else:
            if not ready.done():  # pragma: no cover - initialize either answers or raises
                ready.set_exception(ConnectionError("closed"))

    @contextlib.asynccontextmanager
    async def _transport(self) -> AsyncIterator[Any]:
        from mcp.client.stdio import StdioServerParameters, stdio_client
        from mcp.client.streamable_http import streamable_http_client

        from mini_agent.tools.mcp import auth, sdk_compat, stdio

        config = self.config
        if isinstance(config, HttpMcpServer):
            headers = {h.name: h.value for h in config.headers}
            signer = auth.provider(config, self.asking, self._off_clock)
            async with (
                sdk_compat.http_client(headers, signer) as client,
                streamable_http_client(config.url, http_client=client) as streams,
            ):
                yield streams
            return
        stdio.install()
        stdio.spawned.set(self._spawned)  # this task's context: the spawn below reads it
        read_fd, write_fd = os.pipe()
        errlog = os.fdopen(write_fd, "w")
        self._stderr_done = asyncio.create_task(self._read_stderr(read_fd))
        confinement = None
        if self._confine:
            # the SDK hands a server no TMPDIR of ours: its temp folder is its entry's, else /tmp
            temp = next((e.value for e in config.env if e.name == "TMPDIR"), None) or "/tmp"
            confinement = sandbox.for_server(
                self._root.resolve(), temp, network=config.network, writable=tuple(config.writable)
            ).to_json()
        command = reaper.warden_command([config.command, *config.args], confine=confinement)
        params = StdioServerParameters(
            command=command[0],
            args=command[1:],
            env={e.name: e.value for e in config.env},
            cwd=self._root,
            encoding_error_handler="replace",  # a stray byte spoils one string, not the connection
        )
        try:
            async with stdio_client(params, errlog=errlog) as streams:
                errlog.close()  # the server holds its own copy; EOF then means it has gone
                yield streams
        finally:
            errlog.close()

    @contextlib.contextmanager
    def _off_clock(self) -> Iterator[None]:
        """The start bound stops while a person signs in (a sign-in has its own bound)."""
        clock, loop = self._start_clock, asyncio.get_running_loop()
        deadline = clock.when() if clock is not None else None
        if clock is None or deadline is None or clock.expired():
            yield
            return
        left = deadline - loop.time()
        clock.reschedule(None)
        try:
            yield
        finally:
            clock.reschedule(loop.time() + left)

    def _spawned(self, process: Process) -> Callable[[str], None]:
        self._process = process
        return self._cut_off

    def _cut_off(self, reason: str) -> None:
        self.reason = reason
        log.warning("MCP server '%s' cut off: %s", self.config.name, reason)

    async def _read_stderr(self, fd: int) -> None:
        """Forward the server's stderr to our log line by line, keeping the last lines for reports."""
        loop = asyncio.get_running_loop()
        reader = asyncio.StreamReader()
        transport, _ = await loop.connect_read_pipe(
            lambda: asyncio.StreamReaderProtocol(reader), os.fdopen(fd, "rb", 0)
        )
        try:
            while line := await reader.readline():
                text = line.decode(errors="replace").rstrip()
                self.stderr.append(text)
                log.info("[%s] %s", self.config.name, text)
        finally:
            transport.close()
        self.exited = True
        if self.session is not None and not self._stop.is_set():
            self._on_exit()


async def load_sdk() -> None:
    """Import the SDK in a thread: it is some 30 MiB of modules, most of a second to import (seconds on
    a busy machine), and a start runs in the background, so the daemon must answer meanwhile (a
    session's first turn, whose wait for this server is bounded, among others)."""
    if not all(name in sys.modules for name in _SDK):
        await asyncio.to_thread(_import_sdk)


def _import_sdk() -> None:
    with _importing:
        for name in _SDK:
            importlib.import_module(name)


async def list_tools(session: ClientSession) -> Listing:
    """The server's tools, page by page: at most `MAX_LIST_PAGES` pages and `MAX_TOOLS` tools (one
    more is kept, so the caller can tell the list was cut), with a note for each bound hit."""
    import mcp_types as types

    tools: builtins.list[types.Tool] = []
    cursor: str | None = None
    for _ in range(MAX_LIST_PAGES):
        page = await session.list_tools(
            params=types.PaginatedRequestParams(cursor=cursor) if cursor else None
        )
        tools += page.tools[: MAX_TOOLS + 1 - len(tools)]
        cursor = page.next_cursor
        if not cursor or len(tools) > MAX_TOOLS:
            return tools, []
    return tools, [f"its tool list goes on past {MAX_LIST_PAGES} pages (MAX_LIST_PAGES); the rest is ignored"]


def describe(exc: BaseException) -> str:
    """The innermost message of an (anyio-grouped) exception."""
    from mcp.shared.exceptions import MCPError

    while isinstance(exc, BaseExceptionGroup) and exc.exceptions:
        exc = exc.exceptions[0]
    if isinstance(exc, MCPError):
        return exc.error.message
    return f"{type(exc).__name__}: {exc}" if str(exc) else type(exc).__name__
