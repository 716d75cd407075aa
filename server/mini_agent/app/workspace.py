"""One workspace: its runtime, tools, model client and store, composed; trust and approval policy.

Built once a client has said where it works, it is the doors' only entrance: they call its verbs, and
its `sessions` (`app.sessions.Sessions`) for the session verbs, and never hold the runtime
(`lint-imports` keeps `core.runtime` and `core.stepper` out of them).
Protocol-free: it returns the core's values and reaches the client only through `port.Client`, which
each door implements (`lsp.client`, `acp.client`). Beside it: `sessions` (the session verbs, over the
runtime), `mcp_turns` (a session's MCP servers around its turns, and the wait before one), `outbox`
(the events on their way to the client) and `model_choices` (the models offered for a session).
"""

from __future__ import annotations

import asyncio
import logging
import os
from collections.abc import Callable, Mapping
from dataclasses import dataclass, replace
from pathlib import Path
from typing import TYPE_CHECKING, Any

from mini_agent.app import config as workspace_config
from mini_agent.app import scope, trust
from mini_agent.app.config import WorkspaceConfig
from mini_agent.app.mcp_turns import GatedRuntime, SessionServers
from mini_agent.app.model_choices import ModelAccess, ModelChoices, ModelMenu
from mini_agent.app.options import InitOptions, LLMParams, ToolRegistration
from mini_agent.app.outbox import Outbox
from mini_agent.app.port import Answer, Client, HeldRegistration, Scoping, ToolList
from mini_agent.app.sessions import Sessions
from mini_agent.core.contracts import Image, LLMConfig, Part, ToolCall, ToolMode, ToolSpec
from mini_agent.core.errors import WorkspaceUntrusted
from mini_agent.core.events import AgentEvent
from mini_agent.core.session import (
    AgentConfig,
    AgentSession,
    Ask,
    Decision,
    PermissionMode,
    new_session_id,
)
from mini_agent.llm.formats import reply_format
from mini_agent.store.sqlite import SqliteStore, StoreError
from mini_agent.telemetry.config import settings
from mini_agent.tools.mcp import McpSource
from mini_agent.tools.mcp.config import McpServer
from mini_agent.tools.registry import RegistrationError

if TYPE_CHECKING:
    from mini_agent.telemetry.live import Tracing

log = logging.getLogger(__name__)


@dataclass(frozen=True, slots=True)
class Trusted:
    """What trusting a folder came to: the problems met importing what it held back, whether it was
    recorded in the trust store, and why not (`unremembered`) when that was asked and failed."""

    problems: list[str]
    remembered: bool = False
    unremembered: str | None = None


class Workspace:
    """One workspace (`root`) as every door serves it: its runtime, composed with the model client,
    the tool registry (workspace files, client tools, MCP servers), the store and the window probe;
    what it may trust; and `client`, the door that asked for it. It is the core's `Approver` and its
    event sink: a permission prompt goes to `client.ask_permission`, each event to `client.publish`."""

    def __init__(
        self,
        root: Path,
        options: InitOptions,
        client: Client,
        *,
        config: WorkspaceConfig | None = None,
        access: ModelAccess | None = None,
    ) -> None:
        access = access or ModelAccess()
        self.root = root
        self.options = options
        self.config = config or WorkspaceConfig()
        self.client = client
        self._scoping = client if isinstance(client, Scoping) else None  # checked once: costly per call
        self.trusted = options.workspace_trusted
        self.unloaded: list[HeldRegistration] = []  # stored registrations not imported: not trusted
        self.store_error: str | None = None
        self.store = self._open_store(options) if options.store.enabled else None
        self.llm = access.client
        llm = options.llm.apply(LLMConfig())
        self.registry = options.tools.registry(
            root, secret_values=[llm.api_key or ""], client_caller=self.client.run_tool
        )
        self.mcp = McpSource(
            root,
            timeout_sec=options.tools.timeout_sec,
            max_output_bytes=options.tools.max_output_bytes,
            reserved=self.registry.own_names,
            report=self._report,
            tools_changed=lambda: self.tools_changed(persist=False),
            person=self.client,
            confine=options.tools.confined,
        )
        self.registry.attach(self.mcp)
        self.servers = SessionServers(
            self.mcp,
            self.registry,
            workspace_servers=lambda: self.options.mcp_servers,
            report=self._report,
            add_tools=lambda sid, specs: self._runtime.add_tools(sid, specs),
        )
        keys = {llm.base_url: llm.api_key} if llm.api_key else {}  # the key belongs to that server only
        self.models = ModelMenu(keys, access.lister)
        defaults = AgentConfig(llm=replace(llm, api_key=None), max_steps=options.max_steps)
        if options.system_prompt is not None:
            defaults = defaults.with_overrides(system_prompt=options.system_prompt)
        self.tracing = _tracing(options, lambda sid: self._runtime.get(sid))
        tap = self.tracing.observe if self.tracing is not None else None
        self.outbox = Outbox(self.client, tap=tap, finished=self.servers.release)
        self._on_update = self.outbox.emit  # the core's event sink
        self._runtime = GatedRuntime(  # private: the doors reach sessions through `sessions`
            self.llm,
            self.tracing.tools(self.registry) if self.tracing is not None else self.registry,
            defaults=defaults,
            events=self._on_update,
            approver=self,
            store=self.store,
            keys=keys,
            probe=access.probe,
            formats=reply_format,
            gate=self.servers.gate,
        )
        self.sessions = Sessions(self._runtime, self.servers, self.outbox, self.store)
        if self.store is not None and not self.trusted:
            self.store.adopt = self._adopt
        self.registry.held_back = self.held_back_note()

    def watch(self, session_id: str, callback: Callable[[AgentEvent], None]) -> Callable[[], None]:
        """Also send a session's updates to `callback` (e.g. a $/progress reporter); returns the undo."""
        return self.outbox.watch(session_id, callback)

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
            self.unloaded = [HeldRegistration.of(record) for record in records if isinstance(record, dict)]
            problems: list[str] = []
        else:
            problems = await self.registry.restore(records) + await self._configured_tools()
        if self.registry.list_tools() or self.unloaded:
            self.tools_changed(persist=False)
        return problems

    async def register_tool(self, p: ToolRegistration) -> list[ToolSpec]:
        """A workspace file's functions, or a tool the client runs itself; then tell every client."""
        options = p.options
        if p.client:
            if options.name is None or p.input_schema is None:
                raise RegistrationError("a client tool needs name, description and inputSchema")
            register = self.registry.register_client_tool
            specs = [
                register(
                    options.name,
                    options.description or "",
                    p.input_schema,
                    requires_approval=options.requires_approval,
                )
            ]
        else:
            if p.path is None:
                raise RegistrationError("path is required (or client: true with name and inputSchema)")
            specs = await self.registry.register_file(p.path, function=p.function, options=options)
        self.tools_changed()
        return specs

    async def reload(self, path: str) -> None:
        """A saved file that backs registered tools is reflected again, and every client told."""
        if await self.registry.reload(path) is not None:
            self.tools_changed()

    def held_back(self) -> list[str]:
        """What the workspace file names that waits for trust, in words; empty once trusted."""
        return [] if self.trusted else trust.Runs.of(self.config).words()

    def held_back_note(self) -> str:
        """What an untrusted folder left out, why and how to trust it ("" when nothing is)."""
        held = self.held_back()
        return trust.held_back_note(self.root, held) if held else ""

    async def trust_folder(
        self, request: InitOptions | None, env: Mapping[str, str], *, remember: bool
    ) -> Trusted:
        """The user trusts the folder, whichever door asked: its options re-read as trusted from the
        door's `request` (the workspace file's tools, MCP servers, model server and allow-list then
        apply), the folder recorded in the trust store with `remember`, what it held back imported. A
        workspace file that cannot be used raises its ConfigError, and nothing changes."""
        trusted_request = (request or InitOptions()).model_copy(update={"workspace_trusted": True})
        options, config = await asyncio.to_thread(workspace_config.resolve, self.root, trusted_request, env)
        remembered, unremembered = False, None
        if remember:
            try:
                await asyncio.to_thread(trust.remember, self.root, config)
                remembered = True
            except (OSError, ValueError) as exc:
                unremembered = str(exc)
        self.config = config
        return Trusted(await self.trust(options), remembered, unremembered)

    async def trust(self, options: InitOptions | None = None) -> list[str]:
        """The user trusts the workspace: import the registrations held back; returns the problems.
        `options` (resolved as trusted) bring the workspace file's MCP servers and model server too."""
        self.trusted = True
        self.registry.held_back = ""
        if options is not None:
            self.options = options
            llm = options.llm.apply(LLMConfig())
            self._runtime.defaults = replace(self._runtime.defaults, llm=replace(llm, api_key=None))
        if self.store is not None:
            self.store.adopt = None  # the sessions read before stay as they were adopted
        held, self.unloaded = self.unloaded, []
        problems = await self.registry.restore([h.record for h in held]) + await self._configured_tools()
        self.tools_changed(persist=False)
        return problems

    def use_model_server(self, options: InitOptions) -> None:
        """The user set up a model server meanwhile (`mini-agent setup`, then ACP's `authenticate`):
        `options`, resolved again, give new sessions their model settings, and the key goes to its own
        server only. Sessions already started keep theirs."""
        llm = options.llm.apply(LLMConfig())
        self.options = options
        self._runtime.defaults = replace(self._runtime.defaults, llm=replace(llm, api_key=None))
        if llm.api_key:
            self._runtime.add_key(llm.base_url, llm.api_key)
            self.models.add_key(llm.base_url, llm.api_key)

    @property
    def model_server_named(self) -> bool:
        """Whether some layer (the request, the workspace file, the environment, the user's settings)
        names a model server, rather than the default address standing in. A file's server counts
        before the folder is trusted: the trust prompt that comes first asks about it."""
        named = self.options.llm.model_dump(exclude_none=True).get("base_url") is not None
        return named or "base_url" in self.config.llm

    async def _configured_tools(self) -> list[str]:
        """The files the workspace configuration file names, registered as a stored record would be."""
        problems = await self.registry.restore([{"path": path} for path in self.config.tools])
        return [f"{self.config.source}: tools: {problem}" for problem in problems]

    def _adopt(self, session: AgentSession) -> None:
        """A session read from the store of a workspace not trusted (the store may have come with a
        cloned repository): nothing stored there is acted on. It runs with this workspace's own model
        settings (its stored ones only where they name the same server), its permission mode is never
        `ask_never`, and its standing and pending decisions that allow a call are dropped (those that
        reject stay; a dropped call is asked again)."""
        trust.distrust(session, self._runtime.defaults.llm)

    def standing_policy(self) -> dict[str, Decision]:
        """The workspace file's approval policy, as the standing decisions a new session starts with:
        `reject` always, `allow` only in a trusted workspace (a cloned repository must not approve
        for you)."""
        policy = {name: Decision.REJECT_ALWAYS for name in self.config.reject}
        if self.trusted:
            policy |= {name: Decision.ALLOW_ALWAYS for name in self.config.allow if name not in policy}
        return policy

    def unregister(self, name: str) -> ToolSpec | HeldRegistration:
        """Remove a tool, or a stored registration held back (so a suspicious one can go unimported)."""
        held = [registration.name for registration in self.unloaded]
        removed: ToolSpec | HeldRegistration
        removed = self.unloaded.pop(held.index(name)) if name in held else self.registry.unregister(name)
        self.tools_changed()
        return removed

    def tool_list(self) -> ToolList:
        """The registered tools, then the stored registrations not loaded yet."""
        return ToolList(self.registry.list_tools(), list(self.unloaded))

    def tools_changed(self, *, persist: bool = True) -> None:
        if persist and self.store is not None:
            held = [registration.record for registration in self.unloaded]
            self.store.save_registrations(self.registry.registrations() + held)
        self.client.tools_changed(self.tool_list())

    # -- sessions: `sessions` (app.sessions.Sessions) holds the doors' verbs; these two add the policy

    async def start_session(
        self,
        task: str,
        *,
        system_prompt: str | None = None,
        tools: list[str] | None = None,
        llm: LLMParams | None = None,
        max_steps: int | None = None,
        mcp_servers: list[McpServer] | None = None,
        session_id: str | None = None,
        permission_mode: PermissionMode | None = None,
        images: tuple[Image, ...] = (),
        parts: tuple[Part, ...] = (),
    ) -> AgentSession:
        """Begin a session at once, its MCP servers starting in the background (`Sessions.start`). The
        workspace file's approval policy gives its first standing decisions."""
        self.check_mode(permission_mode)
        return await self.sessions.start(
            task,
            system_prompt=system_prompt,
            tools=tools,
            llm=llm,
            max_steps=max_steps,
            mcp_servers=mcp_servers,
            session_id=session_id or new_session_id(),
            permission_mode=permission_mode,
            standing=self.standing_policy(),
            images=images,
            parts=parts,
        )

    def check_mode(self, mode: PermissionMode | None) -> None:
        """`ask_never` is for a trusted folder only: a cloned repository must not run tools unasked."""
        if mode is PermissionMode.ASK_NEVER and not self.trusted:
            raise WorkspaceUntrusted(f"permission mode {mode.value} ({mode.label})", str(self.root))

    def configure_session(
        self,
        session_id: str,
        *,
        model: str | None = None,
        permission_mode: PermissionMode | None = None,
        tool_mode: ToolMode | None = None,
    ) -> AgentSession:
        """Change a session's model, permission mode or tool mode, from its next model turn on."""
        self.check_mode(permission_mode)
        return self.sessions.configure(
            session_id, model=model, permission_mode=permission_mode, tool_mode=tool_mode
        )

    # -- models ---------------------------------------------------------------------------------

    async def list_models(self, base_url: str | None = None, *, refresh: bool = False) -> ModelChoices:
        """The models to offer for `base_url` (the daemon's model server by default): asked of the
        server once and kept (`refresh` asks again); the daemon's API key goes to its own server only."""
        return await self.models.choices(self._runtime.defaults.llm, base_url, refresh=refresh)

    def known_models(self, base_url: str) -> list[str]:
        """The ids kept for `base_url` without asking (none when it was not asked, or listed none)."""
        return self.models.known(base_url)

    def _report(self, session_id: str, message: str) -> None:
        """A problem with one of a session's tool sources (`Sessions.report`)."""
        self.sessions.report(session_id, message)

    def trace_parent(self, session_id: str, traceparent: str | None) -> None:
        """A client's W3C `traceparent` for the session's next turn: its agent span's parent."""
        if self.tracing is not None and traceparent:
            self.tracing.parent(session_id, traceparent)

    async def request_permission(
        self, session: AgentSession, call: ToolCall, spec: ToolSpec
    ) -> Answer | None:
        """The core's `Approver`: the client asks the person; None leaves the call waiting."""
        return await self.client.ask_permission(session, call, spec)

    def ask_for(self, session: AgentSession, call: ToolCall, spec: ToolSpec) -> Ask:
        """The core's `CallPolicy`: a call the client says reaches outside the workspace is asked
        every time (`scope.ask_for`)."""
        where = self._scoping.scope(call) if self._scoping is not None else None
        return scope.ask_for(spec, where)

    async def aclose(self) -> None:
        await self._runtime.aclose()
        await self.servers.released()
        await self.mcp.aclose()
        await self.registry.aclose()
        await self.llm.aclose()
        if self.tracing is not None:
            self.tracing.close()
        if self.store is not None:
            self.store.release_all(self._runtime.owner)
            self.store.close()


def _tracing(options: InitOptions, get: Callable[[str], AgentSession]) -> Tracing | None:
    """The workspace's tracing when an endpoint is configured (`telemetry` option or the OpenTelemetry
    environment); None, loading nothing of OpenTelemetry, otherwise."""
    found = settings(options.telemetry.endpoint, options.telemetry.capture_content, os.environ)
    if found is None:
        return None
    from mini_agent.telemetry.live import Tracing, lookup

    return Tracing(found, lookup(get))
