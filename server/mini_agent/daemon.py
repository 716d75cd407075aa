"""The composition root: one workspace's runtime, tools, model client and store, wired together.

Built once the client has said who it is (`initialize`); knows nothing of JSON-RPC framing — the
server hands it two callables to reach the client with.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Awaitable, Callable
from dataclasses import replace
from pathlib import Path
from typing import Any

from . import wire
from .budget import find_observation
from .contracts import LLMConfig, SessionStatus, ToolCall, ToolSpec
from .errors import UnknownToolCall
from .events import AgentEvent, StatusChanged, ThoughtChunk
from .llm.client import OpenAICompatibleClient
from .llm.window import ServerWindowProbe
from .params import InitOptions, McpServer, RegisterToolParams, StartSessionParams
from .runtime import AgentRuntime
from .session import AgentConfig, AgentSession, Decision
from .store import SessionRow, SqliteStore, StoreError
from .tools import RegistrationError, ToolRegistry
from .tools.mcp import McpSource
from .workspace_config import WorkspaceConfig

log = logging.getLogger(__name__)

Notify = Callable[[str, dict[str, Any]], None]
Request = Callable[[str, dict[str, Any]], Awaitable[Any]]

PERMISSION_OPTIONS = [
    {"optionId": "allow_once", "name": "Allow once", "kind": "allow_once"},
    {"optionId": "allow_always", "name": "Always allow this tool in this session", "kind": "allow_always"},
    {"optionId": "reject_once", "name": "Reject", "kind": "reject_once"},
    {"optionId": "reject_always", "name": "Always reject this tool in this session", "kind": "reject_always"},
]


class Daemon:
    def __init__(
        self,
        root: Path,
        options: InitOptions,
        *,
        notify: Notify,
        request: Request,
        config: WorkspaceConfig | None = None,
    ) -> None:
        self.root = root
        self.options = options
        self.config = config or WorkspaceConfig()
        self._notify = notify
        self._request = request
        self.trusted = options.workspace_trusted
        self.unloaded: list[dict[str, Any]] = []  # stored registrations not imported: workspace not trusted
        self.store_error: str | None = None
        self.store = self._open_store(options) if options.store.enabled else None
        self.llm = OpenAICompatibleClient()
        llm = options.llm.apply(LLMConfig())
        self.registry = ToolRegistry(
            root,
            timeout_sec=options.tools.timeout_sec,
            max_output_bytes=options.tools.max_output_bytes,
            max_memory_mb=options.tools.max_memory_mb,
            inherit_secrets=options.tools.inherit_secrets,
            secret_values=[llm.api_key or ""],
            client_caller=self._call_client_tool,
        )
        self.mcp = McpSource(
            root,
            timeout_sec=options.tools.timeout_sec,
            max_output_bytes=options.tools.max_output_bytes,
            reserved=self.registry.own_names,
            report=self._report,
            tools_changed=lambda: self.tools_changed(persist=False),
        )
        self.registry.attach(self.mcp)
        self._mcp_releases: set[asyncio.Task[None]] = set()
        self._session_mcp: dict[str, list[McpServer]] = {}  # the servers each session named itself
        keys = {llm.base_url: llm.api_key} if llm.api_key else {}  # the key belongs to that server only
        defaults = AgentConfig(llm=replace(llm, api_key=None), max_steps=options.max_steps)
        if options.system_prompt is not None:
            defaults = defaults.with_overrides(system_prompt=options.system_prompt)
        self.runtime = AgentRuntime(
            self.llm,
            self.registry,
            defaults=defaults,
            events=self._on_update,
            approver=self,
            store=self.store,
            keys=keys,
            probe=ServerWindowProbe(),
        )
        self._watchers: dict[str, list[Callable[[AgentEvent], None]]] = {}
        self._thought_parts: dict[tuple[str, int], list[str]] = {}

    def watch(self, session_id: str, callback: Callable[[AgentEvent], None]) -> Callable[[], None]:
        """Also send a session's updates to `callback` (e.g. a $/progress reporter); returns the undo."""
        callbacks = self._watchers.setdefault(session_id, [])
        callbacks.append(callback)
        return lambda: callbacks.remove(callback)

    def _open_store(self, options: InitOptions) -> SqliteStore | None:
        """A store that cannot be opened is reported, and the daemon runs on without persistence."""
        try:
            if options.store.path:
                return SqliteStore(self.root / options.store.path)
            return SqliteStore.for_workspace(self.root)
        except StoreError as exc:
            self.store_error = f"sessions will not be saved: {exc}"
            log.error("%s", self.store_error)
            return None

    async def restore_tools(self) -> list[str]:
        """Re-register what this workspace had registered before; returns the problems met. Importing
        a file runs its code, and the store may have come with a cloned repository: in a workspace
        not trusted yet the registrations are only listed (see `trust`). The workspace file's `tools`
        come with them, under the same rule."""
        records: list[dict[str, Any]] = []
        if self.store is not None:
            try:
                records = self.store.load_registrations()
            except StoreError as exc:
                return [str(exc)]
        if not self.trusted:
            self.unloaded = records
            problems: list[str] = []
        else:
            problems = await self.registry.restore(records) + await self._configured_tools()
        if self.tool_list():
            self.tools_changed(persist=False)
        return problems

    async def register_tool(self, p: RegisterToolParams) -> list[ToolSpec]:
        """A workspace file's functions, or a tool the client runs itself; then tell every client."""
        if p.client:
            if p.name is None or p.input_schema is None:
                raise RegistrationError("a client tool needs name, description and inputSchema")
            register = self.registry.register_client_tool
            specs = [
                register(p.name, p.description or "", p.input_schema, requires_approval=p.requires_approval)
            ]
        else:
            if p.path is None:
                raise RegistrationError("path is required (or client: true with name and inputSchema)")
            specs = await self.registry.register_file(p.path, function=p.function, options=p.options())
        self.tools_changed()
        return specs

    async def reload(self, path: str) -> None:
        """A saved file that backs registered tools is reflected again, and every client told."""
        if await self.registry.reload(path) is not None:
            self.tools_changed()

    async def trust(self) -> list[str]:
        """The user trusts the workspace: import the registrations held back; returns the problems."""
        self.trusted = True
        records, self.unloaded = self.unloaded, []
        problems = await self.registry.restore(records) + await self._configured_tools()
        self.tools_changed(persist=False)
        return problems

    async def _configured_tools(self) -> list[str]:
        """The files the workspace configuration file names, registered as a stored record would be."""
        problems = await self.registry.restore([{"path": path} for path in self.config.tools])
        return [f"{self.config.source}: tools: {problem}" for problem in problems]

    def standing_policy(self) -> dict[str, Decision]:
        """The workspace file's approval policy, as the standing decisions a new session starts with:
        `reject` always, `allow` only in a trusted workspace (a cloned repository must not approve
        for you)."""
        policy = {name: Decision.REJECT_ALWAYS for name in self.config.reject}
        if self.trusted:
            policy |= {name: Decision.ALLOW_ALWAYS for name in self.config.allow if name not in policy}
        return policy

    def unregister(self, name: str) -> dict[str, Any]:
        """Remove a tool, or a stored registration held back (so a suspicious one can go unimported)."""
        held = [wire.unloaded_registration(record)["name"] for record in self.unloaded]
        if name in held:
            removed = wire.unloaded_registration(self.unloaded.pop(held.index(name)))
        else:
            removed = wire.tool_spec(self.registry.unregister(name))
        self.tools_changed()
        return removed

    def tool_list(self) -> list[dict[str, Any]]:
        """The registered tools, then the stored registrations not loaded yet."""
        loaded = [wire.tool_spec(spec) for spec in self.registry.list()]
        return loaded + [wire.unloaded_registration(record) for record in self.unloaded]

    def tools_changed(self, *, persist: bool = True) -> None:
        if persist and self.store is not None:
            self.store.save_registrations(self.registry.registrations() + self.unloaded)
        self._notify("agent/toolsChanged", {"tools": self.tool_list()})

    async def start_session(self, p: StartSessionParams, *, session_id: str | None = None) -> AgentSession:
        """Start the session's MCP servers (and the workspace's) first: its tools are snapshotted. The
        workspace file's approval policy gives its first standing decisions."""
        configs = [*self.options.mcp_servers, *p.mcp_servers]
        token = f"starting:{id(p)}"
        problems: list[str] = []
        try:
            specs = await self.mcp.acquire(token, configs, problems.append) if configs else []
            names = p.tools
            if names is None and configs:
                names = [*self.registry.own_names(), *(spec.name for spec in specs)]
            session = self.runtime.start_session(
                p.task,
                system_prompt=p.system_prompt,
                tool_names=names,
                llm=p.llm.apply(self.runtime.defaults.llm) if p.llm is not None else None,
                max_steps=p.max_steps,
                session_id=session_id,
                standing=self.standing_policy(),
            )
        except BaseException:
            await self.mcp.release(token)
            raise
        self.mcp.rename(token, session.session_id)
        self._session_mcp[session.session_id] = list(p.mcp_servers)
        for problem in problems:
            self._report(session.session_id, problem)
        return session

    async def prompt(
        self, session_id: str, text: str, mcp_servers: list[McpServer] | None = None
    ) -> AgentSession:
        """A follow-up turn, on either door. A session that ended its turn let its MCP servers go (see
        `_send`): they are taken up again first, or the follow-up's MCP calls would find no server.
        `mcp_servers` replaces the ones the session named (an ACP client names them again on load)."""
        self.runtime.get(session_id)  # an unknown session starts no server
        if mcp_servers is not None:
            self._session_mcp[session_id] = list(mcp_servers)
        configs = [*self.options.mcp_servers, *self._session_mcp.get(session_id, [])]
        if configs:
            await self.mcp.acquire(session_id, configs, lambda problem: self._report(session_id, problem))
        return self.runtime.prompt(session_id, text)

    def _report(self, session_id: str, message: str) -> None:
        """A problem with one of a session's tool sources, in the log and as a status update of that
        session (when it is one yet)."""
        log.warning("%s", message)
        try:
            session = self.runtime.get(session_id)
        except Exception:  # not a session (yet, or any more): the log has it
            return
        self._send(StatusChanged(session_id, len(session.steps), session.status, message=message))

    def _release_mcp(self, session_id: str) -> None:
        task = asyncio.get_running_loop().create_task(self.mcp.release(session_id))
        self._mcp_releases.add(task)
        task.add_done_callback(self._mcp_releases.discard)

    def list_sessions(self, status: str | None, limit: int, offset: int) -> tuple[list[dict[str, Any]], int]:
        if self.store is None:
            held = self.runtime.sessions(status=status)
            return [wire.session_summary(s) for s in held[offset : offset + limit]], len(held)
        rows, total = self.store.list(status, limit, offset)
        return [self._summary(row) for row in rows], total

    def _summary(self, row: SessionRow) -> dict[str, Any]:
        """A stored row, or this daemon's newer state of it when the store could not take that."""
        if self.runtime.is_unsaved(row.session_id):
            return wire.session_summary(self.runtime.get(row.session_id))
        return wire.session_row(row)

    def delete_session(self, session_id: str) -> bool:
        self.runtime.get(session_id)
        if self.runtime.is_busy(session_id):
            self.runtime.cancel(session_id)
        self.runtime.forget(session_id)
        self._session_mcp.pop(session_id, None)
        self._release_mcp(session_id)
        return self.store.delete(session_id) if self.store is not None else True

    def observation(self, session_id: str, call_id: str) -> dict[str, Any]:
        """A tool result whole: what the model was shown of it may have been cut to fit its window."""
        found = find_observation(self.runtime.get(session_id), call_id)
        if found is None:
            raise UnknownToolCall(session_id, call_id)
        return {"sessionId": session_id, **wire.observation(found), "output": found.output}

    def load_session(self, session_id: str) -> int:
        """Replay a stored trajectory as agent/update notifications; returns how many were sent."""
        events = self.runtime.replay(session_id)
        for event in events:
            self._send(event)
        return len(events)

    def _on_update(self, event: AgentEvent) -> None:
        """Thought deltas that arrive together (one network read often holds many SSE events) go out as
        one notification at the next turn of the loop; anything else first flushes them, keeping order."""
        if isinstance(event, ThoughtChunk):
            if not self._thought_parts:
                asyncio.get_running_loop().call_soon(self._flush_thoughts)
            self._thought_parts.setdefault((event.session_id, event.step), []).append(event.text)
            return
        self._flush_thoughts()
        self._send(event)

    def _flush_thoughts(self) -> None:
        parts, self._thought_parts = self._thought_parts, {}
        for (session_id, step), texts in parts.items():
            self._send(ThoughtChunk(session_id, step, "".join(texts)))

    def _send(self, event: AgentEvent) -> None:
        if isinstance(event, StatusChanged) and event.status is SessionStatus.FINISHED:
            self._release_mcp(event.session_id)
        self._notify("agent/update", wire.update_params(event))
        for callback in list(self._watchers.get(event.session_id, ())):
            callback(event)

    async def request_permission(
        self, session: AgentSession, call: ToolCall, spec: ToolSpec
    ) -> tuple[Decision, str | None] | None:
        """Ask the editor; any failure means 'no answer yet' and the decision may come via agent/approve."""
        params = {
            "sessionId": session.session_id,
            "toolCall": wire.tool_call(call),
            "tool": wire.tool_spec(spec),
            "options": PERMISSION_OPTIONS,
        }
        try:
            answer = await self._request("agent/requestPermission", params)
        except Exception as exc:  # the client may not implement it; agent/approve still works
            log.info("agent/requestPermission got no decision: %s", exc)
            return None
        return _decision_from(answer)

    async def _call_client_tool(self, session_id: str, call: ToolCall) -> Any:
        params = {
            "sessionId": session_id,
            "toolCallId": call.id,
            "name": call.name,
            "arguments": call.arguments,
        }
        return await self._request("agent/executeTool", params)

    async def aclose(self) -> None:
        await asyncio.gather(*self._mcp_releases)
        await self.mcp.aclose()
        await self.registry.aclose()
        await self.llm.aclose()
        if self.store is not None:
            self.store.release_all(self.runtime.owner)
            self.store.close()


def _decision_from(answer: Any) -> tuple[Decision, str | None] | None:
    """Accept `{decision, reason?}` and ACP's `{outcome: {outcome: "selected", optionId}}`."""
    if not isinstance(answer, dict):
        return None
    outcome = answer.get("outcome")
    choice = outcome.get("optionId") if isinstance(outcome, dict) else answer.get("decision")
    try:
        decision = Decision(str(choice))
    except ValueError:
        return None
    reason = answer.get("reason")
    return decision, reason if isinstance(reason, str) else None
