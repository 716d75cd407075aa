"""Arguments written on a ReAct `Action:` line in Python's call syntax, the way small models write them:
`outline(module_path="a.py")`, `outline, module_path="a.py"`, `search({"pattern": "x"})`.

Read with the standard library's parser (`ast`) and `ast.literal_eval`, so nothing is evaluated but
literals: keyword arguments with literal values, or a single JSON object, give a dict; anything else
(a positional argument, a name, a call, `**kwargs`) gives None and the line stays a format error. The
text is bounded (`MAX_CHARS`) before it is parsed. Pure, no I/O.
"""

from __future__ import annotations

import ast
import json
from typing import Any

MAX_CHARS = 4000


def arguments(tail: str) -> dict[str, Any] | None:
    """The arguments in `tail`, what follows the tool's name on its Action line; None when there are none
    in a form read here."""
    inner = _inner(tail.strip().rstrip("`*").rstrip())
    if inner is None or len(inner) > MAX_CHARS:
        return None
    try:
        call = ast.parse(f"f({inner})", mode="eval").body
        if not isinstance(call, ast.Call) or len(call.args) + len(call.keywords) == 0:
            return None
        if call.args:
            return _object(inner) if len(call.args) == 1 and not call.keywords else None
        if any(keyword.arg is None for keyword in call.keywords):
            return None
        return {str(keyword.arg): ast.literal_eval(keyword.value) for keyword in call.keywords}
    except (SyntaxError, ValueError, TypeError, MemoryError, RecursionError):
        return None


def _inner(tail: str) -> str | None:
    if tail.startswith("(") and tail.endswith(")"):
        return tail[1:-1]
    if tail.startswith(","):
        return tail[1:]
    return None


def _object(text: str) -> dict[str, Any] | None:
    try:
        value = json.loads(text)
    except (ValueError, RecursionError):
        return None
    return value if isinstance(value, dict) else None
