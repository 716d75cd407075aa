"""A workspace's sessions, as the doors reach them: the core's runtime kept behind these verbs.

`Sessions` holds the runtime (`mcp_turns.GatedRuntime`) privately, with what a session's life touches
beside it: its MCP servers around its turns (`mcp_turns.SessionServers`), the events replayed to the
client (`outbox`) and the store's list of sessions. `workspace.Workspace` composes it and offers its
verbs to the doors, which never hold the runtime themselves (an import-linter contract keeps
`core.runtime` and `core.stepper` out of them); trust and approval policy stay with the workspace.
"""

from __future__ import annotations

import contextlib
import logging

from mini_agent.app.mcp_turns import GatedRuntime, SessionServers
from mini_agent.app.options import LLMParams
from mini_agent.app.outbox import Outbox
from mini_agent.core.budget import find_observation
from mini_agent.core.contracts import Image, Observation, Part, ToolMode, ToolSpec
from mini_agent.core.errors import UnknownToolCall
from mini_agent.core.events import AgentEvent, StatusChanged
from mini_agent.core.flight import Flight
from mini_agent.core.ports import SessionStore
from mini_agent.core.runtime import RunSummary
from mini_agent.core.session import (
    AgentConfig,
    AgentSession,
    Decision,
    PermissionMode,
    SessionPage,
    SessionRow,
    StepRecord,
)
from mini_agent.tools.mcp.config import McpServer

log = logging.getLogger(__name__)


class Sessions:
    """One workspace's sessions: started, prompted, stepped, approved, cancelled, resumed, replayed,
    listed and let go, through the runtime (the workspace keeps it too, for its defaults and close)."""

    def __init__(
        self, runtime: GatedRuntime, servers: SessionServers, outbox: Outbox, store: SessionStore | None
    ) -> None:
        self._runtime = runtime
        self._servers = servers
        self._outbox = outbox
        self._store = store

    @property
    def defaults(self) -> AgentConfig:
        """The configuration a new session starts with (its model settings without the API key)."""
        return self._runtime.defaults

    def get(self, session_id: str) -> AgentSession:
        """The session's latest state; an unknown one raises `UnknownSession`."""
        return self._runtime.get(session_id)

    async def start(
        self,
        task: str,
        *,
        system_prompt: str | None,
        tools: list[str] | None,
        llm: LLMParams | None,
        max_steps: int | None,
        mcp_servers: list[McpServer] | None,
        session_id: str,
        permission_mode: PermissionMode | None,
        standing: dict[str, Decision],
        images: tuple[Image, ...] = (),
        parts: tuple[Part, ...] = (),
    ) -> AgentSession:
        """Begin a session at once; its MCP servers (and the workspace's) start in the background. It
        starts with the tools of those already up; the others' tools join before its first model turn,
        which waits for them at most their `firstTurnTimeoutSec` (`mcp_turns`). Only a session that names
        its tools (`tools`), some of them not listed yet, waits here for its servers, within the same
        bound. `standing` gives its first standing decisions."""
        async with self._servers.starting(session_id, list(mcp_servers or []), tools) as names:
            return self._runtime.start_session(
                task,
                system_prompt=system_prompt,
                tool_names=names,
                llm=llm.apply(self._runtime.defaults.llm) if llm is not None else None,
                max_steps=max_steps,
                session_id=session_id,
                standing=standing,
                permission_mode=permission_mode,
                images=images,
                parts=parts,
            )

    def configure(
        self,
        session_id: str,
        *,
        model: str | None,
        permission_mode: PermissionMode | None,
        tool_mode: ToolMode | None,
    ) -> AgentSession:
        """Change a session's model, permission mode or tool mode, from its next model turn on."""
        return self._runtime.configure(
            session_id, model=model, permission_mode=permission_mode, tool_mode=tool_mode
        )

    def prompt(
        self, session_id: str, text: str, mcp_servers: list[McpServer] | None = None,
        images: tuple[Image, ...] = (),
        parts: tuple[Part, ...] = (),
    ) -> AgentSession:
        """A follow-up turn. A session that ended its turn let its MCP servers go (see `Outbox.send`):
        they are taken up again, in the background (a call to one still starting waits for it).
        `mcp_servers` replaces the ones the session named (an ACP client names them again on load)."""
        self._runtime.get(session_id)  # an unknown session starts no server
        self._servers.take_up(session_id, mcp_servers)
        return self._runtime.prompt(session_id, text, images, parts)

    def resume(self, session_id: str, llm: LLMParams | None = None) -> AgentSession:
        """Take a stored session up here (e.g. after a crash); `llm` over its own model settings."""
        session = self._runtime.get(session_id)
        config = llm.apply(session.config.llm) if llm is not None else None
        return self._runtime.resume(session_id, llm=config)

    def fork(
        self, session_id: str, step: int | None = None, mcp_servers: list[McpServer] | None = None
    ) -> AgentSession:
        """A new session with this one's history up to the end of step `step` (None: every step that
        has ended), stored at once; the source goes on untouched. The fork names the source's MCP
        servers (`mcp_servers` instead, when given), taken up with its first turn."""
        forked = self._runtime.fork(session_id, step=step)
        self._servers.inherit(session_id, forked.session_id, mcp_servers)
        return forked

    # -- turns ----------------------------------------------------------------------------------

    def expecting(self, session_id: str) -> contextlib.AbstractContextManager[Flight]:
        """A flight for a `run` or `step` about to be asked for (pass it as `flight`): a `cancel` from
        now on stops that turn, even one that has not started yet."""
        return self._runtime.expecting(session_id)

    async def run(
        self, session_id: str, *, max_steps: int | None = None, flight: Flight | None = None
    ) -> RunSummary:
        """Step the session until it ends its turn, waits for an approval or uses up `max_steps`."""
        return await self._runtime.run(session_id, max_steps=max_steps, flight=flight)

    async def step(self, session_id: str, *, flight: Flight | None = None) -> StepRecord:
        """One step: a model turn and the calls it asked for."""
        return await self._runtime.step(session_id, flight=flight)

    def cancel(self, session_id: str) -> bool:
        """Stop the session's turn in flight (and one expected); False when there was none."""
        return self._runtime.cancel(session_id)

    def approve(self, session_id: str, call_id: str, decision: Decision, reason: str | None = None) -> None:
        """The person's decision on a pending call."""
        self._runtime.approve(session_id, call_id, decision, reason)

    async def compact(self, session_id: str) -> str:
        """Compact the session's context now; says what was done."""
        return await self._runtime.compact(session_id)

    def report(self, session_id: str, message: str) -> None:
        """A problem with one of a session's tool sources, in the log and as a status update of that
        session (when it is one yet)."""
        log.warning("%s", message)
        try:
            session = self._runtime.get(session_id)
        except Exception:  # not a session (yet, or any more): the log has it
            return
        self._outbox.send(StatusChanged(session_id, len(session.steps), session.status, message=message))

    # -- history --------------------------------------------------------------------------------

    def replay(self, session_id: str, *, task: bool = False) -> list[AgentEvent]:
        """The trajectory as the events a live run sent; the task too with `task`."""
        return self._runtime.replay(session_id, task=task)

    def load(self, session_id: str) -> int:
        """Replay a stored trajectory to the client as events; returns how many were published."""
        events = self._runtime.replay(session_id)
        for event in events:
            self._outbox.send(event)
        return len(events)

    def observation(self, session_id: str, call_id: str) -> Observation:
        """A tool result whole: what the model was shown of it may have been cut to fit its window."""
        found = find_observation(self._runtime.get(session_id), call_id)
        if found is None:
            raise UnknownToolCall(session_id, call_id)
        return found

    def tools(self, session_id: str) -> list[ToolSpec]:
        """The tools the session's model may call."""
        return list(self._runtime.get(session_id).tools)

    def list_sessions(self, status: str | None, limit: int, offset: int) -> SessionPage:
        """Newest first; without a store, the sessions this process holds."""
        if self._store is None:
            held = self._runtime.sessions(status=status)
            return [SessionRow.of(s) for s in held[offset : offset + limit]], len(held)
        rows, total = self._store.list_sessions(status, limit, offset)
        return [self._summary(row) for row in rows], total

    def _summary(self, row: SessionRow) -> SessionRow:
        """A stored row, or this process's newer state of it when the store could not take that."""
        if self._runtime.is_unsaved(row.session_id):
            return SessionRow.of(self._runtime.get(row.session_id))
        return row

    # -- letting go -----------------------------------------------------------------------------

    def close(self, session_id: str) -> None:
        """Let a session that is not stepping go: its MCP servers, and the runtime's copy (the store
        keeps it, to be loaded again)."""
        self._runtime.close(session_id)
        self._servers.forget(session_id)

    def delete(self, session_id: str) -> bool:
        """The session gone from this daemon and the store; a turn in flight is cancelled first."""
        self._runtime.get(session_id)
        if self._runtime.is_busy(session_id):
            self._runtime.cancel(session_id)
        self._runtime.forget(session_id)
        self._servers.forget(session_id)
        return self._store.delete(session_id) if self._store is not None else True
