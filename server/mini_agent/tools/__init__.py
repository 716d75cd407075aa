"""Workspace functions as tools: reflection and execution in a subprocess, routing in the daemon.

`tool` is imported by workspace files (through `mini_agent`), so this package imports nothing heavy
up front: the registry (and with it asyncio plumbing and jsonschema) loads on first use.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from mini_agent.tools.decorators import tool

if TYPE_CHECKING:
    from mini_agent.tools.registry import RegistrationError, ToolRegistry

__all__ = ["RegistrationError", "ToolRegistry", "tool"]


def __getattr__(name: str) -> Any:
    if name in ("RegistrationError", "ToolRegistry"):
        from mini_agent.tools import registry

        return getattr(registry, name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
