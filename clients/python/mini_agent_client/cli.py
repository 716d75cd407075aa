"""The `mini-agent` command line: serve the daemon, or drive one from a terminal or a script.

    mini-agent ask --tools tools.py --tools metrics.py "How many lines does tools.py have?"
    echo "task" | mini-agent ask - --tools tools.py --json | jq -r 'select(.kind=="result") | .finalAnswer'
    mini-agent tools tools.py                  # the reflected schemas, as JSON
    mini-agent sessions --status awaiting_approval
    mini-agent sessions approve SESSION CALL allow_once && mini-agent sessions resume SESSION
    mini-agent models --base-url http://127.0.0.1:11434/v1   # the models a server offers

What the command line prints that someone else wrote (a model, a tool, a model server, a workspace file,
the daemon, a stored session) goes through `terminal.safe` first: control characters are shown as
escapes, never acted on, and rich never reads data as markup. `--json` prints JSON as it is.

Exit codes: 0 the agent answered, 1 it did not (model server down, step budget, loop, a refused
tool file), 2 bad usage, 130 cancelled with Ctrl-C (the session is cancelled, not killed: it stays
`ready` and `sessions resume` goes on with it).
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import os
import signal
import sys
from collections.abc import AsyncIterator, Awaitable, Callable, Coroutine
from pathlib import Path
from typing import TYPE_CHECKING, Any

from .client import RESULT, AgentClient
from .rpc import ConnectionClosed, RpcError
from .terminal import safe, text

if TYPE_CHECKING:
    from .render import View

EXIT_OK, EXIT_FAILED, EXIT_USAGE, EXIT_CANCELLED = 0, 1, 2, 130
DECISIONS = ("allow_once", "allow_always", "reject_once", "reject_always")
KEYS = {"o": "allow_once", "a": "allow_always", "r": "reject_once", "n": "reject_always"}
STATUSES = ("ready", "running", "awaiting_approval", "finished")
PERMISSION_MODES = ("ask_always", "ask_when_needed", "ask_never")


class UsageError(Exception):
    """A mistake in the command line that argparse cannot see (exit 2)."""


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="mini-agent", description="Run tool-using LLM agents from editors.")
    commands = parser.add_subparsers(dest="command", required=True)
    serve = commands.add_parser("serve", help="run the daemon on stdio (what editors start)")
    serve.add_argument("--ndjson", action="store_true",
                       help="one JSON message per line instead of LSP Content-Length framing")
    acp = commands.add_parser("acp", help="run the agent for ACP editors (Zed, JetBrains, ...) on stdio")
    acp.add_argument("--trust", action="store_true",
                     help="trust every folder without asking (for scripts; editors ask once per folder, "
                          "see docs/acp.md)")
    for name, words in (("trust", "trust a folder: its workspace file's tools, MCP servers, model server "
                                  "and allow-list run without asking (until that file or its tools change)"),
                        ("untrust", "forget a folder's trust: the next agent asks again")):
        trusting = commands.add_parser(name, help=words)
        trusting.add_argument("dir", nargs="?", type=Path, default=Path("."), help="the folder (default: .)")
    demo = commands.add_parser("demo", help="the seed scenario against a replayed model")
    demo.add_argument("--tool-mode", choices=["react", "native"], default="react")

    ask = commands.add_parser("ask", help="run one task with a model and workspace tools")
    ask.add_argument("task", help='the task; "-" reads it from stdin')
    # One FILE per flag (as pytest -p, docker -v): a list-valued option would take the task as a file.
    ask.add_argument("--tools", action="append", default=[], metavar="FILE",
                     help="a workspace Python file whose functions are tools (repeat for more files)")
    ask.add_argument("--max-steps", type=_positive, help="the session's step budget")
    ask.add_argument("--session", metavar="ID",
                     help="a follow-up in this stored session (one that ended its turn), not a new one")
    ask.add_argument("--permission-mode", choices=PERMISSION_MODES,
                     help="which tool calls ask: every one, those that need approval (default), or none "
                          "(a trusted workspace only: with --trust)")
    _run_options(ask)

    models = commands.add_parser("models", help="the models the model server offers")
    models.add_argument("--base-url", help="OpenAI-compatible server (default: the workspace's, then "
                                           "$OPENAI_BASE_URL)")
    models.add_argument("--refresh", action="store_true", help="ask the server again")
    _json_option(models)
    _root_option(models)

    tools = commands.add_parser("tools", help="print the JSON schemas reflected from tool files")
    tools.add_argument("files", nargs="+", metavar="FILE")
    _root_option(tools)

    mcp = commands.add_parser("mcp", help="serve workspace functions as an MCP server (stdio, or HTTP)")
    mcp.add_argument("files", nargs="*", metavar="FILE",
                     help="workspace Python files whose functions to serve")
    mcp.add_argument("--tools", action="append", default=[], metavar="FILE",
                     help="a workspace Python file whose functions to serve (repeat for more)")
    mcp.add_argument("--http", metavar="[HOST:]PORT",
                     help="serve Streamable HTTP at http://HOST:PORT/mcp (host: 127.0.0.1; port 0: any free "
                     "one); a bearer token is required when MINI_AGENT_MCP_TOKEN is set")
    mcp.add_argument("--timeout-sec", type=float, help="per-call time limit (default: 30)")
    mcp.add_argument("--max-output-bytes", type=int, help="output cap per call (default: 65536)")
    mcp.add_argument("--max-sessions", type=_positive,
                     help="--http: live MCP sessions at most; past it a new one gets 503 (default: 256)")
    mcp.add_argument("--session-idle-sec", type=_seconds,
                     help="--http: a session with no request for this long is closed (default: 900)")
    mcp.add_argument("--header-timeout-sec", type=_seconds,
                     help="--http: time a connection has to send a request's headers (and body) "
                          "before it is dropped (default: 30)")
    _root_option(mcp)

    sessions = commands.add_parser("sessions", help="list, show, resume and approve stored sessions")
    sessions.add_argument("--status", choices=STATUSES)
    _json_option(sessions)
    _root_option(sessions)
    actions = sessions.add_subparsers(dest="action")
    export = actions.add_parser("export", help="send stored sessions as OpenTelemetry traces")
    export.add_argument("--otlp", action="store_true", required=True,
                        help="over OTLP/HTTP to $OTEL_EXPORTER_OTLP_ENDPOINT (docs/telemetry.md)")
    export.add_argument("session_ids", nargs="*", metavar="SESSION", help="default: every stored session")
    show = actions.add_parser("show", help="a session's steps")
    show.add_argument("session_id")
    _json_option(show)
    _root_option(show)
    resume = actions.add_parser("resume", help="run a stored session on")
    resume.add_argument("session_id")
    _run_options(resume)
    approve = actions.add_parser("approve", help="decide on a tool call awaiting approval")
    approve.add_argument("session_id")
    approve.add_argument("tool_call_id")
    approve.add_argument("decision", choices=DECISIONS)
    approve.add_argument("--reason")
    _root_option(approve)
    return parser


def _json_option(parser: argparse.ArgumentParser) -> None:
    """`--json` anywhere on the line; SUPPRESS keeps a subcommand from resetting its parent's value."""
    parser.add_argument("--json", action="store_true", default=argparse.SUPPRESS,
                        help="print JSON (for run commands: one event per line, NDJSON)")


def _root_option(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--root", type=Path, default=argparse.SUPPRESS,
                        help="the workspace (default: the current directory)")


def _run_options(parser: argparse.ArgumentParser) -> None:
    _root_option(parser)
    parser.add_argument("--base-url", help="OpenAI-compatible server (default: $OPENAI_BASE_URL)")
    parser.add_argument("--model", help="model name (default: $MINI_AGENT_MODEL)")
    parser.add_argument("--tool-mode", choices=["react", "native", "json", "auto"])
    _json_option(parser)
    parser.add_argument("--trust", action="store_true",
                        help="trust the workspace: restore the tools registered in it before (default: only "
                             "the --tools given here)")
    parser.add_argument("--approve", choices=["ask", "all", "none"],
                        help="tools that need approval: ask in the terminal (default there), allow all, or "
                             "reject all (default without a terminal)")


def _resume_params(args: argparse.Namespace) -> dict[str, object]:
    """The model settings named on the command line apply to the resumed session, not only to new ones."""
    llm = {key: value for key, value in (("baseUrl", args.base_url), ("model", args.model),
                                          ("toolMode", args.tool_mode)) if value}
    return {"sessionId": args.session_id, **({"llm": llm} if llm else {})}


def _positive(text: str) -> int:
    value = int(text)
    if value < 1:
        raise argparse.ArgumentTypeError("must be 1 or more")
    return value


def _seconds(text: str) -> float:
    value = float(text)
    if not 0 < value < float("inf"):
        raise argparse.ArgumentTypeError("must be a positive number of seconds")
    return value


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    args.json = getattr(args, "json", False)
    if args.command == "serve":
        from mini_agent.lsp.boot import main as serve

        if args.ndjson:
            serve(ndjson=True)
        else:
            serve()
        return EXIT_OK
    if args.command == "acp":
        from mini_agent.acp import main as serve_acp

        serve_acp(["--trust"] if args.trust else [])
        return EXIT_OK
    if args.command == "mcp":
        from mini_agent.mcp.bounds import HttpBounds
        from mini_agent.mcp.server import main as serve_mcp

        root = getattr(args, "root", Path.cwd())
        bounds = HttpBounds.given(args.max_sessions, args.session_idle_sec, args.header_timeout_sec)
        return serve_mcp(
            root, [*args.tools, *args.files], timeout_sec=args.timeout_sec,
            max_output_bytes=args.max_output_bytes, http=args.http, http_bounds=bounds,
        )  # fmt: skip
    if args.command in ("trust", "untrust"):
        return trust_command(args.dir, trusting=args.command == "trust")
    if args.command == "sessions" and args.action == "export":
        return export_command(args)
    if args.command == "demo":
        from .demo import run_demo

        return asyncio.run(run_demo(tool_mode=args.tool_mode))
    try:
        return asyncio.run(COMMANDS[args.command](args))
    except UsageError as exc:
        say(str(exc))
        return EXIT_USAGE
    except RpcError as exc:
        say(exc.message)
        return EXIT_FAILED
    except ConnectionClosed:
        say("the daemon exited unexpectedly (what it printed is above; MINI_AGENT_LOG=debug shows its log)")
        return EXIT_FAILED


# -- commands ----------------------------------------------------------------------------------


async def ask_command(args: argparse.Namespace) -> int:
    task = _task(args.task)
    root = _root(args)
    files = [_tool_path(name, root) for name in args.tools]
    fields = {"max_steps": args.max_steps} if args.max_steps else {}
    if args.permission_mode:
        fields["permission_mode"] = args.permission_mode
    with CtrlC() as ctrl_c:
        async with _client(args, root) as (client, runner):
            for path in files:
                await client.register_tool(path)
            if args.session:
                if args.model or args.permission_mode or args.tool_mode:  # the stored session's own change
                    await client.configure_session(args.session, model=args.model, tool_mode=args.tool_mode,
                                                   permission_mode=args.permission_mode)
                await client.call("agent/prompt", {"sessionId": args.session, "text": task})
                session_id = args.session
            else:
                session_id = await client.start_session(task, **fields)
            return await runner(session_id, ctrl_c)
    return _outcome({}, interrupted=True)  # the first Ctrl-C came before there was a session


async def tools_command(args: argparse.Namespace) -> int:
    root = _root(args)
    files = [_tool_path(name, root) for name in args.files]
    async with _spawn(root, options={"store": {"enabled": False}}) as client:
        tools = [tool for path in files for tool in await client.register_tool(path)]
    print(json.dumps(tools, indent=2, ensure_ascii=False))
    return EXIT_OK


def export_command(args: argparse.Namespace) -> int:
    """`sessions export --otlp`: the daemon package replays the store into spans, no daemon started."""
    from mini_agent.app.traces import export
    from mini_agent.core.errors import AgentError

    try:
        exported = export(_root(args), args.session_ids)
    except AgentError as exc:
        say(str(exc))
        return EXIT_FAILED
    say(f"exported {len(exported)} session(s) as traces")
    return EXIT_OK


async def sessions_command(args: argparse.Namespace) -> int:
    root = _root(args)
    if args.action == "resume":
        with CtrlC() as ctrl_c:
            async with _client(args, root) as (client, runner):
                if "agent/resumeSession" in client.methods:
                    await client.call("agent/resumeSession", _resume_params(args))
                return await runner(args.session_id, ctrl_c)
        return _outcome({}, interrupted=True)
    async with _spawn(root) as client:
        if args.action == "approve":
            await client.approve(args.session_id, args.tool_call_id, args.decision, args.reason)
            print(safe(f"{args.decision} recorded; `mini-agent sessions resume {args.session_id}` goes on"))
        elif args.action == "show":
            _show_session(await client.get_session(args.session_id), as_json=args.json)
        else:
            _list_sessions(await client.list_sessions(args.status), as_json=args.json)
    return EXIT_OK


async def models_command(args: argparse.Namespace) -> int:
    """The models to choose from (the current one marked), or the configured one alone and why."""
    root = _root(args)
    llm = {"baseUrl": args.base_url} if args.base_url else {}
    async with _spawn(root, options={"store": {"enabled": False}, "llm": llm}) as client:
        found = await client.list_models(refresh=args.refresh)
    if args.json:
        print(json.dumps(found, indent=2, ensure_ascii=False))
        return EXIT_OK
    for model in found["models"]:  # one id, one line: a newline in an id is shown, never a second line
        print(f"{'*' if model['id'] == found['current'] else ' '} {safe(model['id'])}")
    if found.get("message"):
        say(found["message"])
    return EXIT_OK


def trust_command(folder: Path, *, trusting: bool) -> int:
    """`mini-agent trust|untrust DIR`: record or forget the folder in the user's trust store, and print
    what its trust covers (what its workspace file would run)."""
    from mini_agent.app import config, trust
    from mini_agent.core.errors import AgentError

    if not folder.is_dir():
        say(f"{folder}: not a directory")
        return EXIT_USAGE
    root = folder.resolve()
    try:
        words = trust.remember(root, config.load(root)) if trusting else trust.forget(root)
    except (AgentError, OSError, ValueError) as exc:
        say(str(exc))
        return EXIT_FAILED
    if words is None:
        print(f"{safe(root)} was not trusted")
        return EXIT_OK
    print(f"{'trusted' if trusting else 'no longer trusted'}: {safe(root)}")
    # The consent listing: each item on one line exactly as it will run, a newline or an escape in a
    # command shown escaped, so that no part of it can hide another.
    for word in words or ["(its workspace file names nothing that waits for trust)"]:
        print(f"  {safe(word)}")
    return EXIT_OK


COMMANDS: dict[str, Callable[[argparse.Namespace], Coroutine[Any, Any, int]]] = {
    "ask": ask_command,
    "tools": tools_command,
    "sessions": sessions_command,
    "models": models_command,
}


# -- running a session -------------------------------------------------------------------------


def _spawn(root: Path, **fields: Any) -> contextlib.AbstractAsyncContextManager[AgentClient]:
    """The command's daemon. Its log stays quiet unless MINI_AGENT_LOG asks for it: every failure
    reaches this command as an answer or a `window/showMessage`, and the command says each once."""
    env = {**os.environ, "MINI_AGENT_LOG": os.environ.get("MINI_AGENT_LOG", "CRITICAL")}
    fields.setdefault("capabilities", {"window": {"showDocument": {"support": True}}})
    fields.setdefault("handlers", {"window/showDocument": _show_document})
    return AgentClient.spawn(root=root, env=env, on_message=_show_message, **fields)


async def _show_document(params: dict[str, Any]) -> dict[str, Any]:
    """A page the daemon asks to open (an MCP server's sign-in): its link on stderr, and a browser
    where there is a display to show one on."""
    uri = str(params.get("uri", ""))
    say(f"open {uri}")
    opened = False
    desktop = sys.platform in ("darwin", "win32")
    display = desktop or any(os.environ.get(name) for name in ("DISPLAY", "WAYLAND_DISPLAY"))
    if uri.startswith(("https://", "http://")) and display:
        import webbrowser

        opened = await asyncio.to_thread(webbrowser.open, uri)
    return {"success": opened}


def _show_message(params: dict[str, Any]) -> None:
    if params.get("type", 4) <= 2:  # errors and warnings; info and log lines are for editors' logs
        say(str(params.get("message", "")))


_said: set[str] = set()


def say(message: str) -> None:
    """A line on stderr for the person. The same message twice (the daemon's notice about its options,
    then each request refused for the same reason) is said once. The message is escaped (it quotes a
    workspace file, a URL, a server's words); a line of its own after the first is indented, so that no
    line of it can pass for one of ours."""
    said = safe(message.removeprefix("mini-agent: "), lines=True)
    if said not in _said:
        _said.add(said)
        print("mini-agent: " + said.replace("\n", "\n  "), file=sys.stderr)


@contextlib.asynccontextmanager
async def _client(args: argparse.Namespace, root: Path) -> AsyncIterator[tuple[AgentClient, SessionRunner]]:
    """A daemon set up for this command's model options, and the runner that shows its sessions."""
    from .render import JsonView, LiveView

    interactive = sys.stdin.isatty() and sys.stdout.isatty() and not args.json
    policy = args.approve or ("ask" if interactive else "none")
    if policy == "ask" and not interactive:
        raise UsageError("--approve ask needs a terminal; use --approve all or --approve none")
    view: View
    if args.json:
        view = JsonView()
    else:
        from rich.console import Console

        view = LiveView(Console())
    try:
        async with _spawn(root, options=_options(args), workspace_trusted=args.trust) as client:
            runner = SessionRunner(client, view, policy)
            client.on_permission(runner.decide)
            yield client, runner
    finally:
        view.close()


class SessionRunner:
    """Runs one session to its end, showing its events and answering its permission requests."""

    def __init__(self, client: AgentClient, view: View, policy: str) -> None:
        self.client = client
        self.view = view
        self.policy = policy
        self._shown_calls: set[str] = set()
        self._shown = asyncio.Event()

    async def __call__(self, session_id: str, ctrl_c: CtrlC) -> int:
        ctrl_c.cancel = lambda: self.client.cancel(session_id)
        result: dict[str, Any] = {}
        async for event in self.client.run(session_id=session_id):
            self.view.show(event)
            if event.kind == RESULT:
                result = event.data
            if event.tool_call_id is not None:
                self._shown_calls.add(event.tool_call_id)
                self._shown.set()
        self.view.close()
        return _outcome(result, interrupted=ctrl_c.count > 0)

    async def decide(self, params: dict[str, Any]) -> dict[str, Any]:
        """Answer `agent/requestPermission`: by policy, or by asking the person at the terminal."""
        call = params.get("toolCall") or {}
        await self._caught_up(call.get("id", ""))
        if self.policy == "all":
            decision = "allow_once"
        elif self.policy == "none":
            decision = "reject_once"
        else:
            decision = await self._ask(params)
        self.view.note("permission", sessionId=params.get("sessionId"), toolCallId=call.get("id"),
                       tool=call.get("name"), decision=decision)
        return {"decision": decision}

    async def _caught_up(self, call_id: str) -> None:
        """Let the view show the call before asking about it: the request can overtake the queued event."""
        with contextlib.suppress(TimeoutError):
            async with asyncio.timeout(2):
                while call_id not in self._shown_calls:
                    self._shown.clear()
                    await self._shown.wait()

    async def _ask(self, params: dict[str, Any]) -> str:
        from .render import LiveView, permission_panel

        assert isinstance(self.view, LiveView), "asking needs the terminal view"
        view = self.view
        view.pause()
        try:
            view.console.print(permission_panel(params))
            while True:
                view.console.print("decision [o/a/r/n]: ", end="", markup=False)
                answer = (await _read_stdin_line()).strip().lower()
                if not answer:  # end of input: no one to ask
                    return "reject_once"
                if answer[0] in KEYS:
                    return KEYS[answer[0]]
        finally:
            view.resume()


class CtrlC:
    """The first Ctrl-C cancels the session, whose run then ends normally with stopReason "cancelled";
    a second one (or one before there is a session to cancel) stops the command at once."""

    def __init__(self) -> None:
        self.count = 0
        self.cancel: Callable[[], Awaitable[None]] | None = None
        self._main: asyncio.Task[Any] | None = None
        self._pending: set[asyncio.Future[None]] = set()

    def __enter__(self) -> CtrlC:
        self._main = asyncio.current_task()
        asyncio.get_running_loop().add_signal_handler(signal.SIGINT, self._interrupt)
        return self

    def __exit__(self, *exc: object) -> bool:
        asyncio.get_running_loop().remove_signal_handler(signal.SIGINT)
        return exc[0] is asyncio.CancelledError and self.count > 0

    def _interrupt(self) -> None:
        self.count += 1
        if self.count == 1 and self.cancel is not None:
            future = asyncio.ensure_future(self.cancel())
            self._pending.add(future)
            future.add_done_callback(self._pending.discard)
        elif self._main is not None:
            self._main.cancel()


async def _read_stdin_line() -> str:
    """A line from the terminal without blocking the loop (the daemon keeps streaming meanwhile)."""
    loop = asyncio.get_running_loop()
    fd = sys.stdin.fileno()
    ready: asyncio.Future[str] = loop.create_future()

    def on_readable() -> None:
        loop.remove_reader(fd)
        if not ready.done():
            ready.set_result(os.read(fd, 4096).decode(errors="replace"))

    loop.add_reader(fd, on_readable)
    try:
        return await ready
    finally:
        loop.remove_reader(fd)


def _outcome(result: dict[str, Any], *, interrupted: bool) -> int:
    reason = result.get("stopReason")
    if interrupted or reason == "cancelled":
        say("cancelled")
        return EXIT_CANCELLED
    if reason == "end_turn":
        return EXIT_OK
    messages = {
        "error": str(result.get("error")),  # the daemon's own words: which URL, what happened, what to do
        "max_tokens": str(result.get("error")),  # names the context window and the request's size
        "max_turn_requests": f"no answer within the step budget ({result.get('steps')} steps)",
        "loop_detected": "stopped: the model kept repeating the same tool call",
    }
    fallback = f"the session ended as {result.get('status')}"
    say(messages.get(reason or "", fallback))
    return EXIT_FAILED


# -- arguments ---------------------------------------------------------------------------------


def _task(text: str) -> str:
    task = sys.stdin.read().rstrip("\n") if text == "-" else text
    if not task.strip():
        raise UsageError("the task is empty")
    return task


def _root(args: argparse.Namespace) -> Path:
    root: Path = getattr(args, "root", Path.cwd())
    if not root.is_dir():
        raise UsageError(f"--root {root}: not a directory")
    return root.resolve()


def _tool_path(name: str, root: Path) -> str:
    """A tool file as the daemon wants it: relative to the workspace when it is inside it."""
    path = Path(name).resolve()
    if not path.is_file():
        raise UsageError(f"{name}: no such file")
    return str(path.relative_to(root)) if path.is_relative_to(root) else str(path)


def _options(args: argparse.Namespace) -> dict[str, Any]:
    """initializationOptions from the flags only: the daemon itself reads the workspace file, then the
    environment (OPENAI_BASE_URL, OPENAI_API_KEY, MINI_AGENT_MODEL), so a flag beats the file and the
    file beats the environment, as on every door."""
    llm = {"baseUrl": args.base_url, "model": args.model, "toolMode": args.tool_mode}
    return {"llm": {key: value for key, value in llm.items() if value}}


def _show_session(session: dict[str, Any], *, as_json: bool) -> None:
    if as_json:
        print(json.dumps(session, indent=2, ensure_ascii=False))
        return
    from rich.console import Console
    from rich.text import Text

    from .render import LiveView, replay_session

    view = LiveView(Console(), spinner=False)
    view.console.print(Text.assemble(("task", "bold"), " ", text(session.get("task"), lines=True)))
    for event in replay_session(session):
        view.show(event)


def _list_sessions(sessions: list[dict[str, Any]], *, as_json: bool) -> None:
    if as_json:
        print(json.dumps(sessions, indent=2, ensure_ascii=False))
        return
    from rich.console import Console

    from .render import sessions_table

    console = Console()
    console.print(sessions_table(sessions) if sessions else "no sessions")


if __name__ == "__main__":
    sys.exit(main())
