"""The lines `mini-agent mcp` reads off stdin, checked before the MCP SDK's stdio reader sees them.

That reader drops, unanswered, every line it cannot take: one that is not JSON, one that is no
JSON-RPC 2.0 message (`"jsonrpc": "1.0"`, a numeric method, params that are not an object, an id
that is neither a string nor a number), and one nested deeper than its JSON reader goes
(`DEPTH_LIMIT` levels), so a client waits forever. `CheckedLines` answers each of those here (id
null when the line has no usable id) and hands the SDK only the lines it reads:

    -32700  the line is not JSON
    -32600  Invalid Request: not a JSON-RPC 2.0 message; the message names the field
    -32602  Invalid params: a request whose params are not an object, or nest too deeply (named)
"""

from __future__ import annotations

import json
import logging
import re
from collections.abc import AsyncIterator
from typing import Any, Protocol

import anyio
import mcp_types as types
from mcp.shared.message import SessionMessage
from pydantic import ValidationError
from pydantic_core import from_json

log = logging.getLogger(__name__)

PARSE_ERROR = -32700
INVALID_REQUEST = -32600
INVALID_PARAMS = -32602
DEPTH_LIMIT = 200  # levels of nesting pydantic-core's JSON reader (the SDK's) takes; deeper is refused
KEPT_LEVELS = 8  # of a line nested too deeply, the levels read to find its id and the deep field
_DEEP = "\x00nested too deeply"  # what stands for a cut-off container that goes past DEPTH_LIMIT
# A JSON string (escapes included) or a bracket: what a depth count of a JSON text has to look at.
_TOKENS = re.compile(r'"(?:[^"\\]++|\\.)*+"|[\[\]{}]')


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
        message = from_json(line)
    except ValueError as exc:
        if "recursion limit" in str(exc):
            return _too_deep(line)
        return _error(None, PARSE_ERROR, f"Parse error: the line is not JSON ({exc})")
    msg_id = _id_of(message)
    problem = _not_jsonrpc(message)
    if problem is not None:
        return _error(msg_id, *problem)
    try:
        types.jsonrpc_message_adapter.validate_python(message, by_name=False)
    except ValidationError as exc:
        where = "; ".join(f"{_dotted(e['loc'][1:])}: {e['msg']}" for e in exc.errors())
        return _error(msg_id, INVALID_REQUEST, f"Invalid Request: {where}")
    return None


def _not_jsonrpc(message: Any) -> tuple[int, str] | None:
    """Why `message` is no JSON-RPC 2.0 message the SDK routes, with the code that says so."""
    if not isinstance(message, dict):
        kind = type(message).__name__
        return INVALID_REQUEST, f"Invalid Request: a JSON-RPC message is an object, not {kind}"
    if message.get("jsonrpc") != "2.0":
        return INVALID_REQUEST, 'Invalid Request: "jsonrpc" must be "2.0"'
    if "id" in message and _id_of(message) is None and not ("error" in message and message["id"] is None):
        return INVALID_REQUEST, "Invalid Request: id must be a string or an integer"
    if "method" in message and not isinstance(message["method"], str):
        return INVALID_REQUEST, "Invalid Request: method must be a string"
    if "method" not in message and "id" not in message:
        return INVALID_REQUEST, "Invalid Request: neither a request, a notification nor a response"
    params = message.get("params")
    if "method" in message and params is not None and not isinstance(params, dict):
        return INVALID_PARAMS, f"Invalid params: params must be an object, not {type(params).__name__}"
    return None


def _too_deep(line: str) -> types.JSONRPCError:
    """A line the SDK's reader stops in: its id and the deep field are read from a copy of it that
    keeps `KEPT_LEVELS` levels (the JSON readers at hand all recurse, so the whole is never read)."""
    try:
        shallow = json.loads(_cut(line))
    except (ValueError, RecursionError) as exc:
        return _error(None, PARSE_ERROR, f"Parse error: the line is not JSON ({exc})")
    msg_id = _id_of(shallow)
    where = _path_to(shallow, _DEEP) or "message"
    text = f"{where} nests deeper than {DEPTH_LIMIT} levels"
    if isinstance(shallow, dict) and isinstance(shallow.get("method"), str) and where.startswith("params"):
        return _error(msg_id, INVALID_PARAMS, f"Invalid params: {text}")
    return _error(msg_id, INVALID_REQUEST, f"Invalid Request: {text}")


def _cut(text: str) -> str:
    """`text` with each container that opens below `KEPT_LEVELS` replaced: by `_DEEP` where it goes
    past `DEPTH_LIMIT` levels, by null where it does not."""
    kept: list[str] = []
    depth = deepest = 0
    start = done = 0
    for token in _TOKENS.finditer(text):
        bracket = token.group()
        if bracket in "[{":
            depth += 1
            deepest = max(deepest, depth)
            if depth == KEPT_LEVELS + 1:
                start, deepest = token.start(), depth
        elif bracket in "]}":
            if depth == KEPT_LEVELS + 1:
                kept += [text[done:start], json.dumps(_DEEP) if deepest > DEPTH_LIMIT else "null"]
                done = token.end()
            depth -= 1
    return "".join([*kept, text[done:]])


def _path_to(value: Any, mark: str, where: str = "") -> str | None:
    """The dotted path (list items as [i]) of the first `mark` in `value`, or None."""
    if value == mark:
        return where
    items = value.items() if isinstance(value, dict) else enumerate(value) if isinstance(value, list) else ()
    for key, item in items:
        inner = f"{where}[{key}]" if isinstance(key, int) else f"{where}.{key}" if where else str(key)
        found = _path_to(item, mark, inner)
        if found is not None:
            return found
    return None


def _dotted(loc: tuple[Any, ...]) -> str:
    return ".".join(map(str, loc)) or "message"


def _id_of(message: Any) -> str | int | None:
    """The message's id when it is one a response may carry."""
    msg_id = message.get("id") if isinstance(message, dict) else None
    return msg_id if isinstance(msg_id, str | int) and not isinstance(msg_id, bool) else None


def _error(msg_id: str | int | None, code: int, message: str) -> types.JSONRPCError:
    return types.JSONRPCError(jsonrpc="2.0", id=msg_id, error=types.ErrorData(code=code, message=message))
