"""Loop detection as a pure function: how often in a row the model has asked for the same call."""

from __future__ import annotations

import json
from collections.abc import Sequence

from mini_agent.core.contracts import ToolCall


def canonical(call: ToolCall) -> str:
    """Name plus arguments with sorted keys: `{"a":1,"b":2}` and `{"b":2,"a":1}` are the same call."""
    return call.name + "\0" + json.dumps(call.arguments, sort_keys=True, ensure_ascii=False, default=str)


def streaks(earlier: Sequence[ToolCall], calls: Sequence[ToolCall]) -> list[int]:
    """For each of `calls`, how many times in a row it has now been asked for, counting itself and
    every identical call just before it (in `earlier`, then in `calls` before it)."""
    out: list[int] = []
    history = list(earlier)
    for call in calls:
        key = canonical(call)
        streak = 1
        for previous in reversed(history):
            if canonical(previous) != key:
                break
            streak += 1
        out.append(streak)
        history.append(call)
    return out
