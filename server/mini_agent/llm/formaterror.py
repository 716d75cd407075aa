"""Format errors, written for the model: what was wrong, its own text, and what to write instead.

The text modes (ReAct and json) answer a reply they cannot read with one of these as the next
observation, so the wording is part of the protocol: it is what a small model repairs from.
"""

from __future__ import annotations

import re

from mini_agent.core.contracts import ToolSpec

_EXCERPT_CHARS = 300
# What a model writes from Python in place of JSON, and what JSON wants instead; the first found is named.
# Read on the text as written: nothing is repaired, the model writes it again.
_NOT_JSON = (
    (re.compile(r"""(?<![\w"])r["']"""),
     'JSON strings have no r prefix: write "…" and each backslash twice '
     '(a regular expression \\d+ is "\\\\d+")'),
    (re.compile(r'"(?:[^"\\]|\\["\\/bfnrtu])*\\[^"\\/bfnrtu]'),
     'a backslash in a JSON string starts an escape: write each backslash twice ("\\\\d" for \\d)'),
    (re.compile(r"""[{,\[]\s*'|'\s*:"""), 'JSON strings and keys are in double quotes: "key": "value"'),
    (re.compile(r"(?<![\w\"])(True|False|None)(?![\w\"])"), "JSON writes true, false and null (lowercase)"),
    (re.compile(r",\s*[}\]]"), "JSON allows no comma before } or ]"),
    (re.compile(r"[:\[,]\s*[A-Za-z_][\w.]*\s*\("),
     "a JSON value is a literal (a number, a string, a list), never a call: call that tool by itself "
     "first, and put the result it returns into a later call"),
)


def excerpt(raw: str) -> str:
    raw = raw.strip()
    if not raw:
        return "(nothing)"
    if len(raw) <= _EXCERPT_CHARS:
        return raw
    return f"{raw[:_EXCERPT_CHARS]} … [{len(raw) - _EXCERPT_CHARS} more characters]"


def message(
    problem: str, raw: str, *, truncated: bool, detail: str | None, expected: str, hint: str | None = None
) -> str:
    """What was wrong, the model's own text, what to change (`hint`), and the format `expected`."""
    lines = [f"Format error: {problem}."]
    if truncated:
        lines.append("Your reply was cut off by the token limit before it was complete; write less.")
    if detail:
        lines.append(f"JSON decoder: {detail}")
    if hint:
        lines.append(f"To fix: {hint}")
    lines += [f"Your text: {excerpt(raw)}", "Reply in exactly this format:", expected]
    return "\n".join(lines)


def missing_input(name: str, spec: ToolSpec | None) -> str:
    """A ReAct reply that stopped right after `Action: name`. Shown the whole format again, a small model
    writes the same two lines again; told the one line to add, with the argument names, it adds it."""
    arguments = f" ({_argument_names(spec)})" if spec is not None else ""
    return (
        f"Format error: your reply ended right after `Action: {name}`; the Action Input line is missing, "
        "so nothing was run.\nWrite the round again: the Thought line, the Action line, and then a line "
        f"starting with `Action Input:` that holds {name}'s arguments as one JSON object{arguments}."
    )


def no_tool(name: str) -> str:
    """A ReAct reply whose Action line says it calls nothing (`Action: none`). Shown the whole format
    again, a small model writes the same `Action: none`; shown only the form that answers, it answers."""
    return (
        f"Format error: `Action: {name}` names no tool, so nothing was run. A round that calls no tool "
        "gives the answer instead; write it again in this form:\n"
        "Thought: why you are done\n"
        "Final Answer: your answer for the user (if a tool failed, say what went wrong)"
    )


def _argument_names(spec: ToolSpec) -> str:
    properties = spec.input_schema.get("properties")
    names = [str(name) for name in properties] if isinstance(properties, dict) else []
    required = spec.input_schema.get("required")
    needed = [name for name in names if isinstance(required, list) and name in required]
    if needed:
        return f"its argument{'s' if len(needed) > 1 else ''}: {', '.join(needed)}"
    if names:
        return f"every argument is optional ({', '.join(names)}); {{}} leaves them all out"
    return "it takes none: write {}"


def json_hint(raw: str) -> str | None:
    """What to change in `raw`, text that failed to decode as JSON, when it is a Python-ism the
    decoder's own words do not name (a raw string, a lone backslash, single quotes, True, a trailing
    comma); None when none is seen."""
    for pattern, hint in _NOT_JSON:
        if pattern.search(raw):
            return hint
    return None
