"""The tools the official MCP conformance suite's server scenarios call, as workspace functions:
tests/e2e/mcp/test_mcp_server_conformance.py serves this file with `mini-agent mcp --http`."""

from __future__ import annotations

import time
from typing import TypedDict

from mini_agent import tool
from mini_agent.tools.progress import report

STEP_SEC = 0.15  # between two progress reports: longer than the live output's coalescing interval


@tool(read_only=True, idempotent=True)
def test_simple_text() -> str:
    """Return a fixed text."""
    return "This is a simple text response for testing."


def test_error_handling() -> None:
    """Always fail."""
    raise RuntimeError("This tool intentionally returns an error for testing")


def test_tool_with_progress() -> str:
    """Report progress 0, 50 and 100 percent, then finish."""
    for step in range(3):
        report(f"step {step + 1} of 3", fraction=step / 2)
        time.sleep(STEP_SEC)
    return "progress reported"


class address(TypedDict):  # the suite looks for `$defs.address`, named by the type
    """A postal address."""

    street: str
    city: str


def json_schema_2020_12_tool(name: str, address: address | None = None) -> str:
    """Take a name and, optionally, an address (a named type, so its schema lands in `$defs`)."""
    return f"{name} at {address['city']}" if address else name
