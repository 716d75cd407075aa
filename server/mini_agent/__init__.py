"""mini-agent: a daemon that runs tool-using LLM agents for editors over JSON-RPC on stdio."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from mini_agent.plumbing.version import VERSION as __version__

if TYPE_CHECKING:
    from mini_agent.tools.decorators import tool

__all__ = ["__version__", "tool"]


def __getattr__(name: str) -> Any:
    """`from mini_agent import tool` for workspace files, without loading it into the daemon's start-up."""
    if name == "tool":
        from mini_agent.tools.decorators import tool

        return tool
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
