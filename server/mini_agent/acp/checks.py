"""The values an ACP client sends that the SDK's schema cannot check: a workspace folder, a
session/list cursor, a permission mode, a model's name. Each refusal is -32602 naming the field, the
value cut to `SHOWN_CHARS`."""

from __future__ import annotations

from pathlib import Path

from mini_agent.core.errors import AgentError
from mini_agent.core.session import PermissionMode
from mini_agent.llm.models import unsafe

MAX_CWD_CHARS = 4096  # PATH_MAX on Linux: a longer cwd cannot be opened
CURSOR_DIGITS = 18  # a cursor is an offset SQLite can hold (below 2**63)
SHOWN_CHARS = 80  # of a refused value, in the error message


def root(cwd: str) -> Path:
    """The workspace folder `cwd` names, resolved; refused (-32602, naming cwd) unless it is one."""
    shown = quoted(cwd)
    if len(cwd) > MAX_CWD_CHARS:
        raise AgentError(f"cwd is {len(cwd)} characters long; at most {MAX_CWD_CHARS}: {shown}", cwd=shown)
    if "\x00" in cwd:
        raise AgentError(f"cwd holds a NUL character: {shown}", cwd=shown)
    root = Path(cwd)
    if not root.is_absolute():
        raise AgentError(f"cwd must be an absolute path, got {shown}", cwd=shown)
    try:
        if not root.is_dir():
            raise AgentError(f"cwd {shown} is not a directory", cwd=shown)
        return root.resolve()
    except (OSError, RuntimeError) as exc:  # too long a name, a symlink loop, no permission
        raise AgentError(f"cwd {shown} cannot be opened: {exc}", cwd=shown) from None


def quoted(value: str) -> str:
    """`value` quoted for an error message, cut to `SHOWN_CHARS`."""
    return repr(value) if len(value) <= SHOWN_CHARS else repr(value[:SHOWN_CHARS]) + "…"


def offset(cursor: str | None) -> int:
    if cursor is None:
        return 0
    if not (cursor.isascii() and cursor.isdigit() and len(cursor) <= CURSOR_DIGITS):
        shown = quoted(cursor)
        raise AgentError(f"cursor {shown} did not come from session/list", cursor=shown)
    return int(cursor)


def mode(value: str, field_name: str) -> PermissionMode:
    try:
        return PermissionMode(value)
    except ValueError:
        modes = ", ".join(m.value for m in PermissionMode)
        raise AgentError(f"{field_name} {quoted(value)} is not a permission mode: {modes}",
                         value=quoted(value)) from None


def model_name(value: str, field_name: str) -> str:
    """`value` as a model's name: refused when it holds a control or bidi character (`llm.models`)."""
    why = unsafe(value)
    if why is not None:
        raise AgentError(f"{field_name} {value[:SHOWN_CHARS]!a} is not a model name: {why}",
                         value=ascii(value[:SHOWN_CHARS]))
    return value
