"""Tool calls a model wrote as text: a small, lenient reader for "the model alone".

Forms read (what instruct models write when a server passes `tools` through as text):
- `<tool_call>{...}</tool_call>` (Qwen's and Hermes' template), one or several;
- a JSON object `{"name": …, "arguments": {…}}` — fenced (```json … ```) or bare in the text, with
  `parameters` or `args` for `arguments`, arguments as an object or as a JSON string, or OpenAI's
  `{"type": "function", "function": {"name": …, "arguments": …}}`;
- a JSON list of such objects, or `{"tool_calls": [...]}`.

Each call comes back as (name, arguments) with arguments a dict, or None where they did not decode. This is
the bench's own reader, on purpose independent of the daemon's parser.
"""

from __future__ import annotations

import json
import re
from typing import Any

TAGGED = re.compile(r"<tool_call>\s*(.*?)\s*(?:</tool_call>|$)", re.S)
FENCED = re.compile(r"```[A-Za-z0-9_-]*\s*\n?(.*?)```", re.S)
Call = tuple[str, dict[str, Any] | None]


def _arguments(value: Any) -> dict[str, Any] | None:
    if isinstance(value, str):
        try:
            value = json.loads(value)
        except ValueError:
            return None
    return value if isinstance(value, dict) else None


def _as_calls(value: Any) -> list[Call]:
    """The calls a decoded JSON value holds (none if it is not call-shaped)."""
    if isinstance(value, list):
        return [call for item in value for call in _as_calls(item)]
    if not isinstance(value, dict):
        return []
    if isinstance(value.get("tool_calls"), list):
        return _as_calls(value["tool_calls"])
    if isinstance(value.get("function"), dict):
        return _as_calls(value["function"])
    name = value.get("name", value.get("tool"))
    if not isinstance(name, str) or not name:
        return []
    for key in ("arguments", "parameters", "args", "input"):
        if key in value:
            return [(name, _arguments(value[key]))]
    return [(name, {})] if len(value) == 1 else []


def _json_values(text: str) -> list[Any]:
    """Every top-level JSON object or list found in the text, left to right."""
    decoder = json.JSONDecoder()
    values: list[Any] = []
    position = 0
    while True:
        starts = [i for i in (text.find("{", position), text.find("[", position)) if i >= 0]
        if not starts:
            return values
        start = min(starts)
        try:
            value, end = decoder.raw_decode(text, start)
        except ValueError:
            position = start + 1
            continue
        values.append(value)
        position = end


def read_calls(text: str | None) -> list[Call]:
    """The tool calls written in `text`, in order (empty when there are none)."""
    if not text:
        return []
    tagged = TAGGED.findall(text)
    if tagged:
        return [call for block in tagged for value in _json_values(block) for call in _as_calls(value)]
    fenced = FENCED.findall(text)
    if fenced:
        calls = [call for block in fenced for value in _json_values(block) for call in _as_calls(value)]
        if calls:
            return calls
    return [call for value in _json_values(text) for call in _as_calls(value)]
