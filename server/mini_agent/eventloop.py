"""The daemon's event loop: uvloop where it is installed (a dependency on Linux and macOS), else
asyncio's own.

Both doors spend much of a step in the loop's machinery — callbacks, tasks, socket and pipe reads —
and uvloop runs that machinery in C: about a twelfth less CPU per step through the whole daemon
(bench/bench_peers.py). Nothing in the daemon depends on which loop runs it.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Coroutine
from typing import Any, TypeVar

T = TypeVar("T")


def loop_factory() -> Callable[[], asyncio.AbstractEventLoop] | None:
    try:
        import uvloop
    except ImportError:  # Windows, or an install without it: asyncio's loop does the same work
        return None
    return uvloop.new_event_loop


def run(main: Coroutine[Any, Any, T]) -> T:
    with asyncio.Runner(loop_factory=loop_factory()) as runner:
        return runner.run(main)
