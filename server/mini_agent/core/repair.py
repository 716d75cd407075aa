"""Repair hints: what a failed call could leave out (`llm.harness.repairHints`).

A small model whose call fails because of an argument it need not have given (a folder it made up for
a parameter that defaults to the workspace root) tends to invent the next value, and the next, until
its step budget ends. When a call that failed set an optional argument away from the default its
tool's schema declares, the model is told so beside the error, in the words of the schema: the
argument is optional, its default, and that leaving it out uses the default. Nothing else about the
error changes, and a call that failed with only required arguments, or with defaults, gets no hint.
Pure: no I/O.
"""

from __future__ import annotations

import json
from typing import Any

from mini_agent.core.contracts import ToolCall, ToolSpec

HINT = "Note: {args} optional; leaving {it} out uses {its} default."
_SHOWN_LIMIT = 60  # characters of a default shown in the hint


def hint(call: ToolCall, spec: ToolSpec | None) -> str:
    """The hint for `call`, which failed: its optional arguments that hold something other than their
    declared default; '' when there is none."""
    if spec is None:
        return ""
    properties = spec.input_schema.get("properties")
    if not isinstance(properties, dict):
        return ""
    required = set(spec.input_schema.get("required", ()))
    away: list[str] = []
    for name, value in call.arguments.items():
        schema = properties.get(name)
        if name in required or not isinstance(schema, dict) or "default" not in schema:
            continue
        if value != schema["default"]:
            away.append(f"`{name}` (default {_shown(schema['default'])})")
    if not away:
        return ""
    one = len(away) == 1
    args = away[0] + " is" if one else ", ".join(away) + " are"
    return HINT.format(args=args, it="it" if one else "one", its="its")


def _shown(value: Any) -> str:
    text = json.dumps(value, ensure_ascii=False)
    return text if len(text) <= _SHOWN_LIMIT else text[:_SHOWN_LIMIT] + "…"
