"""MCP servers as a tool source: their lifecycles, their tools under our names, and calls to them.

A server starts when a session first names it, in the background (the session never waits for it:
`ready` is how long a first model turn does), and is shared by every session that names the same
configuration; it stops when the last of them lets go (and at shutdown), a start still under way too.
A server that cannot start or dies is reported to the sessions using it with its last stderr lines;
the next call starts it again. A server's lifecycle is `connection`'s; every size taken from it is
bounded here and there (pages, tools, schemas, descriptions, messages), a tool over a bound is left
out and the sessions told why. The SDK (`mcp`, `mcp_types`: some 30 MiB and most of a second) is
imported when the first server starts, not with the daemon.
"""

from __future__ import annotations

import asyncio
import functools
import logging
from collections.abc import Callable, Collection, Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from mini_agent.core.asking import Person
from mini_agent.core.contracts import ToolCall, ToolSpec
from mini_agent.tools.live import LiveOutput
from mini_agent.tools.mcp import elicit
from mini_agent.tools.mcp.asking import Asking
from mini_agent.tools.mcp.config import McpServer, server_key
from mini_agent.tools.mcp.connection import MAX_TOOLS, Connection, Listing, StartFailed
from mini_agent.tools.mcp.convert import SchemaRefused, inline_refs, result_content, tool_name
from mini_agent.tools.protocol import CallResult, cap_text
from mini_agent.tools.registry import RegistrationError
from mini_agent.tools.validation import invalid_arguments

if TYPE_CHECKING:
    import mcp_types as types
    from jsonschema import Draft202012Validator
    from mcp.client.session import IncomingMessage

log = logging.getLogger("mini_agent.mcp")

Report = Callable[[str, str], None]  # (session id, message): a status line for one session
MAX_DESCRIPTION_CHARS = 4096  # of a tool's description; a longer one is cut
# A call that keeps reporting progress may run this many times its timeout (each report restarts the
# timeout, never past the cap); one that stops reporting is cut when its timeout runs out.
MAX_TIMEOUT_FACTOR = 10
__all__ = ["McpSource", "StartFailed"]


@dataclass(frozen=True, slots=True)
class _Tool:
    server: str  # the configuration key
    remote: str  # the tool's name on the server
    spec: ToolSpec
    validator: Draft202012Validator


@dataclass(frozen=True, slots=True)
class _Wait:
    """One session waiting for one server's start (`take_up`), with that session's configuration."""

    config: McpServer
    task: asyncio.Task[None]


class _Server:
    """A configuration in use: its connection (None while stopped), the start under way (shared by
    everyone waiting for it), its tools and its sessions."""

    def __init__(self, config: McpServer, person: Person) -> None:
        self.config = config
        self.asking = Asking(person, config.name)
        self.connection: Connection | None = None
        self.starting: asyncio.Task[Connection] | None = None
        self.told: list[Callable[[str], None]] = []  # where those waiting for it hear of its listing
        self.tools: dict[str, _Tool] = {}  # our name → tool
        self.users: set[str] = set()
        self.relisting: asyncio.Task[None] | None = None  # one re-list in flight
        self.relist_again = False  # and at most one more asked for meanwhile


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
        person: Person,
        confine: bool = True,
    ) -> None:
        self._root = root
        self._confine = confine  # stdio servers run confined (their entry's `network`, `writable`)
        self._person = person  # asked for what a server asks of the person (`asking`)
        self._timeout_sec = timeout_sec
        self._max_output = max_output_bytes
        self._reserved = reserved  # names other sources use
        self._report = report
        self._tools_changed = tools_changed
        self._servers: dict[str, _Server] = {}
        self._background: set[asyncio.Task[None]] = set()
        self._waits: dict[str, list[_Wait]] = {}  # user → its waits for starts under way

    def take_up(self, user: str, configs: Iterable[McpServer], problems: Callable[[str], None]) -> None:
        """Share each server with `user`, starting in the background those not running, and return
        at once (`ready` waits for them; their tools join the list when they are up).

        A server that cannot start is passed to `problems` when its start fails (within its own
        `startTimeoutSec`) and contributes no tools; a name used by another configuration is refused
        before that server is taken up.
        """
        for config in configs:
            key = server_key(config)
            if any(k != key and s.config.name == config.name and s.users for k, s in self._servers.items()):
                raise RegistrationError(
                    f"an MCP server named '{config.name}' with another configuration is in use; rename one"
                )
            server = self._servers.setdefault(key, _Server(config, self._person))
            server.users.add(user)
            if server.connection is not None and server.connection.alive:
                continue
            waits = self._waits.setdefault(user, [])
            wait = _Wait(config, asyncio.create_task(self._wait(key, server, user, problems)))
            waits.append(wait)
            wait.task.add_done_callback(functools.partial(self._waited, user, wait))

    def starting(self, user: str) -> bool:
        """Whether a server `user` took up is still starting."""
        return bool(self._waits.get(user))

    async def ready(self, user: str, *, whole: bool = False) -> list[str]:
        """Wait for the servers `user` took up that are still starting, each at most its
        `firstTurnTimeoutSec` from now (with `whole`: until its start ends); the names of those
        still starting then. Nothing is cancelled: they go on starting."""
        waits = list(self._waits.get(user, ()))

        async def one(wait: _Wait) -> None:
            await asyncio.wait({wait.task}, timeout=None if whole else wait.config.first_turn_timeout_sec)

        if waits:
            await asyncio.gather(*(one(wait) for wait in waits))
        return [wait.config.name for wait in waits if not wait.task.done()]

    async def acquire(
        self, user: str, configs: Iterable[McpServer], problems: Callable[[str], None]
    ) -> list[ToolSpec]:
        """Start (or share) each server for `user`, wait for their starts to end, and return their
        tools; a cancelled acquire lets go of them (a start nobody else waits for is stopped)."""
        configs = list(configs)
        try:
            self.take_up(user, configs, problems)
            await self.ready(user, whole=True)
        except BaseException:
            await self.release(user)
            raise
        return self.tools_of(configs)

    def _waited(self, user: str, wait: _Wait, _: object) -> None:
        waits = self._waits.get(user)
        if waits is not None and wait in waits:
            waits.remove(wait)
            if not waits:
                del self._waits[user]

    def tools_of(self, configs: Iterable[McpServer]) -> list[ToolSpec]:
        """The tools of the servers `configs` describe, as far as they are listed yet."""
        keys = dict.fromkeys(server_key(config) for config in configs)
        return [tool.spec for key in keys if (s := self._servers.get(key)) for tool in s.tools.values()]

    async def release(self, session_id: str) -> None:
        """`session_id` no longer needs its servers; those nobody uses any more are stopped (a start
        under way too) and their tools leave the list (a session naming such a server again starts
        it afresh)."""
        for wait in self._waits.pop(session_id, []):
            wait.task.cancel()
        if await self._stop_unused(lambda server: server.users.discard(session_id)):
            self._tools_changed()

    def list_tools(self) -> list[ToolSpec]:
        return [tool.spec for server in self._servers.values() for tool in server.tools.values()]

    def get(self, name: str) -> ToolSpec | None:
        tool = self._find(name)
        return tool.spec if tool is not None else None

    async def call(self, call: ToolCall, session_id: str, timeout: float) -> CallResult:
        tool = self._find(call.name)
        assert tool is not None  # the caller routes only our names here
        problem = invalid_arguments(call.name, tool.validator, call.arguments, tool.spec.input_schema)
        if problem is not None:
            return CallResult(problem, True)
        server = self._servers[tool.server]
        with server.asking.calling(session_id):
            return await self._call(tool, server, call, session_id, timeout)

    async def _call(
        self, tool: _Tool, server: _Server, call: ToolCall, session_id: str, timeout: float
    ) -> CallResult:
        import mcp_types as types
        from mcp.shared.exceptions import MCPError

        try:
            connection = await self._connect(tool.server, server, lambda note: self._report(session_id, note))
        except StartFailed as exc:
            self._report(session_id, str(exc))
            return CallResult(str(exc), True)
        watch = _Watch(timeout, LiveOutput.for_running_call())
        try:
            async with asyncio.timeout(timeout) as watch.limit:  # cancelling it sends notifications/cancelled
                result = await connection.call(tool.remote, call.arguments, watch.progressed)
        except TimeoutError:
            return CallResult(f"{call.name} {watch.timed_out()}", True)
        except MCPError as exc:
            if exc.code == types.CONNECTION_CLOSED:
                return CallResult(await self._lose(server, connection, session_id), True)
            return CallResult(
                f"{call.name} failed on MCP server '{server.config.name}': {exc.error.message}", True
            )
        finally:
            watch.close()
        text, images = result_content(result)
        output, truncated = cap_text(text, self._max_output)
        if (unasked := elicit.unasked(server.asking, session_id)) is not None:
            return CallResult(f"{output}\n{unasked}", True, truncated)
        return CallResult(output, bool(result.is_error), truncated, images=images)

    async def aclose(self) -> None:
        for task in self._background:
            task.cancel()
        for waits in self._waits.values():
            for wait in waits:
                wait.task.cancel()
        self._waits.clear()
        await self._stop_unused(lambda server: server.users.clear())

    async def _stop_unused(self, forget: Callable[[_Server], object]) -> bool:
        """Apply `forget` to every server, then stop and remove those nobody uses (a start under way
        is cancelled, which stops its half-started server); True if that took tools off the list."""
        unused = []
        for key, server in list(self._servers.items()):
            forget(server)
            if not server.users:
                unused.append(self._servers.pop(key))
        starts = [s.starting for s in unused if s.starting is not None and not s.starting.done()]
        for start in starts:
            start.cancel()
        await asyncio.gather(*starts, return_exceptions=True)
        await asyncio.gather(*(s.connection.stop() for s in unused if s.connection is not None))
        return any(s.tools for s in unused)

    async def _wait(self, key: str, server: _Server, user: str, problems: Callable[[str], None]) -> None:
        """`user` waits for `server`'s start (a sign-in or question meanwhile may be put to it)."""
        with server.asking.starting(user):
            try:
                await self._connect(key, server, problems)
            except StartFailed as exc:
                problems(str(exc))

    async def _connect(self, key: str, server: _Server, tell: Callable[[str], None]) -> Connection:
        """The live session of `server`, starting it (and listing its tools) when it is not running;
        what its listing left out goes to `tell`. The start is one task shared by everyone waiting:
        one of them giving up (a cancelled call) does not end it for the others."""
        running = server.connection
        if running is not None and running.alive:
            return running
        start = server.starting
        if start is None or start.done():
            start = server.starting = asyncio.create_task(self._start(key, server))
            start.add_done_callback(_retrieved)
        server.told.append(tell)
        try:
            return await asyncio.shield(start)
        finally:
            server.told.remove(tell)

    async def _start(self, key: str, server: _Server) -> Connection:
        """Start `server` afresh and list its tools; what the listing left out is told to those
        waiting for it before the new list is announced."""
        old = server.connection
        if old is not None:
            await old.stop()
        server.connection = None

        async def on_message(message: IncomingMessage) -> None:
            self._on_message(key, message)

        def on_exit() -> None:
            self._lose(server, fresh, None)

        confine = self._confine
        fresh = Connection(server.config, self._root, on_message, on_exit, server.asking, confine=confine)
        listing = await fresh.start()
        server.connection = fresh
        changed, notes = self._absorb(key, server, listing)
        for tell in list(server.told):
            for note in notes:
                tell(note)
        if changed:
            self._tools_changed()
        return fresh

    def _lose(self, server: _Server, connection: Connection, session_id: str | None) -> asyncio.Task[str]:
        """Drop a connection whose server went away and report it once, however it was noticed
        (its stderr ending, or a call failing with the connection closed)."""
        if connection.lost is None:
            connection.lost = asyncio.create_task(self._report_loss(server, connection, session_id))
        return connection.lost

    async def _report_loss(self, server: _Server, connection: Connection, session_id: str | None) -> str:
        if server.connection is connection:
            server.connection = None
        await connection.stop()
        why = f": {connection.reason}" if connection.reason else ""
        message = f"MCP server '{server.config.name}' stopped unexpectedly{why}{connection.tail()}"
        for user in server.users or ({session_id} if session_id else set()):
            self._report(user, message)
        return message

    def _absorb(self, key: str, server: _Server, listing: Listing) -> tuple[bool, list[str]]:
        """Install a listing under stable names: whether anything changed, and a note for the user
        on each tool left out and each bound the listing hit."""
        listed, notes = listing
        name_of = server.config.name
        notes = [f"MCP server '{name_of}': {note}" for note in notes]
        if len(listed) > MAX_TOOLS:
            notes.append(
                f"MCP server '{name_of}' offers more than {MAX_TOOLS} tools (MAX_TOOLS); "
                f"only the first {MAX_TOOLS} are used"
            )
            listed = listed[:MAX_TOOLS]
        previous = {tool.remote: name for name, tool in server.tools.items()}
        taken = set(self._reserved()) | {n for k, s in self._servers.items() if k != key for n in s.tools}
        tools: dict[str, _Tool] = {}
        for remote in listed:
            name = previous.get(remote.name) or tool_name(name_of, remote.name, taken | set(tools))
            try:
                tools[name] = _tool(key, server.config, name, remote)
            except SchemaRefused as exc:
                notes.append(f"MCP server '{name_of}': tool '{remote.name[:100]}' left out: {exc}")
        changed = [t.spec for t in tools.values()] != [t.spec for t in server.tools.values()]
        server.tools = tools
        return changed, notes

    def _on_message(self, key: str, message: IncomingMessage) -> None:
        """A list_changed re-lists, never inline (the SDK's reader awaits us); a storm of them is one
        re-list in flight and at most one more after it."""
        import mcp_types as types

        server = self._servers.get(key)
        if server is None or not isinstance(message, types.ToolListChangedNotification):
            return
        if server.relisting is not None and not server.relisting.done():
            server.relist_again = True
            return
        task = asyncio.create_task(self._relist(key, server))
        server.relisting = task
        self._background.add(task)
        task.add_done_callback(self._background.discard)

    async def _relist(self, key: str, server: _Server) -> None:
        server.relist_again = True
        while server.relist_again and self._servers.get(key) is server:
            server.relist_again = False
            connection = server.connection
            if connection is None or connection.session is None:
                return
            try:
                listing = await connection.relist()
            except Exception as exc:
                log.warning("re-listing the tools of MCP server '%s' failed: %s", server.config.name, exc)
                return
            changed, notes = self._absorb(key, server, listing)
            for note in notes:
                for user in server.users:
                    self._report(user, note)
            if changed:
                self._tools_changed()

    def _find(self, name: str) -> _Tool | None:
        for server in self._servers.values():
            if name in server.tools:
                return server.tools[name]
        return None


def _retrieved(task: asyncio.Task[object]) -> None:
    """A start's failure is read by those waiting for it; with none left, it is not an unread error."""
    if not task.cancelled():
        task.exception()


def _tool(key: str, config: McpServer, name: str, remote: types.Tool) -> _Tool:
    """Our tool for `remote`; `SchemaRefused` when its input schema is over a bound. Annotations
    cannot lower the guard: a destructive tool asks even if also read-only."""
    schema = inline_refs(remote.input_schema)
    hints = remote.annotations
    read_only = hints is not None and hints.read_only_hint is True
    destructive = hints is not None and hints.destructive_hint is True
    trusted = config.requires_approval is not True or (read_only and not destructive)
    description = remote.description or remote.title or remote.name
    spec = ToolSpec(
        name=name,
        description=description[:MAX_DESCRIPTION_CHARS],
        input_schema=schema,
        title=remote.title,
        requires_approval=config.requires_approval == "always" or not trusted,
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


class _Watch:
    """One MCP call's timeout, restarted by each progress report up to `MAX_TIMEOUT_FACTOR` times
    the timeout, and its reports passed on as live output."""

    def __init__(self, timeout: float, live: LiveOutput | None) -> None:
        self._loop = asyncio.get_running_loop()
        self._timeout = timeout
        self._cap = timeout * MAX_TIMEOUT_FACTOR
        self._hard = self._loop.time() + self._cap
        self._live = live
        self._reports = 0
        self.limit: asyncio.Timeout | None = None

    async def progressed(self, progress: float, total: float | None, message: str | None) -> None:
        self._reports += 1
        if self.limit is not None:
            self.limit.reschedule(min(self._loop.time() + self._timeout, self._hard))
        if self._live is not None:
            fraction = progress / total if total else None
            if message is None and fraction is None:
                message = f"progress {progress:g}"
            self._live.progress(message, fraction)

    def timed_out(self) -> str:
        """Why the call was cut, for the model and the user."""
        if self._reports and self._loop.time() >= self._hard:
            return (
                f"timed out after {self._cap:g} s: it kept reporting progress, and a call that does "
                f"runs at most {MAX_TIMEOUT_FACTOR} times its timeout of {self._timeout:g} s"
            )
        if self._reports:
            return f"timed out: no progress report for {self._timeout:g} s"
        return f"timed out after {self._timeout:g} s"

    def close(self) -> None:
        if self._live is not None:
            self._live.close()
