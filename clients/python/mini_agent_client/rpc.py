"""A small JSON-RPC 2.0 connection over a byte stream, LSP-framed (Content-Length headers) or
newline-delimited (`mini-agent serve --ndjson`).

Requests get futures, notifications go to per-method handlers, and requests from the peer (the
daemon asking for a permission, or for a client-side tool) go to async handlers whose return value
is the answer. A `tap` sees every message in both directions, as parsed JSON (for logs and for
checking the traffic against docs/protocol.schema.json).
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
from collections.abc import Awaitable, Callable
from typing import Any, Literal

log = logging.getLogger(__name__)

NotificationHandler = Callable[[dict[str, Any]], None]
RequestHandler = Callable[[dict[str, Any]], Awaitable[Any]]
Direction = Literal["send", "recv"]
Tap = Callable[[Direction, dict[str, Any]], None]


class RpcError(Exception):
    """An error answer from the peer."""

    def __init__(self, code: int, message: str, data: Any = None) -> None:
        super().__init__(f"{message} ({code})")
        self.code = code
        self.message = message
        self.data = data


class ConnectionClosed(Exception):
    pass


def _body(message: dict[str, Any]) -> bytes:
    return json.dumps(message, ensure_ascii=False, separators=(",", ":")).encode()


def frame(message: dict[str, Any]) -> bytes:
    body = _body(message)
    return b"Content-Length: %d\r\n\r\n" % len(body) + body


def line(message: dict[str, Any]) -> bytes:
    """One NDJSON line: JSON strings escape newlines, so the body never contains one."""
    return _body(message) + b"\n"


async def read_frame(reader: asyncio.StreamReader) -> dict[str, Any] | None:
    """One message, or None at end of stream."""
    length = -1
    while True:
        line = await reader.readline()
        if not line:
            return None
        line = line.strip()
        if not line:
            if length >= 0:
                break
            continue
        name, _, value = line.partition(b":")
        if name.strip().lower() == b"content-length":
            length = int(value.strip())
    body = await reader.readexactly(length)
    message: dict[str, Any] = json.loads(body)
    return message


async def read_line(reader: asyncio.StreamReader) -> dict[str, Any] | None:
    """One NDJSON message (blank lines skipped), or None at end of stream."""
    while raw := await reader.readline():
        if raw.strip():
            message: dict[str, Any] = json.loads(raw)
            return message
    return None


def _message(method: str, params: Any, msg_id: int | str | None = None) -> dict[str, Any]:
    """A request (with an id) or a notification; `params` left out when there are none, as JSON-RPC wants."""
    message: dict[str, Any] = {"jsonrpc": "2.0", "method": method}
    if msg_id is not None:
        message["id"] = msg_id
    if params is not None:
        message["params"] = params
    return message


class Connection:
    def __init__(
        self,
        reader: asyncio.StreamReader,
        writer: asyncio.StreamWriter,
        *,
        ndjson: bool = False,
        tap: Tap | None = None,
    ) -> None:
        self._reader = reader
        self._writer = writer
        self._encode = line if ndjson else frame
        self._decode = read_line if ndjson else read_frame
        self._tap = tap
        self._next_id = 0
        self._pending: dict[int | str, asyncio.Future[Any]] = {}
        self._notification_handlers: dict[str, list[NotificationHandler]] = {}
        self._request_handlers: dict[str, RequestHandler] = {}
        self._reader_task: asyncio.Task[None] | None = None
        self._tasks: set[asyncio.Task[None]] = set()
        self.closed = False

    def start(self) -> None:
        self._reader_task = asyncio.create_task(self._read_loop())

    def on_notification(self, method: str, handler: NotificationHandler) -> Callable[[], None]:
        """Subscribe; the returned function unsubscribes."""
        handlers = self._notification_handlers.setdefault(method, [])
        handlers.append(handler)
        return lambda: handlers.remove(handler) if handler in handlers else None

    def on_request(self, method: str, handler: RequestHandler) -> None:
        self._request_handlers[method] = handler

    def next_id(self) -> int:
        self._next_id += 1
        return self._next_id

    async def request(self, method: str, params: Any = None, *, msg_id: int | str | None = None) -> Any:
        msg_id = self.next_id() if msg_id is None else msg_id
        future: asyncio.Future[Any] = asyncio.get_running_loop().create_future()
        self._pending[msg_id] = future
        try:
            await self._send(_message(method, params, msg_id))
            return await future
        finally:
            self._pending.pop(msg_id, None)

    async def notify(self, method: str, params: Any = None) -> None:
        await self._send(_message(method, params))

    async def _send(self, message: dict[str, Any]) -> None:
        if self.closed or self._writer.is_closing():
            raise ConnectionClosed("the daemon closed the connection")
        if self._tap is not None:
            self._tap("send", message)
        self._writer.write(self._encode(message))
        await self._writer.drain()

    async def _read_loop(self) -> None:
        try:
            while (message := await self._decode(self._reader)) is not None:
                if self._tap is not None:
                    self._tap("recv", message)
                self._dispatch(message)
        except (asyncio.IncompleteReadError, ConnectionError, json.JSONDecodeError) as exc:
            log.debug("connection ended: %s", exc)
        finally:
            self.closed = True
            for future in self._pending.values():
                if not future.done():
                    future.set_exception(ConnectionClosed("the daemon closed the connection"))

    def _dispatch(self, message: dict[str, Any]) -> None:
        method = message.get("method")
        if method is None:
            future = self._pending.get(message.get("id"))  # type: ignore[arg-type]
            if future is None or future.done():
                return
            if "error" in message:
                error = message["error"]
                code, text = error.get("code", 0), error.get("message", "")
                future.set_exception(RpcError(code, text, error.get("data")))
            else:
                future.set_result(message.get("result"))
        elif "id" in message:
            task = asyncio.create_task(self._answer(message))
            self._tasks.add(task)
            task.add_done_callback(self._tasks.discard)
        else:
            for handler in list(self._notification_handlers.get(method, [])):
                handler(message.get("params") or {})

    async def _answer(self, message: dict[str, Any]) -> None:
        handler = self._request_handlers.get(message["method"])
        reply: dict[str, Any] = {"jsonrpc": "2.0", "id": message["id"]}
        if handler is None:
            reply["error"] = {"code": -32601, "message": f"Method Not Found: {message['method']}"}
        else:
            try:
                reply["result"] = await handler(message.get("params") or {})
            except Exception as exc:
                reply["error"] = {"code": -32603, "message": f"{type(exc).__name__}: {exc}"}
        with contextlib.suppress(ConnectionClosed, ConnectionError):
            await self._send(reply)

    async def close(self) -> None:
        if self._reader_task is not None:
            self._reader_task.cancel()
            await asyncio.gather(self._reader_task, return_exceptions=True)
