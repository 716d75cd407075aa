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
import json
import sys
from collections.abc import Callable, Coroutine
from pathlib import Path
from typing import Any

from mini_agent_client.rpc import ConnectionClosed, RpcError

from mini_agent.cli import setup
from mini_agent.cli.running import (
    EXIT_FAILED,
    EXIT_OK,
    EXIT_USAGE,
    CtrlC,
    UsageError,
    client_for,
    outcome,
    spawn,
)
from mini_agent.cli.terminal import safe, say, text

DECISIONS = ("allow_once", "allow_always", "reject_once", "reject_always")
STATUSES = ("ready", "running", "awaiting_approval", "finished")
PERMISSION_MODES = ("ask_always", "ask_when_needed", "ask_never")


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
    setup.add_parser(commands)
    doctor = commands.add_parser("doctor", help="what this machine gives the daemon: the tool sandbox")
    _root_option(doctor)
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
    mcp.add_argument("--max-memory-mb", type=int,
                     help="memory cap of each tool host in MiB (default: 1024; 0: none)")
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
            max_output_bytes=args.max_output_bytes, max_memory_mb=args.max_memory_mb, http=args.http,
            http_bounds=bounds,
        )  # fmt: skip
    if args.command in ("trust", "untrust"):
        return trust_command(args.dir, trusting=args.command == "trust")
    if args.command == "sessions" and args.action == "export":
        return export_command(args)
    if args.command == "setup":
        return setup.setup_command(args)
    if args.command == "doctor":
        return doctor_command(getattr(args, "root", Path.cwd()).resolve())
    if args.command == "demo":
        from mini_agent.cli.demo import run_demo

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
        async with client_for(args, root) as (client, runner):
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
    return outcome({}, interrupted=True)  # the first Ctrl-C came before there was a session


async def tools_command(args: argparse.Namespace) -> int:
    root = _root(args)
    files = [_tool_path(name, root) for name in args.files]
    async with spawn(root, options={"store": {"enabled": False}}) as client:
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
            async with client_for(args, root) as (client, runner):
                if "agent/resumeSession" in client.methods:
                    await client.call("agent/resumeSession", _resume_params(args))
                return await runner(args.session_id, ctrl_c)
        return outcome({}, interrupted=True)
    async with spawn(root) as client:
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
    async with spawn(root, options={"store": {"enabled": False}, "llm": llm}) as client:
        found = await client.list_models(refresh=args.refresh)
    if args.json:
        print(json.dumps(found, indent=2, ensure_ascii=False))
        return EXIT_OK
    for model in found["models"]:  # one id, one line: a newline in an id is shown, never a second line
        print(f"{'*' if model['id'] == found['current'] else ' '} {safe(model['id'])}")
    if found.get("message"):
        say(found["message"])
    return EXIT_OK


def doctor_command(root: Path) -> int:
    """The sandbox's state here: the kernel's parts, the user's setting, what each kind of tool gets."""
    import tempfile

    from mini_agent.tools import sandbox

    state, detail = sandbox.state(turned_off=False)
    print(f"Landlock ABI: {sandbox.landlock_abi() or 'none'}")
    print(f"sandbox: {state} ({detail})")
    temp = tempfile.gettempdir()
    for words, read_only, open_world in (("read_only=True", True, False), ("(no declaration)", False, False),
                                         ("open_world=True", False, True)):  # fmt: skip
        confinement = sandbox.for_tool(root, temp, read_only=read_only, open_world=open_world)
        print(f"  a tool with {words}: {safe(confinement.words())}")
    print(f"  read-only inside the workspace: {', '.join(sandbox.PROTECTED)}")
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


def _show_session(session: dict[str, Any], *, as_json: bool) -> None:
    if as_json:
        print(json.dumps(session, indent=2, ensure_ascii=False))
        return
    from rich.console import Console
    from rich.text import Text

    from mini_agent.cli.render import LiveView, replay_session

    view = LiveView(Console(), spinner=False)
    view.console.print(Text.assemble(("task", "bold"), " ", text(session.get("task"), lines=True)))
    for event in replay_session(session):
        view.show(event)


def _list_sessions(sessions: list[dict[str, Any]], *, as_json: bool) -> None:
    if as_json:
        print(json.dumps(sessions, indent=2, ensure_ascii=False))
        return
    from rich.console import Console

    from mini_agent.cli.render import sessions_table

    console = Console()
    console.print(sessions_table(sessions) if sessions else "no sessions")


if __name__ == "__main__":
    sys.exit(main())
