"""NDJSON on stdio for the SDK's `Connection`, answering what its own transport only logs.

ACP clients throw stderr away, so a line the SDK's connection would drop or crash on must be
answered, or the sender never learns why nothing happened: each line is read with
`plumbing.jsonrpc.read`, the edge all three doors share (not JSON: -32700, id null; not a JSON-RPC
2.0 message, a request with `"id": null` included: -32600; params that are not an object: -32602;
nested deeper than `jsonrpc.MAX_DEPTH`: -32600, or -32602 naming the field inside params).
Writes keep call order, so every `session/update` the agent posts reaches the client before the
response that follows it. Each request's id is set in `REQUEST_ID` as the line is read: the SDK's
connection starts the request's handler task right after, and the task copies the context it starts
in, so the handler can tell which request it serves (`requests.InFlight`, for `$/cancel_request`).
"""

from __future__ import annotations

import asyncio
import json
import logging
from contextvars import ContextVar
from typing import Any

from mini_agent.plumbing import jsonrpc
from mini_agent.plumbing.jsonrpc import JsonRpcError
from mini_agent.plumbing.pipes import SafeWriter

log = logging.getLogger(__name__)
REQUEST_ID: ContextVar[int | str | None] = ContextVar("acp_request_id", default=None)


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
                self._refuse(JsonRpcError.parse_error(str(exc)))
                continue
            if not line:
                return None
            if not line.strip():
                continue
            try:
                message = jsonrpc.read(line)
            except JsonRpcError as refusal:
                self._refuse(refusal)
                continue
            REQUEST_ID.set(message.get("id") if "method" in message else None)
            return message

    async def close(self) -> None:
        self._writer.close()

    def _refuse(self, refusal: JsonRpcError) -> None:
        log.info("refused a line: %s", refusal.message)
        self.post(refusal.response())
