"""The `@tool` marker for workspace functions.

Workspace files import this (through `from mini_agent import tool`), so it must stay free of heavy
imports: it only attaches options that the tool host's reflection reads later.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, TypeVar, overload

from mini_agent.core.contracts import ToolOptions

F = TypeVar("F", bound=Callable[..., Any])

OPTIONS_ATTRIBUTE = "__mini_agent_tool__"


@overload
def tool(fn: F, /) -> F: ...


@overload
def tool(
    fn: None = None,
    /,
    *,
    name: str | None = None,
    description: str | None = None,
    requires_approval: bool = False,
    idempotent: bool = False,
    timeout_sec: float | None = None,
    read_only: bool | None = None,
    destructive: bool | None = None,
    open_world: bool | None = None,
) -> Callable[[F], F]: ...


def tool(
    fn: F | None = None,
    /,
    *,
    name: str | None = None,
    description: str | None = None,
    requires_approval: bool = False,
    idempotent: bool = False,
    timeout_sec: float | None = None,
    read_only: bool | None = None,
    destructive: bool | None = None,
    open_world: bool | None = None,
) -> F | Callable[[F], F]:
    """Mark a workspace function as a tool, as `@tool` or `@tool(name=..., ...)`.

    `read_only`, `destructive`, `idempotent` and `open_world` are MCP's tool hints (`readOnlyHint`, ...:
    `mini-agent mcp` serves them as the tool's annotations); a read-only tool that is not destructive
    is not asked about even with `requires_approval`, as an MCP server's read-only tool. The function
    itself is returned unchanged, so it stays callable and testable as plain Python.
    """
    options = ToolOptions(
        name, description, requires_approval, idempotent, timeout_sec, read_only, destructive, open_world
    )

    def mark(target: F) -> F:
        setattr(target, OPTIONS_ATTRIBUTE, options)
        return target

    return mark if fn is None else mark(fn)
