"""An async client for the mini-agent daemon: spawn it, register tools, run sessions, read events.

    async with AgentClient.spawn(root="path/to/workspace") as client:
        await client.register_tool("tools.py")
        async for event in client.run("How many lines does tools.py have?"):
            print(event.kind, event.data)
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import sys
from collections.abc import AsyncIterator, Awaitable, Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from types import TracebackType
from typing import Any

from .rpc import Connection

PermissionHandler = Callable[[dict[str, Any]], Awaitable[dict[str, Any]]]


@dataclass(frozen=True, slots=True)
class Event:
    """One thing that happened in a session: an `agent/update` (kind as in ACP) or the run's `result`."""

    kind: str
    session_id: str
    step: int
    data: dict[str, Any] = field(default_factory=dict)


def daemon_command() -> list[str]:
    return [sys.executable, "-m", "mini_agent"]


class AgentClient:
    def __init__(self, process: asyncio.subprocess.Process, connection: Connection) -> None:
        self.process = process
        self.connection = connection
        self.server_info: dict[str, Any] = {}
        self.capabilities: dict[str, Any] = {}

    @classmethod
    @contextlib.asynccontextmanager
    async def spawn(
        cls,
        *,
        root: str | os.PathLike[str] = ".",
        options: dict[str, Any] | None = None,
        command: Sequence[str] | None = None,
        stderr: int | None = None,
        env: dict[str, str] | None = None,
    ) -> AsyncIterator[AgentClient]:
        """Start a daemon over stdio, initialize it for `root`, and shut it down on exit."""
        process = await asyncio.create_subprocess_exec(
            *(command or daemon_command()),
            stdin=asyncio.subprocess.PIPE,
            stdout=asyncio.subprocess.PIPE,
            stderr=stderr,
            env=env,
            limit=2**24,
        )
        assert process.stdin is not None and process.stdout is not None
        connection = Connection(process.stdout, process.stdin)
        connection.start()
        client = cls(process, connection)
        try:
            await client.initialize(Path(root).resolve(), options or {})
            yield client
        finally:
            await client.close()

    async def initialize(self, root: Path, options: dict[str, Any]) -> None:
        result = await self.connection.request("initialize", {
            "processId": os.getpid(),
            "clientInfo": {"name": "mini-agent-client", "version": "0.1"},
            "rootUri": root.as_uri(),
            "capabilities": {},
            "initializationOptions": options,
        })
        self.server_info = result.get("serverInfo", {})
        self.capabilities = result.get("capabilities", {})
        await self.connection.notify("initialized", {})

    async def close(self) -> None:
        if self.process.returncode is None:
            with contextlib.suppress(Exception):
                await asyncio.wait_for(self.connection.request("shutdown"), 10)
                await self.connection.notify("exit")
            try:
                await asyncio.wait_for(self.process.wait(), 10)
            except TimeoutError:
                self.process.kill()
                await self.process.wait()
        await self.connection.close()

    async def __aenter__(self) -> AgentClient:
        return self

    async def __aexit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        await self.close()

    # -- methods --------------------------------------------------------------------------------

    async def register_tool(self, path: str, **fields: Any) -> list[dict[str, Any]]:
        result = await self.connection.request("agent/registerTool", {"path": path, **_camel(fields)})
        tools: list[dict[str, Any]] = result["tools"]
        return tools

    async def list_tools(self) -> list[dict[str, Any]]:
        tools: list[dict[str, Any]] = (await self.connection.request("agent/listTools", {}))["tools"]
        return tools

    async def start_session(self, task: str, **fields: Any) -> str:
        result = await self.connection.request("agent/startSession", {"task": task, **_camel(fields)})
        session_id: str = result["sessionId"]
        return session_id

    async def step(self, session_id: str) -> dict[str, Any]:
        result: dict[str, Any] = await self.connection.request("agent/step", {"sessionId": session_id})
        return result

    async def cancel(self, session_id: str) -> None:
        await self.connection.request("agent/cancel", {"sessionId": session_id})

    async def call(self, method: str, params: dict[str, Any] | None = None) -> Any:
        return await self.connection.request(method, params or {})

    def on_permission(self, handler: PermissionHandler) -> None:
        """Answer `agent/requestPermission` with `{decision, reason?}`."""
        self.connection.on_request("agent/requestPermission", handler)

    async def run(self, task: str | None = None, *, session_id: str | None = None,
                  **fields: Any) -> AsyncIterator[Event]:
        """Start (or continue) a session and yield its events as they stream, then one `result` event."""
        if session_id is None:
            if task is None:
                raise ValueError("give a task or a session_id")
            session_id = await self.start_session(task, **fields)
        queue: asyncio.Queue[Event] = asyncio.Queue()

        def on_update(params: dict[str, Any]) -> None:
            if params.get("sessionId") == session_id:
                update = dict(params.get("update", {}))
                queue.put_nowait(Event(update.pop("kind", "?"), session_id, params.get("step", 0), update))

        unsubscribe = self.connection.on_notification("agent/update", on_update)
        request = asyncio.ensure_future(self.connection.request("agent/run", {"sessionId": session_id}))
        try:
            while not request.done() or not queue.empty():
                getter = asyncio.ensure_future(queue.get())
                await asyncio.wait({getter, request}, return_when=asyncio.FIRST_COMPLETED)
                if getter.done():
                    yield getter.result()
                else:
                    getter.cancel()
            result: dict[str, Any] = request.result()
            yield Event("result", session_id, result.get("steps", 0), result)
        finally:
            unsubscribe()
            if not request.done():
                with contextlib.suppress(Exception):
                    await self.cancel(session_id)
                await asyncio.gather(request, return_exceptions=True)


def _camel(fields: dict[str, Any]) -> dict[str, Any]:
    out = {}
    for key, value in fields.items():
        head, *rest = key.split("_")
        out[head + "".join(part.title() for part in rest)] = value
    return out
