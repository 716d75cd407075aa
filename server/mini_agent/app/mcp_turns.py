"""A session's MCP servers around its turns: taken up when a turn begins, waited for before it steps.

A session starts at once; its MCP servers (and the workspace's) start in the background. `SessionServers`
keeps which servers each session named, takes them up when the session starts or gets a follow-up
prompt, lets them go when its turn ends, and gives the wait a turn makes for those still starting
(each at most its `firstTurnTimeoutSec`). Before a session's first model turn the tools of the servers
up by then join it (`AgentRuntime.add_tools`); from that turn on its tool set is fixed. `GatedRuntime`
is the core's runtime with that wait in front of each `run` and `step`.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator, Callable, Coroutine, Sequence
from typing import Any

from mini_agent.core.contracts import ToolSpec
from mini_agent.core.flight import Flight, StepCancelled
from mini_agent.core.runtime import AgentRuntime, RunSummary
from mini_agent.core.session import StepRecord
from mini_agent.tools.mcp import McpSource
from mini_agent.tools.mcp.config import McpServer
from mini_agent.tools.registry import ToolRegistry


class SessionServers:
    """The MCP servers of each session of one workspace: the workspace's (`workspace_servers`, read
    each time: trusting the folder may bring more) and those the session named itself. A problem with
    one goes to `report(session_id, message)`; `add_tools` is the runtime's, for the tools that join a
    session before its first model turn."""

    def __init__(
        self,
        mcp: McpSource,
        registry: ToolRegistry,
        *,
        workspace_servers: Callable[[], Sequence[McpServer]],
        report: Callable[[str, str], None],
        add_tools: Callable[[str, Sequence[ToolSpec]], object],
    ) -> None:
        self._mcp = mcp
        self._registry = registry
        self._workspace_servers = workspace_servers
        self._report = report
        self._add_tools = add_tools
        self._releases: set[asyncio.Task[None]] = set()
        self._own: dict[str, list[McpServer]] = {}  # the servers each session named itself
        self._first_turn: dict[str, list[McpServer]] = {}  # sessions whose first turn takes late MCP tools

    def configs(self, session_id: str) -> list[McpServer]:
        """The servers of `session_id`: the workspace's, then its own."""
        return [*self._workspace_servers(), *self._own.get(session_id, [])]

    @contextlib.asynccontextmanager
    async def starting(
        self, session_id: str, own: list[McpServer], tools: list[str] | None
    ) -> AsyncIterator[list[str] | None]:
        """Around a session's start: its servers taken up in the background, and the names of the tools
        it starts with (`tools`, or all listed now with the tools of its servers already up; None: no
        servers, the runtime's default). Only a session that names its tools, some of them not listed
        yet, waits here for its servers, within their bound. A start that fails lets them go again;
        one that succeeds has its late servers' tools join before its first model turn, and hears of
        the problems met meanwhile (a status update needs the session)."""
        configs = [*self._workspace_servers(), *own]
        problems = _Problems(lambda problem: self._report(session_id, problem))
        try:
            if configs:
                self._mcp.take_up(session_id, configs, problems.tell)
            names = tools
            offered = {spec.name for spec in self._registry.list_tools()}
            if names is not None and configs and not set(names) <= offered:
                await self._mcp.ready(session_id)
            elif names is None and configs:
                names = [*self._registry.own_names(), *(spec.name for spec in self._mcp.tools_of(configs))]
            yield names
        except BaseException:
            await self._mcp.release(session_id)
            raise
        self._own[session_id] = own
        if tools is None and configs:
            self._first_turn[session_id] = configs
        problems.flush()

    def take_up(self, session_id: str, mcp_servers: list[McpServer] | None) -> None:
        """A follow-up turn: the session's servers (let go when its last turn ended) taken up again, in
        the background; `mcp_servers` replaces the ones it named (an ACP client names them again on load)."""
        if mcp_servers is not None:
            self._own[session_id] = list(mcp_servers)
        configs = self.configs(session_id)
        if configs:
            self._mcp.take_up(session_id, configs, lambda problem: self._report(session_id, problem))

    def inherit(self, source: str, fork: str, mcp_servers: list[McpServer] | None) -> None:
        """A fork names the servers its source named (`mcp_servers`, when given, instead); they start
        with its first turn, as a follow-up's do."""
        self._own[fork] = list(self._own.get(source, []) if mcp_servers is None else mcp_servers)

    def gate(self, session_id: str) -> Coroutine[Any, Any, None] | None:
        """What a turn of `session_id` waits for before it steps: its MCP servers still starting (at
        its start, or taken up again by a follow-up prompt); None: nothing to wait for."""
        if session_id not in self._first_turn and not self._mcp.starting(session_id):
            return None
        return self._servers_up(session_id)

    async def _servers_up(self, session_id: str) -> None:
        """Wait for the session's servers still starting, each at most its `firstTurnTimeoutSec`, and
        say each one still starting then. Before the session's first model turn, the tools of those
        up by then join the session (from that turn on its tool set is fixed: the prompt must not
        change under it)."""
        late = await self._mcp.ready(session_id)
        bounds = {config.name: config.first_turn_timeout_sec for config in self.configs(session_id)}
        for name in dict.fromkeys(late):
            self._report(
                session_id,
                f"MCP server '{name}' is still starting after {bounds.get(name, 0):g} s "
                "(firstTurnTimeoutSec): the turn goes on without its tools",
            )
        joining = self._first_turn.pop(session_id, None)
        if joining is not None:
            self._add_tools(session_id, self._mcp.tools_of(joining))

    def release(self, session_id: str) -> None:
        """The session's turn ended: let its servers go, in the background (see `released`)."""
        task = asyncio.get_running_loop().create_task(self._mcp.release(session_id))
        self._releases.add(task)
        task.add_done_callback(self._releases.discard)

    def forget(self, session_id: str) -> None:
        """The session is gone from this daemon: what was kept of it, and its servers, let go."""
        self._own.pop(session_id, None)
        self._first_turn.pop(session_id, None)
        self.release(session_id)

    async def released(self) -> None:
        """Wait for the servers being let go."""
        await asyncio.gather(*self._releases)


class GatedRuntime(AgentRuntime):
    """The core's runtime with the app's wait before a turn (`gate`: for a session's MCP servers still
    starting). The wait is part of the turn: a cancel reaches it (the turn then ends `cancelled`, as
    one cancelled before its first step does), and nothing is stepped until it is over."""

    def __init__(
        self, *args: Any, gate: Callable[[str], Coroutine[Any, Any, None] | None], **kwargs: Any
    ) -> None:
        super().__init__(*args, **kwargs)
        self._turn_gate = gate

    async def run(
        self, session_id: str, *, max_steps: int | None = None, flight: Flight | None = None
    ) -> RunSummary:
        async with self._gated(session_id, flight) as flight:
            return await super().run(session_id, max_steps=max_steps, flight=flight)

    async def step(
        self, session_id: str, *, wait_for_approval: bool = False, flight: Flight | None = None
    ) -> StepRecord:
        async with self._gated(session_id, flight) as flight:
            return await super().step(session_id, wait_for_approval=wait_for_approval, flight=flight)

    @contextlib.asynccontextmanager
    async def _gated(self, session_id: str, flight: Flight | None) -> AsyncIterator[Flight | None]:
        gate = self._turn_gate(session_id)
        if gate is None:
            yield flight
            return
        with contextlib.ExitStack() as stack:
            if flight is None:
                flight = stack.enter_context(self.expecting(session_id))
            with contextlib.suppress(StepCancelled):  # the step then ends `cancelled` at once
                await flight.race(gate)
            yield flight


class _Problems:
    """A session's MCP problems: held until the session exists (a status update needs it), then told."""

    def __init__(self, tell: Callable[[str], None]) -> None:
        self._tell = tell
        self._held: list[str] | None = []

    def tell(self, problem: str) -> None:
        if self._held is None:
            self._tell(problem)
        else:
            self._held.append(problem)

    def flush(self) -> None:
        held, self._held = self._held or [], None
        for problem in held:
            self._tell(problem)
