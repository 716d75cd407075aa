"""The tool host: the only process where workspace code is imported, reflected and run.

Started by `host.ToolHost` (equivalent to `python -P -m mini_agent.tools.host_main ...`) with stdin
on /dev/null, the workspace root as cwd, and three inherited descriptors: the request pipe, the
reply pipe and the capture file. It serves one request at a time; anything a tool does to fd 1/2
lands in the capture file, so the daemon's stdout never sees it.
"""

from __future__ import annotations

import argparse
import contextlib
import ctypes
import faulthandler
import importlib.util
import inspect
import itertools
import linecache
import os
import re
import signal
import sys
import traceback
import types
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any, BinaryIO

from mini_agent.contracts import MAX_OUTPUT_BYTES
from mini_agent.tools import protocol
from mini_agent.tools.reflect import (
    ArgumentsError,
    ReflectedTool,
    ReflectionError,
    ResultError,
    public_functions,
    reflect,
    render_result,
)

_PR_SET_PDEATHSIG = 1
_LOADS = itertools.count(1)  # unique module names, also across Workspace instances
_OWN_DIR = str(Path(__file__).resolve().parent)


class LoadFailure(Exception):
    """A workspace file could not be imported or offers no such function."""


class Channel:
    """Blocking frame I/O on the private pipe pair."""

    def __init__(self, read_fd: int, write_fd: int) -> None:
        self._in: BinaryIO = os.fdopen(read_fd, "rb")
        self._out = write_fd

    def receive(self) -> dict[str, Any] | None:
        header = self._in.read(protocol.HEADER.size)
        if len(header) < protocol.HEADER.size:
            return None
        body = self._in.read(protocol.frame_length(header))
        return protocol.decode(body)

    def send(self, message: dict[str, Any]) -> None:
        view = memoryview(protocol.encode(message))
        while view:
            view = view[os.write(self._out, view) :]


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
    ) -> list[Any]:
        """The tool dicts for one function or all public ones of a loaded file."""
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

    def __init__(self, capture: Capture, max_output: int) -> None:
        self._capture = capture
        self._max_output = max_output
        self._workspace = Workspace()

    def handle(self, request: dict[str, Any]) -> dict[str, Any]:
        op = request.get("op")
        if op == "load":
            return self._load(request)
        if op == "call":
            return self._call(request)
        return {"ok": False, "error": f"unknown request {op!r}"}

    def _load(self, request: dict[str, Any]) -> dict[str, Any]:
        path = request["path"]
        with self._capture.active():
            try:
                self._workspace.load(path)
                tools = self._workspace.describe(
                    path, request.get("function"), request.get("name"), request.get("description")
                )
                reply: dict[str, Any] = {"ok": True, "tools": tools}
            except LoadFailure as exc:
                reply = {"ok": False, "error": str(exc)}
        return {**reply, "logs": self._capture.take()}

    def _call(self, request: dict[str, Any]) -> dict[str, Any]:
        label = request["tool"]
        with self._capture.active():
            output, is_error = self._run(request, label)
        output, truncated = protocol.cap_text(output, self._max_output)
        return {"output": output, "isError": is_error, "truncated": truncated, "logs": self._capture.take()}

    def _run(self, request: dict[str, Any], label: str) -> tuple[str, bool]:
        path = request["path"]
        try:
            if request.get("reload") or not self._workspace.loaded(path):
                self._workspace.load(path)
            tool = self._workspace.tool(path, request["function"])
        except LoadFailure as exc:
            return f"cannot run {label}: {exc}", True
        try:
            return render_result(tool.invoke(request.get("arguments", {}))), False
        except ArgumentsError as exc:
            return f"Invalid arguments for {label}:\n{exc}", True
        except ResultError as exc:
            return f"{label} {exc}", True
        except SystemExit as exc:
            return f"{label} called sys.exit({exc.code!r})", True
        except BaseException as exc:
            _print_user_traceback(exc)
            return f"{label} raised {_one_line(exc)}", True


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="mini_agent.tools.host_main")
    parser.add_argument("--request-fd", type=int, required=True)
    parser.add_argument("--reply-fd", type=int, required=True)
    parser.add_argument("--log-fd", type=int, required=True)
    parser.add_argument("--max-output", type=int, default=MAX_OUTPUT_BYTES)
    parser.add_argument("--parent", type=int, default=0)
    args = parser.parse_args(argv)
    for fd in (args.request_fd, args.reply_fd, args.log_fd):
        os.set_inheritable(fd, False)  # a tool's child must not keep our pipes open
    _die_with_parent(args.parent)
    faulthandler.enable()  # a segfault's traceback goes to fd 2, i.e. into the capture file
    sys.path.insert(0, os.getcwd())  # the workspace root: tools may import their sibling modules
    channel = Channel(args.request_fd, args.reply_fd)
    host = Host(Capture(args.log_fd, args.max_output), args.max_output)
    channel.send({"ready": True, "pid": os.getpid()})
    while (request := channel.receive()) is not None:
        channel.send(host.handle(request))
    return 0


def _die_with_parent(parent: int) -> None:
    """Ask Linux to kill this host if the daemon dies (best effort elsewhere)."""
    try:
        ctypes.CDLL(None).prctl(_PR_SET_PDEATHSIG, signal.SIGKILL)
    except (OSError, AttributeError):
        return
    if parent and os.getppid() != parent:
        os._exit(1)


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
