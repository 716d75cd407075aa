"""Daemon side of the tool host: a small pool of host subprocesses per workspace.

The daemon never imports workspace code; it only routes requests to `host_main` subprocesses and
turns their faults (exit, signal, hang, broken pipe, cancellation, running out of memory) into
results. Each host runs one request at a time; up to `max_hosts` hosts are started on demand so
parallel tool calls overlap. A host that dies or is killed is dropped and the next request starts a
fresh one, which re-loads the files it needs before its first call.

No process a tool starts outlives its call: the host ends its own descendants before each reply,
and killing a host (timeout, cancel, close) ends its whole tree, including children that left its
session (`setsid`) or double-forked (see `reaper`). A host is a warden process and the worker below
it that runs the tools, both child subreapers, so orphans stay below them: when the worker dies, or
the daemon does, the warden ends what was left. A host's end is noticed by its exit, not only by its
pipe closing, which a stray child may hold open. This holds against careless tools, not hostile
ones: a tool runs as the user and can, say, kill its warden first. Hosts get the daemon's environment
without the model's secrets (unless `inherit_secrets`) and a memory limit.
"""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
import fcntl
import os
import signal
import subprocess
import sys
import tempfile
from collections.abc import AsyncIterator, Callable, Collection, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any, TypeVar

from mini_agent.core.contracts import MAX_OUTPUT_BYTES, TOOL_TIMEOUT_SEC, ToolOptions
from mini_agent.core.expansion import GRANTED
from mini_agent.plumbing import tracecontext
from mini_agent.tools import protocol, reaper, sandbox
from mini_agent.tools.frames import FrameReader
from mini_agent.tools.live import CaptureTail, LiveOutput
from mini_agent.tools.protocol import CallRequest, CallResult, DescribedTool, LoadReply, LoadRequest

_PACKAGE_PARENT = str(Path(__file__).resolve().parents[2])
# `-P` keeps the workspace (the cwd) off sys.path while the host imports its own dependencies, so a
# workspace `json.py` cannot shadow them; host_main adds the workspace root afterwards. Our package
# goes at the end of sys.path: found when not installed, never shadowing anything when it is.
_BOOTSTRAP = (
    f"import sys; sys.path.append({_PACKAGE_PARENT!r}); "
    "from mini_agent.tools.host_main import main; sys.exit(main())"
)
_EXIT_GRACE_SEC = 2.0
# What the daemon itself, its CLI and editors read the model's key from.
SECRET_VARIABLES = frozenset({"OPENAI_API_KEY", "MINI_AGENT_API_KEY"})
R = TypeVar("R")  # the reply type a request expects
_DECORATED = ToolOptions()  # a load that sets nothing: names and descriptions come from the file


class LoadError(Exception):
    """A file could not be loaded or reflected; the message is meant for the client."""


class Unsendable(ValueError):
    """A request with no JSON form (a lone surrogate, say from a model's `\\udc80`); nothing was sent."""


class HostDied(Exception):
    """The host went away mid-request; the message says how (exit code, signal, closed pipe)."""

    def __init__(self, message: str, logs: str = "") -> None:
        super().__init__(message)
        self.logs = logs  # what the failed request printed before the host died


class _Exited(asyncio.SubprocessProtocol):
    def __init__(self) -> None:
        self.done: asyncio.Future[None] = asyncio.get_running_loop().create_future()

    def process_exited(self) -> None:
        if not self.done.done():
            self.done.set_result(None)


class _Worker:
    """One host subprocess and its pipes."""

    def __init__(
        self,
        transport: asyncio.SubprocessTransport,
        exited: _Exited,
        reader: FrameReader,
        request_fd: int,
        log_fd: int,
        max_output: int,
    ) -> None:
        self.transport = transport
        self.exited = exited
        self.reader = reader
        self.request_fd = request_fd
        self.log_fd = log_fd
        self.max_output = max_output
        self.loaded: dict[str, int] = {}  # path → the generation of the file this host has executed
        self.closed = False
        self.live: LiveOutput | None = None  # the running call's, while someone watches it
        self.pid = transport.get_pid()  # the worker's, once it has said it is ready
        self.confinement: sandbox.Confinement | None = None  # what its tools may touch (None: anything)
        exited.done.add_done_callback(lambda _: reader.hang_up())

    @classmethod
    async def start(cls, root: Path, settings: _Settings, confinement: sandbox.Confinement | None) -> _Worker:
        loop = asyncio.get_running_loop()
        request_r, request_w = os.pipe()
        reply_r, reply_w = os.pipe()
        log_fd = _capture_file()
        child_fds = (request_r, reply_w, log_fd)
        command = [
            settings.python, "-P", "-c", _BOOTSTRAP,
            "--request-fd", str(request_r), "--reply-fd", str(reply_w), "--log-fd", str(log_fd),
            "--max-output", str(settings.max_output), "--max-memory-mb", str(settings.max_memory_mb),
            "--parent", str(os.getpid()),
        ]  # fmt: skip
        if confinement is not None:
            command += ["--confine", confinement.to_json()]
        try:
            transport, exited = await loop.subprocess_exec(
                _Exited, *command,
                stdin=subprocess.DEVNULL, stdout=2, stderr=None,  # stray host output goes to our stderr
                cwd=root, pass_fds=child_fds, start_new_session=True, env=settings.env,
            )  # fmt: skip
        except BaseException:
            for fd in (request_r, request_w, reply_r, reply_w, log_fd):
                os.close(fd)
            raise
        os.close(request_r)
        os.close(reply_w)
        worker = cls(transport, exited, FrameReader(reply_r), request_w, log_fd, settings.max_output)
        timeout = settings.start_timeout
        try:
            worker.pid = (await worker.receive(protocol.Ready.of, timeout)).pid
        except BaseException as exc:
            # why it could not start, in its own words (the sandbox, say), read before the kill closes it
            said = (exc.logs if isinstance(exc, HostDied) else worker.logs()).strip()
            worker.kill()
            if isinstance(exc, HostDied | TimeoutError):
                reason = str(exc) or f"no answer within {timeout:g} s"
                said = f": {said}" if said else ""
                raise HostDied(f"the tool host could not start ({reason}){said}") from exc
            raise
        return worker

    async def request(
        self, message: protocol.Request, reply: Callable[[dict[str, Any]], R], timeout: float
    ) -> R:
        """Send one request and wait up to `timeout` for its `reply` (TimeoutError past it)."""
        try:
            frame = protocol.encode(message)
        except ValueError as exc:
            raise Unsendable(str(exc)) from None
        try:
            _write_all(self.request_fd, frame)
        except OSError as exc:
            raise await self._died(await self._exit_description()) from exc
        return await self.receive(reply, timeout)

    async def receive(self, reply: Callable[[dict[str, Any]], R], timeout: float) -> R:
        """The reply, within `timeout`; progress frames before it go to the running call's `live`."""
        loop = asyncio.get_running_loop()
        deadline = loop.time() + timeout
        try:
            while protocol.is_progress(frame := await self.reader.frame(deadline - loop.time())):
                report = protocol.read(frame, protocol.Progress.of)
                if self.live is not None:  # else a stray thread of an earlier call: dropped
                    self.live.progress(report.message, report.fraction)
            return protocol.read(frame, reply)
        except EOFError as exc:
            raise await self._died(await self._exit_description()) from exc
        except protocol.ProtocolError as exc:
            raise await self._died(f"the tool host broke the protocol ({exc})") from exc

    @contextlib.asynccontextmanager
    async def watched(self, live: LiveOutput | None) -> AsyncIterator[None]:
        """While the body runs, what the call prints and reports streams to `live`."""
        if live is None:
            yield
            return
        os.ftruncate(self.log_fd, 0)  # the host is idle: the last request's logs go, this call's come
        tail = CaptureTail(self.log_fd, live)
        self.live = live
        follower = asyncio.create_task(tail.follow())
        try:
            yield
        finally:
            follower.cancel()
            self.live = None
            if not self.closed:
                tail.read()
            live.close()

    def logs(self) -> str:
        """What the current request printed so far, read straight from the capture file."""
        if self.closed:
            return ""
        try:
            return protocol.read_log(self.log_fd, self.max_output)
        except OSError:
            return ""

    def kill(self) -> None:
        """Kill the host and everything it started, then close our ends."""
        if self.closed:
            return
        self.closed = True
        if self.transport.get_returncode() is None:
            pid = self.transport.get_pid()
            reaper.kill_tree(pid)
            with contextlib.suppress(ProcessLookupError, PermissionError):
                os.killpg(pid, signal.SIGKILL)
            # Closing now would poll() and may reap the child under asyncio's own watcher.
            self.exited.done.add_done_callback(lambda _: self.transport.close())
        else:
            self.transport.close()
        self.reader.close()
        os.close(self.request_fd)
        os.close(self.log_fd)

    async def stop(self) -> None:
        self.kill()
        with contextlib.suppress(TimeoutError):
            await asyncio.wait_for(asyncio.shield(self.exited.done), _EXIT_GRACE_SEC)

    async def _died(self, description: str) -> HostDied:
        died = HostDied(description, self.logs())
        self.kill()
        return died

    async def _exit_description(self) -> str:
        """Wait briefly for the exit status, so the message can name the code or signal."""
        try:
            await asyncio.wait_for(asyncio.shield(self.exited.done), _EXIT_GRACE_SEC)
        except TimeoutError:
            return "the tool host closed its pipe"
        code = self.transport.get_returncode()
        if code is not None and code < 0:
            return f"the tool host was killed by signal {_signal_name(-code)}"
        return f"the tool host exited with code {code}"


class ToolHost:
    """Runs workspace functions in host subprocesses (a pool of 1..max_hosts, started on demand)."""

    def __init__(
        self,
        workspace_root: Path,
        *,
        max_output_bytes: int = MAX_OUTPUT_BYTES,
        max_hosts: int = 4,
        python: str = sys.executable,
        start_timeout_sec: float = 60.0,
        max_memory_mb: int = 1024,
        inherit_secrets: bool = False,
        secret_values: Collection[str] = (),
        confine: bool = True,
    ) -> None:
        self._root = Path(workspace_root)
        env = os.environ if inherit_secrets else tool_environment(os.environ, secret_values)
        self._settings = _Settings(python, max_output_bytes, max_memory_mb, start_timeout_sec, dict(env))
        self._slots = asyncio.Semaphore(max_hosts)
        self._max_hosts = max_hosts
        self.confine = confine  # False: every host runs unconfined (the user's own `tools.sandbox = "off"`)
        self._idle: list[_Worker] = []
        self._busy: set[_Worker] = set()
        self._generation: dict[str, int] = {}

    async def load(
        self,
        path: Path,
        *,
        function: str | None = None,
        options: ToolOptions = _DECORATED,
        timeout: float = TOOL_TIMEOUT_SEC,
    ) -> tuple[DescribedTool, ...]:
        """Execute `path` afresh in a host and describe its tools (`options` names and describes a
        single `function`); other hosts follow lazily."""
        key = str(path)
        request = LoadRequest(key, function, options.name, options.description)
        loading = self._confinement(read_only=False, open_world=False)  # a file's own code, as a call runs
        try:
            async with self._lease(loading) as worker:
                worker.loaded.pop(key, None)  # even a failed load has replaced the module there
                reply = await worker.request(request, LoadReply.of, timeout)
                if reply.error is None:
                    generation = self._generation.get(key, 0) + 1
                    self._generation[key] = generation
                    worker.loaded[key] = generation
        except TimeoutError:
            raise LoadError(f"importing {path.name} timed out after {timeout:g} s") from None
        except HostDied as exc:
            raise LoadError(f"{exc} while importing {path.name}") from exc
        except Unsendable as exc:
            raise LoadError(f"cannot register {path.name}: {exc}") from None
        if reply.error is not None:
            raise LoadError(reply.error)
        return reply.tools

    async def call(
        self,
        path: Path,
        function: str,
        *,
        tool_name: str,
        arguments: Any,
        timeout: float,
        hints: Mapping[str, bool] | None = None,
    ) -> CallResult:
        """Run one function, confined as its `hints` (`readOnlyHint`, `openWorldHint`) declare; every
        fault becomes an error result. Cancellation kills the host."""
        key = str(path)
        declared = hints or {}
        confinement = self._confinement(
            read_only=declared.get("readOnlyHint"), open_world=declared.get("openWorldHint")
        )
        granted = GRANTED.get()  # a person's grant for this call alone (`core.expansion`)
        if confinement is not None and granted is not None:
            confinement = sandbox.expanded(confinement, granted)
        try:
            async with self._lease(confinement) as worker:
                generation = self._generation.get(key, 0)
                stale = worker.loaded.get(key, 0) != generation
                traceparent = tracecontext.TRACEPARENT.get()
                request = CallRequest(key, function, tool_name, arguments, stale, traceparent)
                try:
                    async with worker.watched(LiveOutput.for_running_call()):
                        reply = await worker.request(request, CallResult.of, timeout)
                except TimeoutError:
                    logs = worker.logs()
                    await worker.stop()
                    return CallResult(f"{tool_name} timed out after {timeout:g} s", True, False, logs)
                except HostDied as exc:
                    return CallResult(f"{tool_name} crashed: {exc}", True, False, exc.logs)
                except Unsendable as exc:
                    return CallResult(f"Invalid arguments for {tool_name}: {exc}", True)
                worker.loaded[key] = generation
        except HostDied as exc:  # the host could not even start
            return CallResult(f"cannot run {tool_name}: {exc}", True)
        if confinement is not None and reply.is_error:
            expansion = sandbox.expansion_for(reply.output, confinement)
            return dataclasses.replace(sandbox.explained(reply, confinement), expansion=expansion)
        return reply

    async def aclose(self) -> None:
        workers = [*self._idle, *self._busy]
        self._idle.clear()
        self._busy.clear()
        await asyncio.gather(*(w.stop() for w in workers))

    @property
    def running(self) -> int:
        """How many host processes are alive (idle or busy)."""
        return len(self._idle) + len(self._busy)

    @property
    def pids(self) -> list[int]:
        """The process ids of the live hosts' workers, which run the tools (for diagnostics, benchmarks)."""
        return [w.pid for w in (*self._idle, *self._busy)]

    def _confinement(self, *, read_only: bool | None, open_world: bool | None) -> sandbox.Confinement | None:
        if not self.confine:
            return None
        temp = self._settings.env.get("TMPDIR") or tempfile.gettempdir()  # what the host's Python will use
        return sandbox.for_tool(self._root.resolve(), temp, read_only=read_only, open_world=open_world)

    @contextlib.asynccontextmanager
    async def _lease(self, confinement: sandbox.Confinement | None) -> AsyncIterator[_Worker]:
        """One host for one request: an idle one confined the same way, or a new one while fewer than
        max_hosts run (an idle host confined otherwise makes room)."""
        async with self._slots:
            worker = next((w for w in reversed(self._idle) if w.confinement == confinement), None)
            if worker is not None:
                self._idle.remove(worker)
            else:
                if self._idle and len(self._idle) + len(self._busy) >= self._max_hosts:
                    self._idle.pop(0).kill()  # the least recently used
                worker = await self._start(confinement)
            self._busy.add(worker)
            try:
                yield worker
            except BaseException:
                worker.kill()  # its state is unknown (cancelled or broken mid-request)
                raise
            finally:
                self._busy.discard(worker)
                if worker.transport.get_returncode() is not None:
                    worker.kill()
                if not worker.closed:
                    self._idle.append(worker)

    async def _start(self, confinement: sandbox.Confinement | None) -> _Worker:
        worker = await _Worker.start(self._root, self._settings, confinement)
        worker.confinement = confinement
        return worker


@dataclass(frozen=True, slots=True)
class _Settings:
    python: str
    max_output: int
    max_memory_mb: int  # 0: no limit
    start_timeout: float
    env: dict[str, str]


def tool_environment(environ: Mapping[str, str], secret_values: Collection[str]) -> dict[str, str]:
    """`environ` without the model's key: the variables it is read from, and any holding its value."""
    hidden = {value for value in secret_values if value}
    return {
        name: value for name, value in environ.items() if name not in SECRET_VARIABLES and value not in hidden
    }


def _capture_file() -> int:
    """An anonymous O_APPEND file shared with the host, so logs survive the host's crash."""
    with tempfile.TemporaryFile(prefix="mini-agent-tool-") as handle:
        fd = os.dup(handle.fileno())
    fcntl.fcntl(fd, fcntl.F_SETFL, fcntl.fcntl(fd, fcntl.F_GETFL) | os.O_APPEND)
    return fd


def _write_all(fd: int, data: bytes) -> None:
    view = memoryview(data)
    while view:
        view = view[os.write(fd, view) :]


def _signal_name(number: int) -> str:
    try:
        return signal.Signals(number).name
    except ValueError:
        return str(number)
