"""Waiting, with a deadline, for something the daemon does on its own time."""

from __future__ import annotations

import asyncio
from collections.abc import Callable


async def wait_for(predicate: Callable[[], bool], timeout: float = 20) -> None:
    async with asyncio.timeout(timeout):
        while not predicate():
            await asyncio.sleep(0.02)
