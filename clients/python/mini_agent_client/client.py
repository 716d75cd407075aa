"""An async client for the mini-agent daemon: spawn it, register tools, run sessions, read events.

    import asyncio
    from mini_agent_client import AgentClient

    async def main() -> None:
        options = {"llm": {"baseUrl": "http://127.0.0.1:8000/v1", "model": "qwen"}}
        async with AgentClient.spawn(root="path/to/workspace", options=options) as client:
            await client.register_tool("tools.py")
            async for event in client.run("How many lines does tools.py have?"):
                if event.kind == "agent_thought_chunk":
                    print(event.text, end="")
                elif event.kind == "result":
                    print("\\nanswer:", event.final_answer)

    asyncio.run(main())

The daemon is a child process speaking JSON-RPC on its stdio, started in its own process group so
that a Ctrl-C in the terminal reaches this program (which then cancels the session politely), not
the daemon.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import sys
from collections.abc import AsyncGenerator, AsyncIterator, Awaitable, Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from .rpc import Connection, RequestHandler, Tap

PermissionHandler = Callable[[dict[str, Any]], Awaitable[dict[str, Any]]]
ToolHandler = Callable[[dict[str, Any]], Awaitable[Any]]

THOUGHT = "agent_thought_chunk"
TOOL_CALL = "tool_call"
TOOL_CALL_UPDATE = "tool_call_update"
MESSAGE = "agent_message_chunk"
USAGE = "usage_update"
STATUS = "status"
RESULT = "result"


@dataclass(frozen=True, slots=True)
class Event:
    """One thing that happened in a session: an `agent/update` (kind as in ACP) or the run's `result`.

    `data` is the update (or the `agent/run` result) as it came off the wire, less `kind`; the
    properties read the fields each kind carries and give None where a kind lacks them.
    """

    kind: str
    session_id: str
    step: int
    data: dict[str, Any] = field(default_factory=dict)

    @property
    def text(self) -> str:
        """The streamed piece (thought chunk) or the final answer (message chunk)."""
        return str(self.data.get("text", ""))

    @property
    def tool_call_id(self) -> str | None:
        return self.data.get("toolCallId")

    @property
    def tool_name(self) -> str | None:
        return self.data.get("name")

    @property
    def arguments(self) -> dict[str, Any]:
        arguments: dict[str, Any] = self.data.get("arguments") or {}
        return arguments

    @property
    def status(self) -> str | None:
        """A tool call's status (tool_call, tool_call_update) or the session's (status, result)."""
        return self.data.get("status")

    @property
    def observation(self) -> dict[str, Any] | None:
        """`{toolCallId, toolName, output, isError, elapsedMs, ...}` on a finished tool_call_update."""
        return self.data.get("observation")

    @property
    def stop_reason(self) -> str | None:
        return self.data.get("stopReason")

    @property
    def final_answer(self) -> str | None:
        return self.data.get("finalAnswer")

    @property
    def error(self) -> str | None:
        """The model server's failure (result) or the step's message (status)."""
        return self.data.get("error") or self.data.get("message")

    def to_json(self) -> dict[str, Any]:
        """The event as one flat JSON object (what `mini-agent ask --json` prints per line)."""
        return {"kind": self.kind, "sessionId": self.session_id, "step": self.step, **self.data}


def daemon_command(*, ndjson: bool = False) -> list[str]:
    if ndjson:
        return [sys.executable, "-m", "mini_agent.cli", "serve", "--ndjson"]
    return [sys.executable, "-m", "mini_agent"]


class AgentClient:
    """One daemon connection. Build it with `AgentClient.spawn(...)` (see the module docstring)."""

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
        ndjson: bool = False,
        tap: Tap | None = None,
        workspace_trusted: bool = False,
        on_message: Callable[[dict[str, Any]], None] | None = None,
        capabilities: dict[str, Any] | None = None,
        handlers: dict[str, RequestHandler] | None = None,
    ) -> AsyncIterator[AgentClient]:
        """Start a daemon over stdio, initialize it for `root`, and shut it down on exit.

        `options` are the `initializationOptions` (docs/protocol.md); `ndjson` speaks newline-delimited
        JSON to `mini-agent serve --ndjson` instead of LSP framing; `tap` sees every message.
        `workspace_trusted` sends `workspaceTrusted: true`: the daemon then restores the tools registered
        in this workspace before (an untrusted one keeps only what this client registers itself).
        `on_message` gets each `window/showMessage` (`{type, message}`), from before `initialize`: what
        the daemon says about its options or its store comes right after it. `capabilities` are the
        client's LSP capabilities (e.g. `window.showDocument`, `experimental.agent.elicitation`), and
        `handlers` answer the requests they announce (`window/showDocument`, `agent/elicit`, …).
        """
        options = {**(options or {}), **({"workspaceTrusted": True} if workspace_trusted else {})}
        process = await asyncio.create_subprocess_exec(
            *(command or daemon_command(ndjson=ndjson)),
            stdin=asyncio.subprocess.PIPE,
            stdout=asyncio.subprocess.PIPE,
            stderr=stderr,
            env=env,
            limit=2**24,
            process_group=0,
        )
        assert process.stdin is not None and process.stdout is not None
        connection = Connection(process.stdout, process.stdin, ndjson=ndjson, tap=tap)
        if on_message is not None:
            connection.on_notification("window/showMessage", on_message)
        for method, handler in (handlers or {}).items():
            connection.on_request(method, handler)
        connection.start()
        client = cls(process, connection)
        try:
            await client.initialize(Path(root).resolve(), options, capabilities or {})
            yield client
        finally:
            await client.close()

    async def initialize(self, root: Path, options: dict[str, Any], capabilities: dict[str, Any]) -> None:
        result = await self.connection.request("initialize", {
            "processId": os.getpid(),
            "clientInfo": {"name": "mini-agent-client", "version": "0.1"},
            "rootUri": root.as_uri(),
            "capabilities": capabilities,
            "initializationOptions": options,
        })
        self.server_info = result.get("serverInfo", {})
        self.capabilities = result.get("capabilities", {})
        await self.connection.notify("initialized", {})

    @property
    def methods(self) -> list[str]:
        """The agent/* methods this daemon advertises (`capabilities.experimental.agent.methods`)."""
        agent = (self.capabilities.get("experimental") or {}).get("agent") or {}
        methods: list[str] = agent.get("methods", [])
        return methods

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

    # -- methods --------------------------------------------------------------------------------

    async def call(self, method: str, params: dict[str, Any] | None = None) -> Any:
        return await self.connection.request(method, params or {})

    async def register_tool(self, path: str, **fields: Any) -> list[dict[str, Any]]:
        """Register the public functions of a workspace file (or `function=`); returns their schemas."""
        result = await self.call("agent/registerTool", {"path": path, **_camel(fields)})
        tools: list[dict[str, Any]] = result["tools"]
        return tools

    async def register_client_tool(self, name: str, description: str, input_schema: dict[str, Any],
                                   **fields: Any) -> list[dict[str, Any]]:
        """A tool this program runs itself: the daemon asks for it with `agent/executeTool`."""
        params = {"name": name, "description": description, "inputSchema": input_schema, "client": True}
        result = await self.call("agent/registerTool", {**params, **_camel(fields)})
        tools: list[dict[str, Any]] = result["tools"]
        return tools

    async def list_tools(self) -> list[dict[str, Any]]:
        tools: list[dict[str, Any]] = (await self.call("agent/listTools"))["tools"]
        return tools

    async def start_session(self, task: str, **fields: Any) -> str:
        """`fields`: system_prompt, tools, llm, max_steps, permission_mode, mcp_servers (snake_case
        here, camelCase on the wire)."""
        result = await self.call("agent/startSession", {"task": task, **_camel(fields)})
        session_id: str = result["sessionId"]
        return session_id

    async def list_models(self, base_url: str | None = None, *, refresh: bool = False) -> dict[str, Any]:
        """`{models: [{id}], current, baseUrl, source, message?}`: what the model server lists, or the
        configured model alone (`source` "configured", `message` saying why)."""
        params = _drop_none(baseUrl=base_url, refresh=refresh or None)
        result: dict[str, Any] = await self.call("agent/listModels", params)
        return result

    async def configure_session(self, session_id: str, *, model: str | None = None,
                                permission_mode: str | None = None,
                                tool_mode: str | None = None) -> dict[str, Any]:
        """Change the session's model, permission mode or tool mode (from its next model turn);
        answers `{sessionId, model, permissionMode, toolMode}`."""
        params = _drop_none(sessionId=session_id, model=model, permissionMode=permission_mode,
                            toolMode=tool_mode)
        result: dict[str, Any] = await self.call("agent/configureSession", params)
        return result

    async def step(self, session_id: str) -> dict[str, Any]:
        result: dict[str, Any] = await self.call("agent/step", {"sessionId": session_id})
        return result

    async def cancel(self, session_id: str) -> None:
        await self.call("agent/cancel", {"sessionId": session_id})

    async def approve(self, session_id: str, tool_call_id: str, decision: str,
                      reason: str | None = None) -> None:
        """`decision`: allow_once | allow_always | reject_once | reject_always."""
        params = _drop_none(sessionId=session_id, toolCallId=tool_call_id, decision=decision, reason=reason)
        await self.call("agent/approve", params)

    async def list_sessions(self, status: str | None = None) -> list[dict[str, Any]]:
        result = await self.call("agent/listSessions", _drop_none(status=status))
        sessions: list[dict[str, Any]] = result["sessions"]
        return sessions

    async def get_session(self, session_id: str) -> dict[str, Any]:
        session: dict[str, Any] = await self.call("agent/getSession", {"sessionId": session_id})
        return session

    def on_permission(self, handler: PermissionHandler) -> None:
        """Answer `agent/requestPermission` with `{decision, reason?}`."""
        self.connection.on_request("agent/requestPermission", handler)

    def on_execute_tool(self, handler: ToolHandler) -> None:
        """Run client tools: `handler({sessionId, toolCallId, name, arguments})` returns the observation
        (a string, or any JSON value); raising makes it an error observation."""
        self.connection.on_request("agent/executeTool", handler)

    async def run(self, task: str | None = None, *, session_id: str | None = None,
                  **fields: Any) -> AsyncGenerator[Event, None]:
        """Start a session (or continue `session_id`) and yield its events as they stream, then `result`.

        Leaving the loop early cancels the session's run once the generator is closed: at once inside
        `contextlib.aclosing(client.run(...))`, else when it is collected. To stop a run and still get
        its `result` (stopReason "cancelled"), call `cancel(event.session_id)` and keep iterating.
        """
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
        request = asyncio.ensure_future(self.call("agent/run", {"sessionId": session_id}))
        try:
            while not request.done() or not queue.empty():
                getter = asyncio.ensure_future(queue.get())
                await asyncio.wait({getter, request}, return_when=asyncio.FIRST_COMPLETED)
                if getter.done():
                    yield getter.result()
                else:
                    getter.cancel()
            result: dict[str, Any] = request.result()
            yield Event(RESULT, session_id, result.get("steps", 0), result)
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


def _drop_none(**fields: Any) -> dict[str, Any]:
    return {key: value for key, value in fields.items() if value is not None}
