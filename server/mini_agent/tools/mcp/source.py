"""MCP servers as a tool source: their lifecycles, their tools under our names, and calls to them.

A server starts when a session first names it and is shared by every session that names the same
configuration; it stops when the last of them lets go (and at shutdown). A server that cannot start
or dies is reported to the sessions using it with its last stderr lines; the next call starts it
again. Each connection lives in its own task because the SDK's transports and sessions are
anyio context managers that must be entered and left in one task. The SDK (`mcp`, `mcp_types`: some
30 MiB and most of a second) is imported when the first server starts, not with the daemon.
"""

from __future__ import annotations

import asyncio
import builtins
import contextlib
import logging
import os
from collections import deque
from collections.abc import AsyncIterator, Callable, Collection, Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from mini_agent import __version__
from mini_agent.core.contracts import ToolCall, ToolSpec
from mini_agent.tools.mcp.config import HttpMcpServer, McpServer
from mini_agent.tools.mcp.convert import inline_refs, result_text, tool_name
from mini_agent.tools.protocol import CallResult, cap_text
from mini_agent.tools.registry import RegistrationError
from mini_agent.tools.validation import invalid_arguments

if TYPE_CHECKING:
    import mcp_types as types
    from jsonschema import Draft202012Validator
    from mcp.client.session import ClientSession, IncomingMessage, MessageHandlerFnT

log = logging.getLogger("mini_agent.mcp")

Report = Callable[[str, str], None]  # (session id, message): a status line for one session
_STDERR_LINES = 20
_STDERR_GRACE_SEC = 1.0
_START_TIMEOUT_SEC = 60.0


class StartFailed(Exception):
    """A server could not be started; the message names it and quotes its last stderr lines."""


@dataclass(frozen=True, slots=True)
class _Tool:
    server: str  # the configuration key
    remote: str  # the tool's name on the server
    spec: ToolSpec
    validator: Draft202012Validator


class _Connection:
    """One running server: the SDK session, the task that holds it open, and its stderr tail."""

    def __init__(
        self, config: McpServer, root: Path, on_message: MessageHandlerFnT, on_exit: Callable[[], object]
    ) -> None:
        self.config = config
        self._root = root
        self._on_message = on_message
        self._on_exit = on_exit  # called when a started server's stderr ends: it has exited
        self.exited = False
        self.lost: asyncio.Task[str] | None = None  # reporting its loss, once
        self.stderr: deque[str] = deque(maxlen=_STDERR_LINES)
        self._stderr_done: asyncio.Task[None] | None = None
        self._stop = asyncio.Event()
        self.session: ClientSession | None = None
        self.task: asyncio.Task[None] | None = None

    async def start(self) -> ClientSession:
        ready: asyncio.Future[ClientSession] = asyncio.get_running_loop().create_future()
        self.task = asyncio.create_task(self._run(ready), name=f"mcp:{self.config.name}")
        try:
            async with asyncio.timeout(_START_TIMEOUT_SEC):
                self.session = await asyncio.shield(ready)
        except BaseException as exc:
            await self.stop()
            if isinstance(exc, asyncio.CancelledError):
                raise
            reason = "no answer to initialize" if isinstance(exc, TimeoutError) else _describe(exc)
            raise StartFailed(
                f"MCP server '{self.config.name}' could not start: {reason}{self.tail()}"
            ) from exc
        return self.session

    async def call(self, tool: str, arguments: dict[str, Any]) -> types.CallToolResult:
        assert self.session is not None  # started
        return await self.session.call_tool(tool, arguments)

    @property
    def alive(self) -> bool:
        return self.task is not None and not self.task.done() and not self._stop.is_set() and not self.exited

    async def stop(self) -> None:
        self._stop.set()
        if self.task is not None:
            with contextlib.suppress(BaseException):
                await self.task
        await self.stderr_closed()

    async def stderr_closed(self) -> None:
        """Give an exiting server a moment to flush stderr, so a report can quote its last words."""
        if self._stderr_done is not None:
            with contextlib.suppress(TimeoutError, asyncio.CancelledError):
                await asyncio.wait_for(asyncio.shield(self._stderr_done), _STDERR_GRACE_SEC)

    def tail(self) -> str:
        return "" if not self.stderr else "\nLast stderr lines:\n" + "\n".join(self.stderr)

    async def _run(self, ready: asyncio.Future[ClientSession]) -> None:
        import mcp_types as types
        from mcp.client.session import ClientSession

        try:
            async with contextlib.AsyncExitStack() as stack:
                read, write = await stack.enter_async_context(self._transport())
                session = await stack.enter_async_context(
                    ClientSession(
                        read,
                        write,
                        message_handler=self._on_message,
                        client_info=types.Implementation(name="mini-agent", version=__version__),
                    )
                )
                await session.initialize()
                ready.set_result(session)
                await self._stop.wait()
        except BaseException as exc:  # anyio wraps transport faults in groups; the caller sees one
            if not ready.done():
                ready.set_exception(exc if isinstance(exc, Exception) else ConnectionError(repr(exc)))
            elif not self._stop.is_set():
                log.warning("MCP server '%s' connection ended: %s", self.config.name, _describe(exc))
            if isinstance(exc, asyncio.CancelledError):
                raise
        else:
            if not ready.done():  # pragma: no cover - initialize either answers or raises
                ready.set_exception(ConnectionError("closed"))

    @contextlib.asynccontextmanager
    async def _transport(self) -> AsyncIterator[Any]:
        from mcp.client.stdio import StdioServerParameters, stdio_client
        from mcp.client.streamable_http import streamable_http_client
        from mcp.shared._httpx_utils import create_mcp_http_client

        config = self.config
        if isinstance(config, HttpMcpServer):
            headers = {h.name: h.value for h in config.headers}
            async with (
                create_mcp_http_client(headers=headers) as client,
                streamable_http_client(config.url, http_client=client) as streams,
            ):
                yield streams
            return
        read_fd, write_fd = os.pipe()
        errlog = os.fdopen(write_fd, "w")
        self._stderr_done = asyncio.create_task(self._read_stderr(read_fd))
        params = StdioServerParameters(
            command=config.command,
            args=config.args,
            env={e.name: e.value for e in config.env},
            cwd=self._root,
        )
        try:
            async with stdio_client(params, errlog=errlog) as streams:
                errlog.close()  # the server holds its own copy; EOF then means it has gone
                yield streams
        finally:
            errlog.close()

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


class _Server:
    """A configuration in use: its connection (None while stopped), its tools and its sessions."""

    def __init__(self, config: McpServer) -> None:
        self.config = config
        self.connection: _Connection | None = None
        self.tools: dict[str, _Tool] = {}  # our name → tool
        self.users: set[str] = set()
        self.lock = asyncio.Lock()


class McpSource:
    """All MCP servers of one daemon; see the module docstring."""

    def __init__(
        self,
        root: Path,
        *,
        timeout_sec: float,
        max_output_bytes: int,
        reserved: Callable[[], Collection[str]],
        report: Report,
        tools_changed: Callable[[], None],
    ) -> None:
        self._root = root
        self._timeout_sec = timeout_sec
        self._max_output = max_output_bytes
        self._reserved = reserved  # names other sources use
        self._report = report
        self._tools_changed = tools_changed
        self._servers: dict[str, _Server] = {}
        self._background: set[asyncio.Task[None]] = set()

    async def acquire(
        self, user: str, configs: Iterable[McpServer], problems: Callable[[str], None]
    ) -> builtins.list[ToolSpec]:
        """Start (or share) each server for `user` and return their tools.

        A server that cannot start is passed to `problems` and contributes no tools, so the session
        goes on with the rest; a name used by another configuration is refused.
        """
        specs: builtins.list[ToolSpec] = []
        for config in configs:
            key = config.model_dump_json()
            if any(k != key and s.config.name == config.name and s.users for k, s in self._servers.items()):
                raise RegistrationError(
                    f"an MCP server named '{config.name}' with another configuration is in use; rename one"
                )
            server = self._servers.setdefault(key, _Server(config))
            server.users.add(user)
            try:
                await self._connect(key, server)
            except StartFailed as exc:
                problems(str(exc))
                continue
            specs += [tool.spec for tool in server.tools.values()]
        return specs

    def rename(self, old: str, new: str) -> None:
        """Hand `old`'s servers to `new` (a session known only once its servers are up)."""
        for server in self._servers.values():
            if old in server.users:
                server.users.discard(old)
                server.users.add(new)

    async def release(self, session_id: str) -> None:
        """`session_id` no longer needs its servers; those nobody uses any more are stopped and their
        tools leave the list (a session naming such a server again starts it afresh)."""
        if await self._stop_unused(lambda server: server.users.discard(session_id)):
            self._tools_changed()

    def list(self) -> list[ToolSpec]:
        return [tool.spec for server in self._servers.values() for tool in server.tools.values()]

    def get(self, name: str) -> ToolSpec | None:
        tool = self._find(name)
        return tool.spec if tool is not None else None

    async def call(self, call: ToolCall, session_id: str, timeout: float) -> CallResult:
        tool = self._find(call.name)
        assert tool is not None  # the caller routes only our names here
        import mcp_types as types
        from mcp.shared.exceptions import MCPError

        problem = invalid_arguments(call.name, tool.validator, call.arguments, tool.spec.input_schema)
        if problem is not None:
            return CallResult(problem, True)
        server = self._servers[tool.server]
        try:
            connection = await self._connect(tool.server, server)
        except StartFailed as exc:
            self._report(session_id, str(exc))
            return CallResult(str(exc), True)
        try:
            async with asyncio.timeout(timeout):  # cancelling the request sends notifications/cancelled
                result = await connection.call(tool.remote, call.arguments)
        except TimeoutError:
            return CallResult(f"{call.name} timed out after {timeout:g} s", True)
        except MCPError as exc:
            if exc.code == types.CONNECTION_CLOSED:
                return CallResult(await self._lose(server, connection, session_id), True)
            return CallResult(
                f"{call.name} failed on MCP server '{server.config.name}': {exc.error.message}", True
            )
        output, truncated = cap_text(result_text(result), self._max_output)
        return CallResult(output, bool(result.is_error), truncated)

    async def aclose(self) -> None:
        for task in self._background:
            task.cancel()
        await self._stop_unused(lambda server: server.users.clear())

    async def _stop_unused(self, forget: Callable[[_Server], object]) -> bool:
        """Apply `forget` to every server, then stop and remove those nobody uses; True if that
        took tools off the list."""
        unused = []
        for key, server in builtins.list(self._servers.items()):
            forget(server)
            if not server.users:
                unused.append(self._servers.pop(key))
        await asyncio.gather(*(s.connection.stop() for s in unused if s.connection is not None))
        return any(s.tools for s in unused)

    async def _connect(self, key: str, server: _Server) -> _Connection:
        """The live session of `server`, starting it (and listing its tools) when it is not running."""
        async with server.lock:
            old = server.connection
            if old is not None and old.alive:
                return old
            if old is not None:
                await old.stop()
            server.connection = None

            async def on_message(message: IncomingMessage) -> None:
                await self._on_message(key, message)

            def on_exit() -> None:
                self._lose(server, fresh, None)

            fresh = _Connection(server.config, self._root, on_message, on_exit)
            session = await fresh.start()
            try:
                listed = await _list_tools(session)
            except Exception as exc:
                await fresh.stop()
                raise StartFailed(
                    f"MCP server '{server.config.name}' could not list its tools: {exc}"
                ) from exc
            server.connection = fresh
            if self._absorb(key, server, listed):
                self._tools_changed()
            return fresh

    def _lose(self, server: _Server, connection: _Connection, session_id: str | None) -> asyncio.Task[str]:
        """Drop a connection whose server went away and report it once, however it was noticed
        (its stderr ending, or a call failing with the connection closed)."""
        if connection.lost is None:
            connection.lost = asyncio.create_task(self._report_loss(server, connection, session_id))
        return connection.lost

    async def _report_loss(self, server: _Server, connection: _Connection, session_id: str | None) -> str:
        if server.connection is connection:
            server.connection = None
        await connection.stop()
        message = f"MCP server '{server.config.name}' stopped unexpectedly{connection.tail()}"
        for user in server.users or ({session_id} if session_id else set()):
            self._report(user, message)
        return message

    def _absorb(self, key: str, server: _Server, listed: builtins.list[types.Tool]) -> bool:
        """Install a listing under stable names; returns whether anything changed."""
        previous = {tool.remote: name for name, tool in server.tools.items()}
        taken = set(self._reserved()) | {n for k, s in self._servers.items() if k != key for n in s.tools}
        tools: dict[str, _Tool] = {}
        for remote in listed:
            name = previous.get(remote.name) or tool_name(server.config.name, remote.name, taken | set(tools))
            tools[name] = _tool(key, server.config, name, remote)
        changed = [t.spec for t in tools.values()] != [t.spec for t in server.tools.values()]
        server.tools = tools
        return changed

    async def _on_message(self, key: str, message: IncomingMessage) -> None:
        import mcp_types as types

        if isinstance(message, types.ToolListChangedNotification):
            task = asyncio.create_task(self._relist(key))  # not inline: the SDK's reader awaits us
            self._background.add(task)
            task.add_done_callback(self._background.discard)

    async def _relist(self, key: str) -> None:
        server = self._servers[key]
        connection = server.connection
        if connection is None or connection.session is None:
            return
        try:
            listed = await _list_tools(connection.session)
        except Exception as exc:
            log.warning("re-listing the tools of MCP server '%s' failed: %s", server.config.name, exc)
            return
        if self._absorb(key, server, listed):
            self._tools_changed()

    def _find(self, name: str) -> _Tool | None:
        for server in self._servers.values():
            if name in server.tools:
                return server.tools[name]
        return None


async def _list_tools(session: ClientSession) -> builtins.list[types.Tool]:
    import mcp_types as types

    tools: builtins.list[types.Tool] = []
    cursor: str | None = None
    while True:
        page = await session.list_tools(
            params=types.PaginatedRequestParams(cursor=cursor) if cursor else None
        )
        tools += page.tools
        cursor = page.next_cursor
        if not cursor:
            return tools


def _tool(key: str, config: McpServer, name: str, remote: types.Tool) -> _Tool:
    schema = inline_refs(remote.input_schema)
    hints = remote.annotations
    read_only = hints is not None and hints.read_only_hint is True
    spec = ToolSpec(
        name=name,
        description=remote.description or remote.title or remote.name,
        input_schema=schema,
        title=remote.title,
        requires_approval=config.requires_approval and not read_only,
        idempotent=hints is not None and hints.idempotent_hint is True,
        mcp_server=config.name,
        hints=tuple(sorted(_hints(hints).items())),
    )
    from jsonschema import Draft202012Validator  # with the first server, like the SDK

    return _Tool(key, remote.name, spec, Draft202012Validator(schema))


def _hints(annotations: types.ToolAnnotations | None) -> dict[str, bool]:
    """The boolean hints the server set, by their MCP names; one it left out is not assumed."""
    if annotations is None:
        return {}
    given = annotations.model_dump(by_alias=True, exclude_none=True)
    return {name: value for name, value in given.items() if isinstance(value, bool)}


def _describe(exc: BaseException) -> str:
    """The innermost message of an (anyio-grouped) exception."""
    from mcp.shared.exceptions import MCPError

    while isinstance(exc, BaseExceptionGroup) and exc.exceptions:
        exc = exc.exceptions[0]
    if isinstance(exc, MCPError):
        return exc.error.message
    return f"{type(exc).__name__}: {exc}" if str(exc) else type(exc).__name__
