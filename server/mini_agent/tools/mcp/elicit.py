"""An MCP server's `elicitation/create`, put before the person of the session it is for (`asking`)."""

from __future__ import annotations

from typing import TYPE_CHECKING

from mini_agent.tools.mcp.asking import Asking

if TYPE_CHECKING:
    from mcp.client.session import ElicitationFnT


def callback(asking: Asking) -> ElicitationFnT | None:
    """The SDK session's elicitation callback for one server; None: the SDK declines for us."""
    return None
