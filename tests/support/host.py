"""Helpers for tests of the tool host: a call by file and function, and processes watched in /proc."""

from __future__ import annotations

import asyncio
from pathlib import Path

from mini_agent.tools.host import CallResult, ToolHost


async def call(
    host: ToolHost, path: Path, function: str, /, timeout: float = 30.0, **arguments: object
) -> CallResult:
    return await host.call(path, function, tool_name=function, arguments=arguments, timeout=timeout)


def process_gone(pid: int) -> bool:
    """Gone, or a zombie waiting to be reaped (it runs nothing any more)."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except FileNotFoundError:
        return True
    return stat.rsplit(")", 1)[1].split()[0] in ("Z", "X")


async def wait_until(predicate: object, what: str) -> None:
    for _ in range(1000):
        if callable(predicate) and predicate():
            return
        await asyncio.sleep(0.01)
    raise AssertionError(f"gave up waiting: {what}")
