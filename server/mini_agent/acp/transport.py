"""NDJSON on stdio for the SDK's `Connection`, answering what its own transport only logs.

ACP clients throw stderr away, so a line that is not JSON must be answered (-32700, id null) or the
sender never learns why nothing happened (nesting deeper than the JSON reader's recursion limit
included); a JSON value that is not a JSON-RPC message gets -32600.
Writes keep call order, so every `session/update` the agent posts reaches the client before the
response that follows it.
"""

from __future__ import annotations

import asyncio
import json
import logging
from typing import Any

from mini_agent.plumbing.pipes import SafeWriter

log = logging.getLogger(__name__)

PARSE_ERROR = -32700
INVALID_REQUEST = -32600


class LineTransport:
    """The SDK's `acp._transport.Transport` protocol (send, receive, close) over NDJSON."""

    def __init__(self, reader: asyncio.StreamReader, writer: SafeWriter) -> None:
        self._reader = reader
        self._writer = writer

    def post(self, message: dict[str, Any]) -> None:
        line = json.dumps(message, ensure_ascii=False, separators=(",", ":")).encode("utf-8")
        self._writer.write(line, linger="id" not in message)  # a notification may wait for company

    async def send(self, message: dict[str, Any]) -> None:
        self.post(message)

    async def receive(self) -> dict[str, Any] | None:
        while True:
            try:
                line = await self._reader.readline()
            except ValueError as exc:  # longer than the reader's limit; the rest of the line is dropped
                self._refuse(None, PARSE_ERROR, f"Parse error: {exc}")
                continue
            if not line:
                return None
            if not line.strip():
                continue
            try:
                message = json.loads(line)
            except RecursionError:
                self._refuse(None, PARSE_ERROR, "Parse error: the JSON is nested too deeply")
                continue
            except ValueError as exc:
                self._refuse(None, PARSE_ERROR, f"Parse error: the line is not JSON ({exc})")
                continue
            problem = _not_jsonrpc(message)
            if problem is None:
                return dict(message)
            msg_id = message.get("id") if isinstance(message, dict) else None
            self._refuse(msg_id if isinstance(msg_id, str | int) else None, INVALID_REQUEST, problem)

    async def close(self) -> None:
        self._writer.close()

    def _refuse(self, msg_id: str | int | None, code: int, message: str) -> None:
        log.info("refused a line: %s", message)
        self.post({"jsonrpc": "2.0", "id": msg_id, "error": {"code": code, "message": message}})


def _not_jsonrpc(message: Any) -> str | None:
    """Why `message` is no JSON-RPC 2.0 message the SDK can route (its receive loop would crash or
    drop it); None when it is one."""
    if not isinstance(message, dict):
        return f"Invalid Request: a JSON-RPC message is an object, not {type(message).__name__}"
    if message.get("jsonrpc") != "2.0":
        return 'Invalid Request: "jsonrpc" must be "2.0"'
    msg_id = message.get("id")
    if "id" in message and (isinstance(msg_id, bool) or not isinstance(msg_id, str | int | None)):
        return "Invalid Request: id must be a string, a number or null"
    if "method" in message and not isinstance(message["method"], str):
        return "Invalid Request: method must be a string"
    if "method" not in message and "id" not in message:
        return "Invalid Request: neither a request, a notification nor a response"
    return None
