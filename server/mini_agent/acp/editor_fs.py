"""`read_text_file` and `write_text_file`: tools the editor runs, through ACP's `fs/*` requests.

Offered when the client advertises `fs.readTextFile` / `fs.writeTextFile`, so the agent reads unsaved
buffers and its writes land in the editor (which may show them, undo them, or save them). They are
client tools in the registry, like `agent/registerTool {client: true}` on the LSP door; a write always
requires approval, and its permission request carries the change as a `diff` so the editor can show a
real review.

The path the model picks is confined to the session's folder (`app.scope`): resolved against it (`..`
and symlinks), sent to the editor as it resolves, and a read or write that lands outside the folder is
asked every time, its permission request showing the real path and offering once-options only.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Any

from acp.connection import Connection
from acp.schema import (
    FileEditToolCallContent,
    FileSystemCapabilities,
    PermissionOption,
    ReadTextFileRequest,
    ReadTextFileResponse,
    ToolCallLocation,
    WriteTextFileRequest,
)
from pydantic import BaseModel

from mini_agent.app.scope import Scope, Target, target
from mini_agent.core.contracts import ToolCall

if TYPE_CHECKING:
    from mini_agent.tools.registry import ToolRegistry

READ = "read_text_file"
WRITE = "write_text_file"

_PATH = {"type": "string", "description": "The file, absolute or relative to the workspace root."}
_READ_SCHEMA = {
    "type": "object",
    "properties": {
        "path": _PATH,
        "line": {"type": "integer", "minimum": 1, "description": "First line to read (1-based)."},
        "limit": {"type": "integer", "minimum": 1, "description": "How many lines at most."},
    },
    "required": ["path"],
    "additionalProperties": False,
}
_WRITE_SCHEMA = {
    "type": "object",
    "properties": {"path": _PATH, "content": {"type": "string", "description": "The file's whole new text."}},
    "required": ["path", "content"],
    "additionalProperties": False,
}


def register(registry: ToolRegistry, fs: FileSystemCapabilities | None) -> None:
    """Offer the tools this client can run."""
    if fs is not None and fs.read_text_file:
        registry.register_client_tool(
            READ, "Read a text file as the editor has it, unsaved changes included.", _READ_SCHEMA
        )
    if fs is not None and fs.write_text_file:
        registry.register_client_tool(
            WRITE,
            "Replace a text file's whole content in the editor (the user reviews the change).",
            _WRITE_SCHEMA,
            requires_approval=True,
        )


PERMISSION_OPTIONS = [
    PermissionOption(option_id="allow_once", name="Allow once", kind="allow_once"),
    PermissionOption(
        option_id="allow_always", name="Always allow this tool in this session", kind="allow_always"
    ),
    PermissionOption(option_id="reject_once", name="Reject", kind="reject_once"),
    PermissionOption(
        option_id="reject_always", name="Always reject this tool in this session", kind="reject_always"
    ),
]
ONCE_OPTIONS = [option for option in PERMISSION_OPTIONS if option.kind in ("allow_once", "reject_once")]
OUTSIDE = "{path} is outside the workspace {root}"


def scope(root: Path, call: ToolCall) -> Target | None:
    """Where a call of the editor's file tools reaches (None for any other call, or a path that is no
    string: the call fails on its arguments)."""
    path = call.arguments.get("path")
    if call.name not in (READ, WRITE) or not isinstance(path, str):
        return None
    return target(root, path)


def options(where: Target | None) -> list[PermissionOption]:
    """What a permission request offers: once-options only for a call outside the folder."""
    return ONCE_OPTIONS if where is not None and where.scope is Scope.OUTSIDE else PERMISSION_OPTIONS


def outside_note(root: Path, where: Target | None) -> str | None:
    """The words that say a call reaches outside the folder (None when it does not)."""
    if where is None or where.scope is not Scope.OUTSIDE:
        return None
    return OUTSIDE.format(path=where.path, root=root)


def unchanged(root: Path, call: ToolCall, decided: Target | None) -> None:
    """Refuse (RuntimeError, the model's observation) a call whose path resolves elsewhere than when it
    was decided: a link swapped in meanwhile must not turn an inside call into an unasked outside one.
    A call decided by another process (`decided` None) runs on the path as it resolves now."""
    now = scope(root, call)
    if decided is not None and now is not None and now.path != decided.path:
        raise RuntimeError(
            f"{call.name}: {call.arguments.get('path')!r} resolved to {decided.path} when the call was "
            f"decided and to {now.path} now; it was not run"
        )


async def send(conn: Connection, method: str, request: BaseModel) -> Any:
    """A typed request to the client, as the schema spells it."""
    return await conn.send_request(method, request.model_dump(mode="json", by_alias=True, exclude_none=True))


async def run(conn: Connection, root: Path, session_id: str, name: str, args: dict[str, Any]) -> str:
    """Run one of the tools on the path as it resolves (the one its approval was asked for)."""
    path = str(target(root, args["path"]).path)
    if name == READ:
        bounds = {key: args[key] for key in ("line", "limit") if key in args}
        read = ReadTextFileRequest(session_id=session_id, path=path, **bounds)
        return ReadTextFileResponse.model_validate(await send(conn, "fs/read_text_file", read)).content
    content = args["content"]
    write = WriteTextFileRequest(session_id=session_id, path=path, content=content)
    await send(conn, "fs/write_text_file", write)
    return f"Wrote {len(content.splitlines())} lines to {path}."


Review = tuple[list[FileEditToolCallContent], list[ToolCallLocation]]


async def review(conn: Connection, root: Path, session_id: str, call: ToolCall) -> Review:
    """What a permission request for `call` adds: where it lands, as the path resolves, and for a write
    the change as a diff against the text the editor has now (none when the file is new)."""
    where = scope(root, call)
    if where is None:
        return [], []
    path = str(where.path)
    location = [ToolCallLocation(path=path)]
    content = call.arguments.get("content")
    if call.name != WRITE or not isinstance(content, str):
        return [], location
    old: str | None
    try:
        old = await run(conn, root, session_id, READ, {"path": path})
    except Exception:  # a new file, or an editor that cannot read it: the diff shows it all as new
        old = None
    diff = FileEditToolCallContent(type="diff", path=path, new_text=content, old_text=old)
    return [diff], location
