"""The slash commands a person types in the prompt box, for both doors: `/compact`, `/tools`, `/model`,
`/mode`, `/trust`, `/help`. A prompt is a command only when the whole of it is the command and its
argument (`parse`): `/` and a listed name, then nothing, or — for a command that takes one — one word;
anything more (`/trust this repo? …`) is an ordinary prompt for the model. `run` does a command at
once, without a model turn, and answers the words to show. `/trust` trusts only on the person's
explicit yes to the door's question (`Door.trust`).

What differs between the doors (how a model is checked and set before a session starts, how a folder
is trusted) comes in as a `Door`; the rest is here, once.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING

from mini_agent.core.contracts import ToolSpec
from mini_agent.core.errors import AgentError
from mini_agent.core.session import PermissionMode
from mini_agent.llm.models import unsafe

if TYPE_CHECKING:
    from mini_agent.app.workspace import Workspace

MAX_ARGUMENT_CHARS = 256  # a command's argument (a model name, a mode): longer is a failed command
DESCRIPTION_CHARS = 100  # of a tool's description, in `/tools`


@dataclass(frozen=True, slots=True)
class Command:
    """One command as a prompt box lists it; `hint` names its argument, when it takes one."""

    name: str
    description: str
    hint: str | None = None


COMMANDS: tuple[Command, ...] = (
    Command("compact", "Compact the session's context now: older turns summarised, the latest kept"),
    Command("tools", "List the tools the model can call in this session, by source"),
    Command("model", "Show or change the session's model (from its next turn)", "model name"),
    Command("mode", "Show or change the permission mode: ask_always, ask_when_needed, ask_never", "mode"),
    Command("trust", "Trust this workspace folder: its tools, MCP servers and model server load"),
    Command("help", "List these commands"),
)
BY_NAME = {command.name: command for command in COMMANDS}
CONFIGURES = frozenset({"model", "mode"})  # need the session's configuration (or the one it will start with)


@dataclass(frozen=True, slots=True)
class Outcome:
    """What a command answers: the words to show, and whether it was done."""

    command: str
    text: str
    ok: bool = True


Configure = Callable[[str | None, PermissionMode | None], Awaitable[None]]
Current = Callable[[], tuple[str, PermissionMode]]


@dataclass(frozen=True, slots=True)
class Door:
    """What the commands need of the door they came through: `trust` asks the person whether to trust
    the folder and, on an explicit yes, trusts it and answers the problems met (None when the person
    did not say yes: declined, dismissed, or could not be asked); `configure` and `current` set and
    read the session's model and permission mode (None where there is no session)."""

    trust: Callable[[], Awaitable[list[str] | None]]
    configure: Configure | None = None
    current: Current | None = None


def parse(text: str) -> tuple[Command, str] | None:
    """The command `text` is and its argument, or None when it is an ordinary prompt: the whole text
    (blanks around it aside) must be `/name`, or `/name argument` for a command that takes one, the
    argument one word."""
    stripped = text.strip()
    if not stripped.startswith("/"):
        return None
    head, *words = stripped[1:].split(maxsplit=1) or [""]
    command = BY_NAME.get(head)
    if command is None:
        return None
    argument = words[0] if words else ""
    if argument and (command.hint is None or len(argument.split()) > 1):
        return None  # words after a command that takes none, or a sentence: a prompt for the model
    return command, argument


async def run(workspace: Workspace, session_id: str | None, text: str, door: Door) -> Outcome | None:
    """Run the command `text` names (None when it names none); a command that cannot be done answers
    `ok=False` and says why."""
    parsed = parse(text)
    if parsed is None:
        return None
    command, argument = parsed
    name = command.name
    if len(argument) > MAX_ARGUMENT_CHARS:
        return Outcome(
            name,
            f"/{name}: the argument is {len(argument)} characters; at most {MAX_ARGUMENT_CHARS}",
            ok=False,
        )
    if name == "compact" and session_id is None:
        return Outcome(name, "Nothing to compact: the session has had no model turn yet.", ok=False)
    if name in CONFIGURES and (door.configure is None or door.current is None):
        return Outcome(name, f"/{name} needs a session: start one with a task first", ok=False)
    try:
        return await _dispatch(workspace, session_id, name, argument, door)
    except AgentError as exc:
        return Outcome(name, f"/{name}: {exc}", ok=False)


async def _dispatch(
    workspace: Workspace, session_id: str | None, name: str, argument: str, door: Door
) -> Outcome:
    if name == "help":
        return Outcome(name, help_text())
    if name == "tools":
        return Outcome(name, tools_text(_tools(workspace, session_id)))
    if name == "trust":
        return await _trust(workspace, door)
    if name == "compact":
        assert session_id is not None
        return Outcome(name, await workspace.sessions.compact(session_id))
    assert door.configure is not None and door.current is not None
    if name == "model":
        if argument and (why := unsafe(argument)) is not None:
            return Outcome(name, f"/model: {argument!a} is not a model name: {why}", ok=False)
        if argument:
            await door.configure(argument, None)
        model, _mode = door.current()
        return Outcome(name, f"Model: {model}" + ("" if argument else " (/model NAME changes it)"))
    return await _mode_command(argument, door.configure, door.current)


async def _mode_command(argument: str, configure: Configure, current: Current) -> Outcome:
    if argument:
        try:
            chosen = PermissionMode(argument)
        except ValueError:
            modes = ", ".join(m.value for m in PermissionMode)
            return Outcome("mode", f"/mode: {argument!r} is not a permission mode: {modes}", ok=False)
        await configure(None, chosen)
    _model, mode = current()
    lines = [f"Permission mode: {mode.value} ({mode.label})"]
    if not argument:
        lines += [f"- {m.value}: {m.label}" for m in PermissionMode]
    return Outcome("mode", "\n".join(lines))


async def _trust(workspace: Workspace, door: Door) -> Outcome:
    if workspace.trusted:
        return Outcome("trust", f"The workspace {workspace.root} is trusted already.")
    problems = await door.trust()
    if problems is None:
        return Outcome(
            "trust",
            f"Not trusted: {workspace.root} stays as it was (trusting it needs a yes to the question).",
            ok=False,
        )
    names = [spec.name for spec in workspace.registry.list_tools()]
    said = [f"Trusted {workspace.root} in this daemon; tools: {', '.join(names) or 'none'}."]
    return Outcome("trust", "\n".join(said + [f"Problem: {problem}" for problem in problems]))


def _tools(workspace: Workspace, session_id: str | None) -> list[ToolSpec]:
    if session_id is None:
        return list(workspace.registry.list_tools())
    return workspace.sessions.tools(session_id)


def tools_text(specs: list[ToolSpec]) -> str:
    """The tools by source: the workspace's, the client's, then each MCP server's."""
    if not specs:
        return "No tools: the model can only answer."
    groups: dict[str, list[ToolSpec]] = {}
    for spec in specs:
        groups.setdefault(_source(spec), []).append(spec)
    lines: list[str] = []
    for source, members in groups.items():
        lines.append(f"{source}:")
        lines += [f"- {spec.name}: {_first_line(spec.description)}" for spec in members]
    return "\n".join(lines)


def help_text() -> str:
    return "\n".join(
        f"/{c.name}" + (f" <{c.hint}>" if c.hint else "") + f": {c.description}" for c in COMMANDS
    )


def _source(spec: ToolSpec) -> str:
    if spec.mcp_server is not None:
        return f"MCP server {spec.mcp_server}"
    return "Editor (client) tools" if spec.client else "Workspace tools"


def _first_line(text: str) -> str:
    line = (text.strip().splitlines() or [""])[0]
    return line if len(line) <= DESCRIPTION_CHARS else line[:DESCRIPTION_CHARS] + "…"
