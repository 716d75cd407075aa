"""The daemon's event loop and heap: uvloop where it is installed (a dependency on Linux and macOS),
else asyncio's own; and a garbage collector that leaves the long-lived heap alone.

Both doors spend much of a step in the loop's machinery — callbacks, tasks, socket and pipe reads —
and uvloop runs that machinery in C (bench/bench_peers.py measures what it saves). Nothing in the
daemon depends on which loop runs it.

The collector: what the daemon imports and builds at start (pygls, lsprotocol's types, pydantic's
validators, the daemon itself) lives as long as the process, yet every full collection would walk all
of it again; `gc.freeze` takes what is alive at that moment out of the collector's sight, so the pauses
are for what the sessions build (bench/README.md has the figures).
"""

from __future__ import annotations

import asyncio
import gc
from collections.abc import Callable, Coroutine
from typing import Any, TypeVar

T = TypeVar("T")


def loop_factory() -> Callable[[], asyncio.AbstractEventLoop] | None:
    try:
        import uvloop
    except ImportError:  # Windows, or an install without it: asyncio's loop does the same work
        return None
    return uvloop.new_event_loop


def settle_heap() -> None:
    """Take what is alive now out of the collector's sight (called once the daemon is built)."""
    gc.freeze()


def run(main: Coroutine[Any, Any, T]) -> T:
    settle_heap()  # the imports so far: the protocol stack
    with asyncio.Runner(loop_factory=loop_factory()) as runner:
        return runner.run(main)
