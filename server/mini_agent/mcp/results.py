"""A workspace tool as MCP sees it: its `Tool` entry, one call run with progress, and its result.

A tool whose function has an annotated return advertises its `outputSchema`; its results then carry
`structuredContent` (the value as that schema describes it) beside the text block old clients read.
An error result has the text only. While a call runs, what the tool reports through
`tools.progress.report` goes to a client that sent a `progressToken` as `notifications/progress`.
"""

from __future__ import annotations

import contextlib
import itertools
import logging
from typing import Any

import anyio
import mcp_types as types
from anyio.streams.memory import MemoryObjectReceiveStream, MemoryObjectSendStream
from mcp.server.context import ServerRequestContext

from mini_agent.core.contracts import Observation, ToolCall, ToolSpec
from mini_agent.core.events import LIVE_SINK, LiveUpdate
from mini_agent.tools.registry import ToolRegistry

log = logging.getLogger(__name__)

# Progress reports held while the client is slow to take them; past this, reports are dropped (the
# client sees fewer `notifications/progress`, never a slower tool).
PROGRESS_BACKLOG = 64
DIALECT = "https://json-schema.org/draft/2020-12/schema"  # of every schema we build (MCP's default)
PERCENT = 100.0  # a reported fraction goes out as `progress` of this `total`
UNSTRUCTURED = "{name} returned a value that does not match its outputSchema; see the server's log"

_call_ids = itertools.count(1)


def mcp_tool(spec: ToolSpec) -> types.Tool:
    """The MCP `Tool` for a registered workspace function, with the schema `agent/listTools` shows."""
    hints = dict(spec.hints)
    if spec.idempotent:
        hints["idempotentHint"] = True
    annotations = types.ToolAnnotations.model_validate(hints) if hints else None
    return types.Tool(
        name=spec.name,
        title=spec.title,
        description=spec.description,
        input_schema={"$schema": DIALECT, **(spec.declared_schema or spec.input_schema)},
        output_schema=spec.output_schema,
        annotations=annotations,
    )


def call_result(spec: ToolSpec | None, observation: Observation) -> types.CallToolResult:
    """The MCP result of a finished call: text always, `structuredContent` for a tool with an output
    schema. A result such a tool cannot give in its schema's shape is an error (the schema is a promise)."""
    text: list[types.ContentBlock] = [types.TextContent(text=observation.output)]
    if observation.is_error:
        return types.CallToolResult(content=text, is_error=True)
    if spec is None or spec.output_schema is None:
        return types.CallToolResult(content=text)
    if observation.structured is None:
        problem = UNSTRUCTURED.format(name=spec.name)
        if observation.truncated:
            problem = f"{spec.name}'s result was cut to the output cap, so it has no structured form"
        return types.CallToolResult(content=[types.TextContent(text=problem)], is_error=True)
    return types.CallToolResult(content=text, structured_content=observation.structured)


async def run_call(
    registry: ToolRegistry, ctx: ServerRequestContext[Any], params: types.CallToolRequestParams
) -> Observation:
    """Run one `tools/call`; the tool's progress reports go to the client when it asked for them."""
    call = ToolCall(id=f"mcp-{next(_call_ids)}", name=params.name, arguments=params.arguments or {})
    if not (ctx.meta or {}).get("progress_token"):
        return await registry.execute(call, session_id="mcp")
    send, receive = anyio.create_memory_object_stream[LiveUpdate](PROGRESS_BACKLOG)
    async with anyio.create_task_group() as group:
        group.start_soon(_forward, receive, ctx)
        token = LIVE_SINK.set(lambda update: _offer(send, update))
        try:
            observation = await registry.execute(call, session_id="mcp")
        finally:
            LIVE_SINK.reset(token)
            send.close()
    return observation


def _offer(send: MemoryObjectSendStream[LiveUpdate], update: LiveUpdate) -> None:
    with contextlib.suppress(anyio.WouldBlock, anyio.ClosedResourceError):
        send.send_nowait(update)


async def _forward(receive: MemoryObjectReceiveStream[LiveUpdate], ctx: ServerRequestContext[Any]) -> None:
    """Each report that says something new, as one `notifications/progress`: the reported fraction
    in percent when there is one, else a count of reports (so `progress` never goes down)."""
    count = 0
    last: tuple[str | None, float | None] | None = None
    async with receive:
        async for update in receive:
            said = (update.message, update.fraction)
            if said == (None, None) or said == last:
                continue
            last, count = said, count + 1
            if update.fraction is not None:
                progress, total = update.fraction * PERCENT, PERCENT
            else:
                progress, total = float(count), None
            try:
                await ctx.session.report_progress(progress, total, update.message)
            except (anyio.ClosedResourceError, anyio.BrokenResourceError):
                log.info("the client went away; its progress reports are dropped")
                return
