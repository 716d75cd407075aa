"""The server's stdout, read as whole bounded lines, and lines too deep for the SDK's parser.

`mcp.client.stdio.stdio_client` is kept for its pipe tasks and its shutdown sequence; `install()` has
`sdk_compat` wrap two of its functions (bends 1 and 2 there). The session reads the server's stdout as
whole lines: found in linear time, each at most `MAX_MESSAGE_BYTES` (a longer one ends the connection,
naming the size). A message nested too deeply for the SDK's JSON parser (past
`plumbing.jsonrpc.MAX_DEPTH`, the depth rule the doors refuse by, which is within what that parser
reads) is read with Python's instead, and a listed tool whose input schema is nested deeper than
`MAX_SCHEMA_DEPTH` is marked (`OMITTED`) for the source to leave out, rather than the whole answer being
dropped: a server's answer is read leniently where a client's request at a door is refused.
"""

from __future__ import annotations

import contextvars
import json
import logging
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from anyio import ClosedResourceError
from anyio.abc import ByteReceiveStream, ByteSendStream, Process

from mini_agent.plumbing import jsonrpc
from mini_agent.tools.mcp.convert import MAX_SCHEMA_DEPTH, OMITTED, depth_over

if TYPE_CHECKING:
    import signal

    from mcp.shared.message import SessionMessage

log = logging.getLogger("mini_agent.mcp")

MAX_MESSAGE_BYTES = 32 * 1024 * 1024  # one JSON-RPC message from a server (a result, a page of tools)
_READ_BYTES = 65536

# Set by the connection around `stdio_client`: told of the process once spawned, with a way to
# record why its stdout was cut off.
spawned: contextvars.ContextVar[Callable[[Process], Callable[[str], None]] | None] = contextvars.ContextVar(
    "mini_agent_mcp_spawned", default=None
)


def install() -> None:
    """Read every stdio server's stdout through `Lines` and its lines through `parse_deep` (idempotent)."""
    from mini_agent.tools.mcp import sdk_compat

    sdk_compat.install_stdio_hooks(_framed_spawn, _deep_parse)


def _framed_spawn(create: Callable[..., Any]) -> Callable[..., Any]:
    async def create_framed(*args: Any, **kwargs: Any) -> Any:
        process = await create(*args, **kwargs)
        if not isinstance(process, Process):  # pragma: no cover - Windows' fallback process
            return process
        listener = spawned.get()
        problem = listener(process) if listener is not None else _log_problem
        return FramedProcess(process, problem)

    return create_framed


def _deep_parse(parse: Callable[[str], SessionMessage | Exception]) -> Callable[..., Any]:
    def parse_deep(line: str) -> SessionMessage | Exception:
        parsed = parse(line)
        if isinstance(parsed, Exception) and jsonrpc.too_deep(line):
            return _parse_deep(line, parsed)
        return parsed

    return parse_deep


def _log_problem(message: str) -> None:
    log.warning("%s", message)


class Lines(ByteReceiveStream):
    """Whole lines from `inner`: each chunk returned ends with a newline, so the SDK's partial-line
    buffer stays empty. A line over `limit` bytes is refused (`problem` is told, then the stream
    reads as closed)."""

    def __init__(self, inner: ByteReceiveStream, limit: int, problem: Callable[[str], None]) -> None:
        self._inner = inner
        self._limit = limit
        self._problem = problem
        self._buffer = bytearray()
        self._scanned = 0  # bytes of the buffer known to hold no newline
        self._broken = False

    async def receive(self, max_bytes: int = _READ_BYTES) -> bytes:
        while not self._broken:
            end = self._buffer.rfind(b"\n", self._scanned)
            if end >= 0:
                lines = bytes(self._buffer[: end + 1])
                del self._buffer[: end + 1]
                self._scanned = len(self._buffer)  # what is left is after the last newline
                return lines
            self._scanned = len(self._buffer)
            if self._scanned > self._limit:
                self._broken = True
                self._buffer.clear()
                self._problem(f"it sent a message over {self._limit} bytes (MAX_MESSAGE_BYTES)")
                break
            self._buffer += await self._inner.receive(max(max_bytes, _READ_BYTES))
        raise ClosedResourceError  # the SDK reads this as the stream closed under it, quietly

    async def aclose(self) -> None:
        await self._inner.aclose()


class FramedProcess(Process):
    """`process` with its stdout read through `Lines`; everything else is the process's own."""

    def __init__(self, process: Process, problem: Callable[[str], None]) -> None:
        from mini_agent.tools.mcp import sdk_compat

        self._inner = process
        self._process = sdk_compat.asyncio_process(process)  # the SDK closes its transport through it
        assert process.stdout is not None
        self._stdout = Lines(process.stdout, MAX_MESSAGE_BYTES, problem)

    async def aclose(self) -> None:
        await self._inner.aclose()

    async def wait(self) -> int:
        return await self._inner.wait()

    def terminate(self) -> None:
        self._inner.terminate()

    def kill(self) -> None:
        self._inner.kill()

    def send_signal(self, sig: signal.Signals) -> None:
        self._inner.send_signal(sig)

    @property
    def pid(self) -> int:
        return self._inner.pid

    @property
    def returncode(self) -> int | None:
        return self._inner.returncode

    @property
    def stdin(self) -> ByteSendStream | None:
        return self._inner.stdin

    @property
    def stdout(self) -> ByteReceiveStream | None:
        return self._stdout

    @property
    def stderr(self) -> ByteReceiveStream | None:
        return self._inner.stderr


def _parse_deep(line: str, error: Exception) -> SessionMessage | Exception:
    """`line` read with Python's parser; a listed tool whose schema is too deep gets an `OMITTED`
    schema saying why. `error` stands when the line is deeper still, or not a message after that."""
    import mcp_types as types
    from mcp.shared.message import SessionMessage

    try:
        message = json.loads(line)
    except (ValueError, RecursionError):
        return error
    result = message.get("result") if isinstance(message, dict) else None
    tools = result.get("tools") if isinstance(result, dict) else None
    for tool in tools if isinstance(tools, list) else ():
        if not isinstance(tool, dict):
            continue
        for key in ("inputSchema", "outputSchema"):
            if depth_over(tool.get(key), MAX_SCHEMA_DEPTH):
                reason = f"its {key} is nested deeper than {MAX_SCHEMA_DEPTH} levels (MAX_SCHEMA_DEPTH)"
                tool["inputSchema"] = {"type": "object", OMITTED: reason}
                tool.pop("outputSchema", None)
    try:
        return SessionMessage(types.jsonrpc_message_adapter.validate_python(message, by_name=False))
    except (ValueError, RecursionError):
        return error
