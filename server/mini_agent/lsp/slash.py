"""The LSP door's slash commands: `agent/listCommands`, and `Commands.first`, which answers an
`agent/prompt` or `agent/startSession` whose whole text is a command by running it (`app.commands`)
instead of the handler; `/trust` asks first, with the client's own prompt (`trusting.ask_to_trust`).

Standard library only at import: `server` imports this module before anything else loads."""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from pygls.lsp.server import LanguageServer

    from mini_agent.app.workspace import Workspace
    from mini_agent.core.session import PermissionMode

Handler = Callable[["Workspace", Any], Awaitable[Any]]


async def list_commands(workspace: Workspace, p: object) -> dict[str, Any]:
    """The commands, for a prompt box to offer: name (without the `/`), description, input hint."""
    from mini_agent.app.commands import COMMANDS

    listed: list[dict[str, Any]] = []
    for command in COMMANDS:
        entry: dict[str, Any] = {"name": command.name, "description": command.description}
        if command.hint is not None:
            entry["input"] = {"hint": command.hint}
        listed.append(entry)
    return {"commands": listed}


Ask = Callable[[str, Any], Awaitable[Any]]  # a request to the client, its answer as plain JSON


class Commands:
    """The commands of server `ls` (its `initializationOptions` are re-read as trusted by `/trust`);
    `ask` puts a request to its client (the question `/trust` asks first)."""

    def __init__(self, ls: LanguageServer, ask: Ask) -> None:
        self._ls = ls
        self._ask = ask

    def first(self, handler: Handler) -> Handler:
        """`handler`, unless its params' text (`text`, or a new session's `task`) is a command."""

        async def handle(workspace: Workspace, p: Any) -> Any:
            text = str(getattr(p, "text", None) or getattr(p, "task", ""))
            answer = await self.answer(workspace, getattr(p, "session_id", None), text)
            return answer if answer is not None else await handler(workspace, p)

        return handle

    async def answer(self, workspace: Workspace, session_id: str | None, text: str) -> dict[str, Any] | None:
        """`{sessionId, status, command, commandOutput, ok}` when `text` is a command; else None."""
        from mini_agent.app import commands

        if commands.parse(text) is None:
            return None
        session = workspace.sessions.get(session_id) if session_id is not None else None  # unknown: -32602
        door = commands.Door(lambda: self._trust(workspace))
        if session_id is not None:
            door = commands.Door(
                door.trust, _configure(workspace, session_id), _current(workspace, session_id)
            )
        outcome = await commands.run(workspace, session_id, text, door)
        assert outcome is not None  # parsed above
        return {
            "sessionId": session_id,
            "status": session.status.value if session is not None else None,
            "command": outcome.command,
            "commandOutput": outcome.text,
            "ok": outcome.ok,
        }

    async def _trust(self, workspace: Workspace) -> list[str] | None:
        """Asked first (`trusting.ask_to_trust`); on a yes as `agent/trustWorkspace`, remembered only
        on "Always trust" (its problems go to the user as `window/showMessage`); None on anything else."""
        from mini_agent.lsp import trusting
        from mini_agent.lsp.params import TrustParams

        remember = await trusting.ask_to_trust(self._ask, workspace)
        if remember is None:
            return None
        trust_workspace, _untrust = trusting.handlers(self._ls)
        await trust_workspace(workspace, TrustParams(remember=remember))
        return []


def _configure(
    workspace: Workspace, session_id: str
) -> Callable[[str | None, PermissionMode | None], Awaitable[None]]:
    async def configure(model: str | None, mode: PermissionMode | None) -> None:
        workspace.configure_session(session_id, model=model, permission_mode=mode)

    return configure


def _current(workspace: Workspace, session_id: str) -> Callable[[], tuple[str, PermissionMode]]:
    def current() -> tuple[str, PermissionMode]:
        config = workspace.sessions.get(session_id).config
        return config.llm.model, config.permission_mode

    return current
