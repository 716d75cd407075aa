"""Model servers that misbehave on purpose, over real HTTP on 127.0.0.1, for the tests and
bench/bench_hostile.py. Each keeps sending until the client hangs up.

- `tokens`: a chat-completions stream of one-token deltas that never finishes (ignores max_tokens);
- `pings`: a stream that sends only SSE comments, forever: alive, but never a reply;
- `endless_line`: one `data:` line that never ends;
- `huge`: a non-streamed JSON reply of `size` bytes (200 MB by default), without Content-Length.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
from typing import Literal

from aiohttp import web

Behaviour = Literal["tokens", "pings", "endless_line", "huge"]
_CHUNK = 64 * 1024


class HostileServer:
    def __init__(self, behaviour: Behaviour, *, size: int = 200 * 1024 * 1024) -> None:
        self.behaviour = behaviour
        self.size = size
        self.sent = 0  # bytes written to the client before it hung up
        self.requests = 0
        self.base_url = ""
        self._runner: web.AppRunner | None = None

    async def __aenter__(self) -> HostileServer:
        app = web.Application()
        app.router.add_post("/v1/chat/completions", self._chat)
        self._runner = web.AppRunner(app, access_log=None, handle_signals=False, shutdown_timeout=0.5)
        await self._runner.setup()
        site = web.TCPSite(self._runner, "127.0.0.1", 0)
        await site.start()
        host, port = self._runner.addresses[0][:2]
        self.base_url = f"http://{host}:{port}/v1"
        return self

    async def __aexit__(self, *exc: object) -> None:
        if self._runner is not None:
            await self._runner.cleanup()

    async def _chat(self, request: web.Request) -> web.StreamResponse:
        await request.read()
        self.requests += 1
        json_reply = self.behaviour == "huge"
        content_type = "application/json" if json_reply else "text/event-stream"
        response = web.StreamResponse(headers={"Content-Type": content_type})
        await response.prepare(request)
        with contextlib.suppress(ConnectionError):  # the client hung up: what we wanted
            await self._send(response)
        return response

    async def _write(self, response: web.StreamResponse, data: bytes) -> None:
        await response.write(data)
        self.sent += len(data)

    async def _send(self, response: web.StreamResponse) -> None:
        if self.behaviour == "tokens":
            event = {"choices": [{"index": 0, "delta": {"content": "la "}, "finish_reason": None}]}
            line = f"data: {json.dumps(event)}\n\n".encode()
            while True:
                await self._write(response, line * 64)
                await asyncio.sleep(0)
        elif self.behaviour == "pings":
            while True:
                await self._write(response, b": still thinking\n\n")
                await asyncio.sleep(0.05)
        elif self.behaviour == "endless_line":
            await self._write(response, b'data: {"choices": [{"index": 0, "delta": {"content": "')
            while True:
                await self._write(response, b"x" * _CHUNK)
                await asyncio.sleep(0)
        else:
            head = b'{"choices": [{"index": 0, "finish_reason": "stop", "message": {"content": "'
            await self._write(response, head)
            while self.sent < self.size:
                await self._write(response, b"x" * _CHUNK)
            await self._write(response, b'"}}]}')
