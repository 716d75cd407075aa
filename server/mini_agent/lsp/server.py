"""The JSON-RPC face of the daemon: agent/* methods and notifications over pygls.

Each handler parses its params, calls the domain (`Workspace`, `AgentRuntime`, `ToolRegistry`) and maps
the result or the error; no agent logic lives here. Domain modules are imported when the first
agent request arrives, not while `initialize` is answered. Every use of a pygls private member is
in `pygls_compat`.
"""

from __future__ import annotations

import asyncio
import logging
import threading
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any, BinaryIO, TypeVar

from lsprotocol import types
from pygls.exceptions import JsonRpcException, JsonRpcInvalidParams, JsonRpcServerNotInitialized
from pygls.lsp.server import LanguageServer
from pygls.protocol import JsonRPCNotification, JsonRPCRequestMessage, default_converter
from pygls.uris import to_fs_path

from mini_agent.lsp import framing, pygls_compat, records, session_config, slash, trusting
from mini_agent.lsp.capabilities import SERVER_NAME
from mini_agent.lsp.outgoing import Outgoing
from mini_agent.lsp.progress import cancellable, progress, server_token
from mini_agent.plumbing import jsoncodec
from mini_agent.plumbing.jsonrpc import JsonRpcError
from mini_agent.plumbing.pipes import SafeWriter
from mini_agent.plumbing.version import VERSION

if TYPE_CHECKING:
    from cattrs import Converter

    from mini_agent.app.workspace import Workspace
    from mini_agent.lsp.params import (
        ApproveParams,
        PromptParams,
        RunParams,
        SessionParams,
        StartSessionParams,
        StepParams,
    )
    from mini_agent.lsp.readahead import InBuffer

log = logging.getLogger("mini_agent")
T = TypeVar("T")


class _Rejected:
    """A request whose envelope could not be read; answered with an error instead of dropped."""

    def __init__(self, msg_id: Any, error: JsonRpcException) -> None:
        self.id = msg_id
        self.error = error


class AgentProtocol(pygls_compat.CompatProtocol):
    """LSP lifecycle from pygls, plus answers for the messages pygls would drop silently."""

    def structure_message(self, data: dict[str, Any]) -> Any:
        try:
            return super().structure_message(data)
        except JsonRpcException as exc:
            if "id" in data and "method" in data:
                return _Rejected(data["id"], exc)
            raise

    def handle_message(self, message: Any) -> None:
        if isinstance(message, _Rejected):
            self.answer_error(message.id, message.error)
            return
        method = getattr(message, "method", None)
        is_request = isinstance(message, JsonRPCRequestMessage) or (
            method is not None and getattr(message, "id", None) is not None
        )
        if is_request and not pygls_compat.initialized(self) and method != types.INITIALIZE:
            self.answer_error(message.id, JsonRpcServerNotInitialized(f"{method} before initialize"))
            return
        super().handle_message(message)

    def answer_error(self, msg_id: Any, error: JsonRpcException) -> None:
        """Answer with an error; `msg_id` may be None (JSON-RPC's id null, for unreadable messages)."""
        if msg_id is None:  # pygls' converter would drop the null id the spec requires
            pygls_compat.send_raw(self, JsonRpcError(error.code, error.message, error.data).response())
        else:
            pygls_compat.send_error(self, msg_id, error)

    def notify_json(self, method: str, params: dict[str, Any]) -> None:
        """A notification whose params are already plain JSON, framed here without pygls' attrs/cattrs
        round trip and per-message logging, and written with `linger` (the ordering contract is in
        `plumbing.pipes`). Anything that is not plain JSON after all goes pygls' way."""
        message = {"jsonrpc": "2.0", "method": method, "params": params}
        try:
            body = jsoncodec.dumps(message)
        except (TypeError, ValueError):
            body = b""
        if not body or not isinstance(self.writer, SafeWriter):  # pygls reports a missing writer
            pygls_compat.send_raw(self, message)
            return
        if pygls_compat.frames_with_headers(self):
            body = b"Content-Length: %d\r\n\r\n%s" % (len(body), body)
        self.writer.write(body, linger=True)


def _dict_params_converter() -> Converter:
    """Custom methods get plain dicts (pygls' default would turn them into namedtuples)."""
    converter: Converter = default_converter()  # type: ignore[no-untyped-call]
    converter.register_structure_hook(JsonRPCRequestMessage, lambda obj, cls: cls(**obj))
    converter.register_structure_hook(JsonRPCNotification, lambda obj, cls: cls(**obj))
    return converter


class AgentServer(LanguageServer):
    def __init__(self) -> None:
        super().__init__(
            SERVER_NAME, VERSION, protocol_cls=AgentProtocol, converter_factory=_dict_params_converter
        )
        self._agent_workspace: Workspace | None = None
        self.init_options: Any = None
        self._init_error: str | None = None
        self.restoring: asyncio.Future[None] | None = None
        self.shutting_down = False
        self._closing: asyncio.Future[None] | None = None
        self.outgoing = Outgoing(self)  # requests to the client, withdrawn when nobody waits for them

    def close_workspace(self) -> asyncio.Future[None]:
        """Stop tool hosts, close the HTTP session and the store, once: `shutdown` and the end of
        input (an editor that exits without waiting for the answer) share the same closing."""
        self.shutting_down = True
        if self._closing is None:
            self.outgoing.withdraw_all()  # a question still at the editor ends with the daemon
            workspace = self._agent_workspace
            self._closing = asyncio.ensure_future(
                workspace.aclose() if workspace is not None else asyncio.sleep(0)
            )
        return self._closing

    @property
    def agent_workspace(self) -> Workspace:
        """The app's `Workspace`, built on first use (pygls' own `workspace` is the LSP one)."""
        if self._init_error is not None:
            raise JsonRpcInvalidParams(self._init_error)
        if self._agent_workspace is None:
            self._agent_workspace = self._build_workspace()
        return self._agent_workspace

    def _build_workspace(self) -> Workspace:
        """initializationOptions over the workspace file over the environment (`workspace_config`)."""
        import os

        from mini_agent.app.config import resolve
        from mini_agent.app.workspace import Workspace
        from mini_agent.core.errors import AgentError
        from mini_agent.lsp.params import init_options

        root = _workspace_root(self)
        try:
            options, config = resolve(root, init_options(self.init_options), os.environ)
        except AgentError as exc:
            self._init_error = str(exc)
            raise JsonRpcInvalidParams(self._init_error) from None
        from mini_agent.lsp.client import LspClient

        assert isinstance(self.protocol, AgentProtocol)
        client = LspClient(self.protocol.notify_json, self.outgoing.ask, lambda: self.client_capabilities)
        return Workspace(root, options, client, config=config)

    def report_server_error(self, error: Exception, source: Any) -> None:
        """A frame that is not JSON gets the JSON-RPC parse error (id null); the connection lives on."""
        if isinstance(error, ValueError) and not isinstance(error, JsonRpcException):
            assert isinstance(self.protocol, AgentProtocol)
            self.protocol.answer_error(None, framing.pygls_error(JsonRpcError.parse_error(str(error))))
            return
        log.error("server error: %s", error)


server = AgentServer()
commands = slash.Commands(server, server.outgoing.ask)  # a prompt that is a command runs it (`slash`)


def _workspace_root(ls: AgentServer) -> Path:
    workspace = ls.workspace
    if workspace.root_path:
        return Path(workspace.root_path).resolve()
    for folder in workspace.folders.values():
        path = to_fs_path(folder.uri)
        if path:
            return Path(path).resolve()
    return Path.cwd().resolve()


# -- lifecycle ---------------------------------------------------------------------------------


@server.feature(types.INITIALIZE)
def on_initialize(ls: AgentServer, params: types.InitializeParams) -> None:
    options = params.initialization_options
    if options is not None and not isinstance(options, dict):
        raise JsonRpcInvalidParams("initializationOptions must be an object")
    ls.init_options = options


@server.feature(types.INITIALIZED)
def on_initialized(ls: AgentServer, params: types.InitializedParams) -> None:
    """Build the workspace now that initialize is answered, so bad options are reported early, and
    restore the workspace's tool registrations."""
    try:
        workspace = ls.agent_workspace
    except JsonRpcException as exc:
        _show_error(ls, exc.message)
        return
    from mini_agent.plumbing.eventloop import settle_heap

    settle_heap()  # the daemon's modules and its setup
    if workspace.store_error:
        _show_error(ls, workspace.store_error)
    if held := workspace.held_back_note():  # an untrusted folder never loses its tools silently
        ls.window_show_message(types.ShowMessageParams(types.MessageType.Warning, f"mini-agent: {held}"))
    ls.restoring = asyncio.ensure_future(_restore(ls, workspace))


async def _restore(ls: AgentServer, workspace: Workspace) -> None:
    for problem in await workspace.restore_tools():
        _show_error(ls, f"could not restore a tool registration: {problem}")


def _show_error(ls: AgentServer, message: str) -> None:
    ls.window_show_message(types.ShowMessageParams(types.MessageType.Error, f"mini-agent: {message}"))


@server.feature(types.SHUTDOWN)
async def on_shutdown(ls: AgentServer, params: Any) -> None:
    await ls.close_workspace()


# -- handlers ----------------------------------------------------------------------------------


Handler = Callable[["Workspace", Any], Awaitable[Any]]


def method(name: str, model: str) -> Callable[[Handler], Handler]:
    """Register an agent/* handler: parse params into `params.<model>`, run it, map domain errors.

    The model is named, not imported, so pydantic loads with the first agent request, not at start-up.
    """

    def register(handler: Handler) -> Handler:
        @server.feature(name)
        async def handle(ls: AgentServer, raw: Any) -> Any:
            from mini_agent.core.errors import AgentError, error_data
            from mini_agent.core.strict import parse
            from mini_agent.lsp import params

            if ls.restoring is not None:
                await asyncio.shield(ls.restoring)
            try:
                return await handler(ls.agent_workspace, parse(name, raw, getattr(params, model)))
            except AgentError as exc:  # the one domain error type: its code, message, reason, details
                raise JsonRpcException(code=exc.code, message=str(exc), data=error_data(exc)) from exc

        return handler

    return register


def _stopping() -> bool:
    """A shutdown is not a cancel: then a request is dropped and its session left as it is."""
    return server.shutting_down


@method("agent/startSession", "StartSessionParams")
@commands.first
async def start_session(workspace: Workspace, p: StartSessionParams) -> dict[str, Any]:
    words, images, parts = p.turn(p.task)
    session = await workspace.start_session(
        words,
        system_prompt=p.system_prompt,
        tools=p.tools,
        llm=p.llm,
        max_steps=p.max_steps,
        mcp_servers=p.mcp_servers,
        permission_mode=p.permission_mode,
        images=images,
        parts=parts,
    )
    return {"sessionId": session.session_id, "status": session.status.value}


@method("agent/prompt", "PromptParams")
@commands.first
async def prompt(workspace: Workspace, p: PromptParams) -> dict[str, Any]:
    """A follow-up user turn; agent/step or agent/run then go on from it."""
    workspace.trace_parent(p.session_id, p.traceparent)
    words, images, parts = p.turn(p.text)
    session = workspace.sessions.prompt(p.session_id, words, images=images, parts=parts)
    return {"sessionId": session.session_id, "status": session.status.value}


@method("agent/step", "StepParams")
async def step(workspace: Workspace, p: StepParams) -> dict[str, Any]:
    from mini_agent.lsp import wire

    workspace.trace_parent(p.session_id, p.traceparent)

    session = workspace.sessions.get(p.session_id)
    title = f"mini-agent step {len(session.steps) + 1}"
    with workspace.sessions.expecting(p.session_id) as flight:  # an agent/cancel from now on stops it
        async with progress(server, workspace, p.session_id, p.work_done_token, title):
            work = workspace.sessions.step(p.session_id, flight=flight)
            record = await cancellable(work, lambda: workspace.sessions.cancel(p.session_id), _stopping)
    return wire.step_result(workspace.sessions.get(p.session_id), record)


@method("agent/run", "RunParams")
async def run(workspace: Workspace, p: RunParams) -> dict[str, Any]:
    from mini_agent.lsp import wire

    workspace.trace_parent(p.session_id, p.traceparent)

    title = f"mini-agent: {workspace.sessions.get(p.session_id).task[:60]}"
    with workspace.sessions.expecting(p.session_id) as flight:  # an agent/cancel from now on stops it
        token = p.work_done_token if p.work_done_token is not None else await server_token(server)
        async with progress(server, workspace, p.session_id, token, title):
            work = workspace.sessions.run(p.session_id, max_steps=p.max_steps, flight=flight)
            summary = await cancellable(work, lambda: workspace.sessions.cancel(p.session_id), _stopping)
    session = summary.session
    return {
        "sessionId": session.session_id,
        "status": session.status.value,
        "stopReason": summary.stop_reason.value if summary.stop_reason else None,
        "finalAnswer": session.final_answer,
        "steps": len(session.steps),
        "stepsRun": summary.steps_run,
        "error": summary.last.error,
        "usage": wire.usage(session.usage),
    }


@method("agent/cancel", "SessionParams")
async def cancel(workspace: Workspace, p: SessionParams) -> dict[str, Any]:
    workspace.sessions.get(p.session_id)
    return {"sessionId": p.session_id, "cancelled": workspace.sessions.cancel(p.session_id)}


@method("agent/approve", "ApproveParams")
async def approve(workspace: Workspace, p: ApproveParams) -> dict[str, Any]:
    workspace.sessions.approve(p.session_id, p.tool_call_id, p.decision, p.reason)
    session = workspace.sessions.get(p.session_id)
    return {"sessionId": p.session_id, "toolCallId": p.tool_call_id, "status": session.status.value}


for request, model, handler in records.REQUESTS:
    method(request, model)(handler)
method("agent/listModels", "ListModelsParams")(session_config.list_models)
method("agent/configureSession", "ConfigureSessionParams")(session_config.configure_session)
method("agent/listCommands", "Params")(slash.list_commands)
trust_workspace, untrust_workspace = trusting.handlers(server)
method("agent/trustWorkspace", "TrustParams")(trust_workspace)
method("agent/untrustWorkspace", "Params")(untrust_workspace)


@server.feature(types.TEXT_DOCUMENT_DID_SAVE)
async def did_save(ls: AgentServer, params: types.DidSaveTextDocumentParams) -> None:
    await _reload(ls, params.text_document.uri)


@server.feature(types.WORKSPACE_DID_CHANGE_WATCHED_FILES)
async def did_change_watched(ls: AgentServer, params: types.DidChangeWatchedFilesParams) -> None:
    for change in params.changes:
        await _reload(ls, change.uri)


async def _reload(ls: AgentServer, uri: str) -> None:
    path = to_fs_path(uri)
    if path is None or ls._agent_workspace is None:
        return
    try:
        await ls.agent_workspace.reload(path)
    except Exception as exc:  # a broken save must not take the daemon down
        log.warning("reloading %s failed: %s", path, exc)
        ls.window_log_message(types.LogMessageParams(types.MessageType.Warning, f"reload {path}: {exc}"))


def serve(
    stdin: int,
    read_ahead: InBuffer,
    stdout: BinaryIO,
    *,
    ndjson: bool,
    answered: dict[str, Any] | None = None,
) -> None:
    """pygls' `start_io`, with our reader (bounded frames, errors answered) and a quiet end of input.
    `read_ahead` holds what boot.py read of stdin (the fd) already, its first message included;
    `answered` is the response boot.py sent to an initialize there: pygls' own answer to it is checked
    against it and not sent (`pygls_compat.CompatProtocol`)."""
    from mini_agent.plumbing import eventloop
    from mini_agent.plumbing.redact import install

    install(logging.getLogger())
    # pygls logs a traceback for every deliberate error answer; keep that for debugging only
    logging.getLogger("pygls").setLevel(
        logging.DEBUG if log.isEnabledFor(logging.DEBUG) else logging.CRITICAL
    )

    stop = threading.Event()
    pygls_compat.install_stop_event(server, stop)  # shutdown() sets it, as with start_io
    writer = SafeWriter(stdout, newline=ndjson)
    server.protocol.set_writer(writer, include_headers=not ndjson)
    source = framing.Source(stdin, read_ahead, server.thread_pool)
    read = framing.read_lines if ndjson else framing.read_frames
    assert isinstance(server.protocol, AgentProtocol)
    server.protocol.answered_early = answered
    try:
        protocol, report = server.protocol, server.report_server_error
        eventloop.run(framing.serve(stop, read, source, protocol, report, server.close_workspace))
    except (KeyboardInterrupt, SystemExit):
        pass
    finally:
        writer.flush()  # what the last turn of the loop wrote
        server.shutdown()  # type: ignore[no-untyped-call]
