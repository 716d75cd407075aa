"""The progress API for workspace tools: tell the person watching how a long call is going.

    from mini_agent.tools.progress import report

    def build(target: str) -> str:
        for index, part in enumerate(parts, 1):
            report(f"building {part}", fraction=index / len(parts))
            ...

`report` reaches the editor while the call runs (as the call's live output, beside what the tool
prints); the model never sees it. Called outside the tool host (a plain script, a test) it does
nothing. Call it from the tool's own process (its threads included), not from processes it starts.
"""

from __future__ import annotations

import threading
from collections.abc import Callable

Sender = Callable[[str | None, float | None], None]

_lock = threading.Lock()
_sender: Sender | None = None


def report(message: str | None = None, fraction: float | None = None) -> None:
    """Report progress: `message` (say what is happening), `fraction` (how much is done, 0 to 1)."""
    if message is not None and not isinstance(message, str):
        raise TypeError(f"report(): message must be a string or None, not {type(message).__name__}")
    if fraction is not None:
        if isinstance(fraction, bool) or not isinstance(fraction, int | float):
            raise TypeError(f"report(): fraction must be a number or None, not {type(fraction).__name__}")
        if not 0.0 <= fraction <= 1.0:
            raise ValueError(f"report(): fraction must be between 0 and 1, not {fraction!r}")
    with _lock:
        if _sender is not None:
            _sender(message, None if fraction is None else float(fraction))


def install(sender: Sender | None) -> None:
    """Where reports go (the tool host's reply pipe); None: nowhere."""
    global _sender
    with _lock:
        _sender = sender
