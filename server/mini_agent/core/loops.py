"""Loop detection as a pure function: how often in a row the model has asked for the same call."""

from __future__ import annotations

import json
from collections.abc import Sequence

from mini_agent.core.contracts import ToolCall


def canonical(call: ToolCall) -> str:
    """Name plus arguments with sorted keys: `{"a":1,"b":2}` and `{"b":2,"a":1}` are the same call."""
    return call.name + "\0" + json.dumps(call.arguments, sort_keys=True, ensure_ascii=False, default=str)


def streaks(earlier: Sequence[Sequence[ToolCall]], calls: Sequence[ToolCall]) -> list[int]:
    """For each of `calls` (one step's), how many times in a row it has now been asked for: itself, the
    identical calls before it in its step, and one for each step just before (`earlier`, oldest first)
    that asked for it too. A step that repeats the previous step's calls, alone or beside others, is a
    repeat of each of them; a step without it ends the streak."""
    out: list[int] = []
    for position, call in enumerate(calls):
        key = canonical(call)
        streak = 1 + sum(1 for before in calls[:position] if canonical(before) == key)
        for step in reversed(earlier):
            same = sum(1 for previous in step if canonical(previous) == key)
            if not same:
                break
            streak += same
        out.append(streak)
    return out
