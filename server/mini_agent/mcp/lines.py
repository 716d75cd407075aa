"""The lines `mini-agent mcp` reads off stdin, checked before the MCP SDK's stdio reader sees them.

That reader drops, unanswered, every line it cannot take: one that is not JSON, one that is no
JSON-RPC 2.0 message (`"jsonrpc": "1.0"`, a numeric method, params that are not an object, an id
that is neither a string nor an integer), and one nested deeper than its JSON reader goes, so a
client waits forever. `CheckedLines` answers each of those here (id null when the line has no usable
id) and hands the SDK only the lines it reads. The rules and the answers are `plumbing.jsonrpc`'s,
the edge all three doors share; the SDK's own message models are checked after them:

    -32700  the line is not JSON
    -32600  Invalid Request: not a JSON-RPC 2.0 message; the message names the field
    -32602  Invalid params: a request whose params are not an object, or nest too deeply (named)
"""

from __future__ import annotations

import logging
from collections.abc import AsyncIterator
from typing import Any, Protocol

import anyio
import mcp_types as types
from mcp.shared.message import SessionMessage
from pydantic import ValidationError

from mini_agent.plumbing import jsonrpc
from mini_agent.plumbing.jsonrpc import JsonRpcError

log = logging.getLogger(__name__)


class Sender(Protocol):
    """The SDK's write stream, as far as a refusal needs it."""

    async def send(self, item: SessionMessage, /) -> None: ...


class CheckedLines:
    """An async iterator of stdin's lines for `mcp.server.stdio.stdio_server(stdin=...)`: a line the
    SDK would drop is answered on the SDK's own write stream (in order with its answers) and skipped."""

    def __init__(self, source: AsyncIterator[bytes]) -> None:
        self._source = source
        self._out: Sender | None = None
        self._ready = anyio.Event()

    def answer_with(self, write_stream: Sender) -> None:
        """The stream the SDK writes stdout from; refusals wait for it."""
        self._out = write_stream
        self._ready.set()

    def __aiter__(self) -> CheckedLines:
        return self

    async def __anext__(self) -> str:
        while True:
            line = (await self._source.__anext__()).decode("utf-8", "replace")
            if not line.strip():
                continue
            refusal = check(line)
            if refusal is None:
                return line
            log.info("refused a line: %s", refusal.error.message)
            await self._ready.wait()
            assert self._out is not None
            await self._out.send(SessionMessage(refusal))


def check(line: str) -> types.JSONRPCError | None:
    """The error that answers `line`, or None when the SDK's reader takes it."""
    try:
        message = jsonrpc.read(line, fallback=None)  # pydantic-core alone, as the SDK reads
    except JsonRpcError as refusal:
        return _error(refusal)
    try:
        types.jsonrpc_message_adapter.validate_python(message, by_name=False)
    except ValidationError as exc:
        where = "; ".join(f"{_dotted(e['loc'][1:])}: {e['msg']}" for e in exc.errors())
        return _error(JsonRpcError.invalid_request(where, jsonrpc.usable_id(message)))
    return None


def _dotted(loc: tuple[Any, ...]) -> str:
    return ".".join(map(str, loc)) or "message"


def _error(refusal: JsonRpcError) -> types.JSONRPCError:
    error = types.ErrorData(code=refusal.code, message=refusal.message, data=refusal.data)
    return types.JSONRPCError(jsonrpc="2.0", id=refusal.msg_id, error=error)
