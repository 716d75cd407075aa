"""The tool host: the only process where workspace code is imported, reflected and run.

Started by `host.ToolHost` (equivalent to `python -P -m mini_agent.tools.host_main ...`) with stdin
on /dev/null, the workspace root as cwd, and three inherited descriptors: the request pipe, the
reply pipe and the capture file. It serves one request at a time; anything a tool does to fd 1/2
lands in the capture file, so the daemon's stdout never sees it.

The process forks once: the parent (the warden) only waits, and the child (the worker) runs the
tools under the memory limit. Both are child subreapers. The worker ends whatever a request
started before it replies; the warden, when the worker dies or the daemon does (its parent-death
signal is SIGTERM), ends everything left below it and exits as the worker did.
"""

from __future__ import annotations

import argparse
import contextlib
import dataclasses
import faulthandler
import importlib.util
import inspect
import io
import itertools
import linecache
import os
import re
import resource
import signal
import sys
import threading
import traceback
import types
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any, BinaryIO

from mini_agent.core.contracts import MAX_OUTPUT_BYTES
from mini_agent.plumbing import tracecontext
from mini_agent.tools import progress, protocol, reaper
from mini_agent.tools.protocol import CallRequest, CallResult, DescribedTool, LoadReply, LoadRequest, Request
from mini_agent.tools.reflect import (
    ArgumentsError,
    ReflectedTool,
    ResultError,
    public_functions,
    reflect,
    render_result,
)
from mini_agent.tools.signature import ReflectionError

_LOADS = itertools.count(1)  # unique module names, also across Workspace instances
_OWN_DIR = str(Path(__file__).resolve().parent)


class LoadFailure(Exception):
    """A workspace file could not be imported or offers no such function."""


class Channel:
    """Blocking frame I/O on the private pipe pair; a tool's threads may send progress frames."""

    def __init__(self, read_fd: int, write_fd: int) -> None:
        self._in: BinaryIO = os.fdopen(read_fd, "rb")
        self._out = write_fd
        self._sending = threading.Lock()  # one frame at a time: a tool's progress, or the reply

    def receive(self) -> dict[str, Any] | None:
        header = self._in.read(protocol.HEADER.size)
        if len(header) < protocol.HEADER.size:
            return None
        body = self._in.read(protocol.frame_length(header))
        return protocol.decode(body)

    def send(self, message: protocol.Message) -> None:
        view = memoryview(protocol.encode(message))
        with self._sending:
            while view:
                view = view[os.write(self._out, view) :]

    def send_progress(self, message: str | None, fraction: float | None) -> None:
        self.send(protocol.Progress(message, fraction))


class Capture:
    """Points fd 1 and fd 2 (and so child processes) at the capture file while a tool runs."""

    def __init__(self, fd: int, limit: int) -> None:
        self._fd = fd
        self._limit = limit
        self._saved = (os.dup(1), os.dup(2))

    @contextmanager
    def active(self) -> Iterator[None]:
        if os.fstat(self._fd).st_size:
            os.ftruncate(self._fd, 0)  # the file is O_APPEND: writes restart at 0
        streams = sys.stdout, sys.stderr
        os.dup2(self._fd, 1)
        os.dup2(self._fd, 2)
        try:
            yield
        finally:
            _flush(sys.stdout, sys.stderr)
            if (sys.stdout, sys.stderr) != streams:  # the tool swapped them: flush and restore ours
                sys.stdout, sys.stderr = streams
                _flush(*streams)
            os.dup2(self._saved[0], 1)
            os.dup2(self._saved[1], 2)

    def take(self) -> str:
        return protocol.read_log(self._fd, self._limit)


class Workspace:
    """The workspace modules loaded in this host, each under a fresh unique module name."""

    def __init__(self) -> None:
        self._modules: dict[str, types.ModuleType] = {}
        self._tools: dict[tuple[str, str], ReflectedTool] = {}

    def load(self, path: str) -> types.ModuleType:
        """Execute the file afresh (no bytecode cache: a quick edit must never run stale code)."""
        stem = re.sub(r"\W", "_", Path(path).stem)
        name = f"mini_agent_workspace_{next(_LOADS)}_{stem}"
        spec = importlib.util.spec_from_file_location(name, path)
        if spec is None:
            raise LoadFailure(f"cannot import {path}")
        module = importlib.util.module_from_spec(spec)
        sys.modules[name] = module  # dataclasses and forward references look their module up here
        try:
            code = compile(Path(path).read_bytes(), path, "exec", dont_inherit=True)
            exec(code, module.__dict__)
        except BaseException as exc:
            del sys.modules[name]
            raise LoadFailure(_last_line(exc)) from exc
        linecache.checkcache(path)
        previous = self._modules.get(path)
        if previous is not None:
            sys.modules.pop(previous.__name__, None)
        self._modules[path] = module
        self._tools = {key: t for key, t in self._tools.items() if key[0] != path}
        return module

    def describe(
        self, path: str, function: str | None, name: str | None, description: str | None
    ) -> list[DescribedTool]:
        """One function or all public ones of a loaded file, described."""
        module = self._modules[path]
        chosen = [function] if function else list(public_functions(module))
        if not chosen:
            raise LoadFailure(f"{Path(path).name} defines no public functions")
        if (name or description) and len(chosen) > 1:
            raise LoadFailure(
                f"name/description can only be set for one function; {Path(path).name} defines "
                f"{len(chosen)}: {', '.join(chosen)} (pass function)"
            )
        tools = [self._reflect(path, fn, name, description) for fn in chosen]
        return [t.describe(path) for t in tools]

    def tool(self, path: str, function: str) -> ReflectedTool:
        cached = self._tools.get((path, function))
        return cached if cached is not None else self._reflect(path, function, None, None)

    def loaded(self, path: str) -> bool:
        return path in self._modules

    def _reflect(self, path: str, function: str, name: str | None, description: str | None) -> ReflectedTool:
        fn = self._function(path, function)
        try:
            reflected = reflect(fn, name=name, description=description)
        except ReflectionError as exc:
            raise LoadFailure(str(exc)) from exc
        self._tools[(path, function)] = reflected
        return reflected

    def _function(self, path: str, function: str) -> Callable[..., Any]:
        module = self._modules[path]
        fn = getattr(module, function, None)
        if not inspect.isfunction(fn):
            available = ", ".join(public_functions(module)) or "none"
            raise LoadFailure(
                f"{Path(path).name} has no function '{function}' (public functions: {available})"
            )
        return fn


class Host:
    """Answers load and call requests."""

    def __init__(self, capture: Capture, max_output: int, max_memory_mb: int = 0) -> None:
        self._capture = capture
        self._max_output = max_output
        self._max_memory_mb = max_memory_mb
        self._workspace = Workspace()

    def handle(self, request: Request) -> LoadReply | CallResult:
        if isinstance(request, LoadRequest):
            return self._load(request)
        return self._call(request)

    def unsendable(self, request: Request, exc: ValueError) -> LoadReply | CallResult:
        """The error reply for a reply that cannot be encoded."""
        problem = f"the tool host cannot send its reply: {_one_line(exc)}"
        if isinstance(request, CallRequest):
            return CallResult(f"{request.tool}: {problem}", True)
        return LoadReply(error=problem)

    def _load(self, request: LoadRequest) -> LoadReply:
        path = request.path
        with self._capture.active():
            try:
                self._workspace.load(path)
                tools = self._workspace.describe(path, request.function, request.name, request.description)
                reply = LoadReply(tuple(tools))
            except LoadFailure as exc:
                reply = LoadReply(error=str(exc))
        return dataclasses.replace(reply, logs=self._capture.take())

    def _call(self, request: CallRequest) -> CallResult:
        with self._capture.active(), _traced(request.traceparent):
            output, is_error, structured = self._run(request)
        output, truncated = protocol.cap_text(output, self._max_output)
        if truncated:  # a value too big for the text is too big for the structured copy as well
            structured = None
        return CallResult(output, is_error, truncated, self._capture.take(), structured)

    def _run(self, request: CallRequest) -> tuple[str, bool, dict[str, Any] | None]:
        """The result's text, whether it is an error, and its structured content (see `returns`)."""
        text, is_error, value = self._invoke(request)
        if is_error:
            return text, True, None
        try:
            tool = self._workspace.tool(request.path, request.function)
            return text, False, tool.structured(value)
        except ResultError as exc:  # the text stands; an MCP client that wants the structure is told
            print(f"{request.tool} {exc}", file=sys.stderr)
            return text, False, None

    def _invoke(self, request: CallRequest) -> tuple[str, bool, Any]:
        label, path = request.tool, request.path
        try:
            if request.reload or not self._workspace.loaded(path):
                self._workspace.load(path)
            tool = self._workspace.tool(path, request.function)
        except LoadFailure as exc:
            return f"cannot run {label}: {exc}", True, None
        try:
            value = tool.invoke(request.arguments)
            return _unicode_only(render_result(value)), False, value
        except ArgumentsError as exc:
            return f"Invalid arguments for {label}:\n{exc}", True, None
        except ResultError as exc:
            return f"{label} {exc}", True, None
        except SystemExit as exc:
            return f"{label} called sys.exit({exc.code!r})", True, None
        except BaseException as exc:
            if isinstance(exc, MemoryError) and self._max_memory_mb:
                return (
                    f"{label} ran out of memory (the limit is tools.maxMemoryMB = {self._max_memory_mb})",
                    True,
                    None,
                )
            _print_user_traceback(exc)
            return f"{label} raised {_one_line(exc)}", True, None


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="mini_agent.tools.host_main")
    parser.add_argument("--request-fd", type=int, required=True)
    parser.add_argument("--reply-fd", type=int, required=True)
    parser.add_argument("--log-fd", type=int, required=True)
    parser.add_argument("--max-output", type=int, default=MAX_OUTPUT_BYTES)
    parser.add_argument("--max-memory-mb", type=int, default=0)
    parser.add_argument("--parent", type=int, default=0)
    parser.add_argument("--confine", help="a sandbox.Confinement as JSON: applied before anything else")
    args = parser.parse_args(argv)
    fds = (args.request_fd, args.reply_fd, args.log_fd)
    for fd in fds:
        os.set_inheritable(fd, False)  # a tool's child must not keep our pipes open
    if args.confine is not None and not _confined(args.confine, args.log_fd):
        return 3
    # The warden: a subreaper that outlives the worker, so whatever a tool left behind when the
    # worker died (or the daemon did: SIGTERM) still has a parent that ends it.
    reaper.become_subreaper()
    signal.signal(signal.SIGTERM, reaper.raise_stop)
    _die_with_parent(args.parent, signal.SIGTERM)
    warden = os.getpid()
    worker = os.fork()
    if worker:
        for fd in fds:
            os.close(fd)  # the daemon must see EOF as soon as the worker is gone
        return _guard(worker)
    signal.signal(signal.SIGTERM, signal.SIG_DFL)
    _die_with_parent(warden, signal.SIGKILL)
    reaper.become_subreaper()  # a double-forked daemon stays below the worker, within reach
    if args.max_memory_mb:
        limit = args.max_memory_mb * 1024 * 1024
        # RLIMIT_DATA, not RLIMIT_AS: address space that is only reserved (a JVM's heap, WebAssembly
        # memories) does not count, so such programs still start under a tool.
        resource.setrlimit(resource.RLIMIT_DATA, (limit, limit))
    faulthandler.enable()  # a segfault's traceback goes to fd 2, i.e. into the capture file
    for stream in (sys.stdout, sys.stderr):
        if isinstance(stream, io.TextIOWrapper):
            stream.reconfigure(line_buffering=True)  # a tool's prints reach its live output line by line
    sys.path.insert(0, os.getcwd())  # the workspace root: tools may import their sibling modules
    channel = Channel(args.request_fd, args.reply_fd)
    progress.install(channel.send_progress)
    host = Host(Capture(args.log_fd, args.max_output), args.max_output, args.max_memory_mb)
    channel.send(protocol.Ready(os.getpid()))
    while (raw := channel.receive()) is not None:
        try:
            request = protocol.read(raw, protocol.request_of)
        except protocol.ProtocolError as exc:  # a request we do not know: say so, stay up
            channel.send(LoadReply(error=str(exc)))
            continue
        reply = host.handle(request)
        _end_descendants()  # before the reply: nothing a call started survives it
        try:
            channel.send(reply)
        except ValueError as exc:  # no JSON form, e.g. a lone surrogate in a tool's description
            channel.send(host.unsendable(request, exc))
    return 0


def _confined(argument: str, log_fd: int) -> bool:
    """Apply the confinement the daemon asked for (warden and worker alike); False, with the reason in
    the capture file for the daemon to quote, where the kernel cannot."""
    from mini_agent.tools import sandbox

    try:
        sandbox.apply(sandbox.Confinement.from_json(argument))
    except (sandbox.Unavailable, OSError) as exc:
        os.write(log_fd, str(exc).encode(errors="replace"))
        return False
    return True


def _guard(worker: int) -> int:
    """Wait for the worker, end everything left below this process, and exit as the worker did."""
    status = reaper.outlive(worker)
    if status is not None and os.WIFSIGNALED(status):
        number = os.WTERMSIG(status)
        with contextlib.suppress(OSError, ValueError):  # SIGKILL cannot be handled anyway
            signal.signal(number, signal.SIG_DFL)
        os.kill(os.getpid(), number)  # so the daemon can name the worker's signal
    return os.waitstatus_to_exitcode(status) if status is not None and os.WIFEXITED(status) else 1


@contextlib.contextmanager
def _traced(traceparent: str | None) -> Iterator[None]:
    """The call's trace context as `TRACEPARENT` while it runs (and the processes it starts), then gone."""
    if traceparent is None:
        yield
        return
    os.environ[tracecontext.ENV] = traceparent
    try:
        yield
    finally:
        os.environ.pop(tracecontext.ENV, None)


def _end_descendants() -> None:
    if reaper.has_children():
        reaper.kill_tree(os.getpid(), include_root=False)
        reaper.reap_children()


def _die_with_parent(parent: int, sig: signal.Signals) -> None:
    """Ask Linux to signal this process when its parent dies (best effort elsewhere)."""
    if reaper.die_with_parent(sig) and parent and os.getppid() != parent:
        os._exit(1)


def _unicode_only(text: str) -> str:
    """`text`, unless it holds a lone surrogate (say from `os.fsdecode`): the model and the client
    are sent UTF-8, which has no form for it, and silently replacing it would alter what the tool said."""
    try:
        text.encode()
    except UnicodeEncodeError as exc:
        bad = text[exc.start]
        raise ResultError(
            f"returned a string with a lone surrogate {bad!r} at index {exc.start}, which has no UTF-8 "
            "form (decode bytes with errors='replace' or return them as base64)"
        ) from None
    return text


def _flush(*streams: Any) -> None:
    for stream in streams:
        with contextlib.suppress(OSError, ValueError, AttributeError):
            stream.flush()


def _last_line(exc: BaseException) -> str:
    line = traceback.format_exception_only(type(exc), exc)[-1].strip()
    if isinstance(exc, SyntaxError) and exc.lineno:
        line += f" (line {exc.lineno})"
    return line


def _one_line(exc: BaseException) -> str:
    text = str(exc)
    return f"{type(exc).__name__}: {text}" if text else type(exc).__name__


def _print_user_traceback(exc: BaseException) -> None:
    """The traceback without the host's own frames, for the logs."""
    tb = exc.__traceback__
    while tb is not None and tb.tb_frame.f_code.co_filename.startswith(_OWN_DIR):
        tb = tb.tb_next
    traceback.print_exception(type(exc), exc, tb, file=sys.stderr)


if __name__ == "__main__":
    sys.exit(main())
