"""Running one session from the terminal: the command's daemon, its events shown as they come, its
permission requests answered by policy or by the person, and Ctrl-C as a cancel (then as a stop)."""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import os
import signal
import sys
from collections.abc import AsyncIterator, Awaitable, Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any

from mini_agent_client.client import RESULT, AgentClient

from mini_agent.cli.terminal import say

if TYPE_CHECKING:
    from mini_agent.cli.render import View

EXIT_OK, EXIT_FAILED, EXIT_USAGE, EXIT_CANCELLED = 0, 1, 2, 130
KEYS = {"o": "allow_once", "a": "allow_always", "r": "reject_once", "n": "reject_always"}


class UsageError(Exception):
    """A mistake in the command line that argparse cannot see (exit 2)."""


def spawn(root: Path, **fields: Any) -> contextlib.AbstractAsyncContextManager[AgentClient]:
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


@contextlib.asynccontextmanager
async def client_for(
    args: argparse.Namespace, root: Path
) -> AsyncIterator[tuple[AgentClient, SessionRunner]]:
    """A daemon set up for this command's model options, and the runner that shows its sessions."""
    from mini_agent.cli.render import JsonView, LiveView

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
        async with spawn(root, options=options(args), workspace_trusted=args.trust) as client:
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
        return outcome(result, interrupted=ctrl_c.count > 0)

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
        from mini_agent.cli.render import LiveView, permission_panel

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


def outcome(result: dict[str, Any], *, interrupted: bool) -> int:
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


def options(args: argparse.Namespace) -> dict[str, Any]:
    """initializationOptions from the flags only: the daemon itself reads the workspace file, then the
    environment (OPENAI_BASE_URL, OPENAI_API_KEY, MINI_AGENT_MODEL), so a flag beats the file and the
    file beats the environment, as on every door."""
    llm = {"baseUrl": args.base_url, "model": args.model, "toolMode": args.tool_mode}
    return {"llm": {key: value for key, value in llm.items() if value}}
