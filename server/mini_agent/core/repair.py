"""Repair hints: what a failed call could leave out (`llm.harness.repairHints`).

A small model whose call fails because of an argument it need not have given (a folder it made up for
a parameter that defaults to the workspace root) tends to invent the next value, and the next, until
its step budget ends. When a call that failed set an optional argument away from the default its
tool's schema declares, the model is told so beside the error, in the words of the schema: the
argument is optional, its default, and that leaving it out uses the default. Nothing else about the
error changes, and a call that failed with only required arguments, or with defaults, gets no hint;
nor does a value the user's task names itself (a folder the user asked about is no invention: leaving
it out would answer another question).

A model that fails the same way again is held to the hint where the reply can be constrained: when the
last two calls of a tool in this turn both failed while setting the same optional argument away from
its default, that argument is one the next request may not set (`pinned`; json mode's grammar leaves
it out, so the call takes the default). A tool whose result the model already has in this turn, and
whose last two calls since then both failed, rests for the next request (`resting`: the grammar
offers the other tools and the answer), so a model that wanders in made-up arguments to a tool it no
longer needs moves on.

A value a tool said does not exist (a file, a folder, a column: its error names it) that nothing in
the turn holds either — not the task, not a result, not a call that succeeded — was made up; the next
requests may set that argument only to a value the turn has seen (`grounded`: json mode's grammar
makes it an `enum` of them), so a small model that invents paths picks one of the paths a listing
gave it. Pure: no I/O.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Iterator, Sequence
from typing import Any

from mini_agent.core.contracts import Observation, ToolCall, ToolSpec
from mini_agent.core.session import StepRecord

HINT = "Note: {args} optional; leaving {it} out uses {its} default."
_SHOWN_LIMIT = 60  # characters of a default shown in the hint


def hint(call: ToolCall, spec: ToolSpec | None, task: str = "") -> str:
    """The hint for `call`, which failed: its optional arguments that hold something other than their
    declared default and that `task` (the user's words) does not name; '' when there is none."""
    defaults = _defaults(spec)
    away = [f"`{name}` (default {_shown(defaults[name])})" for name in _away(call, defaults, task)]
    if not away:
        return ""
    one = len(away) == 1
    args = away[0] + " is" if one else ", ".join(away) + " are"
    return HINT.format(args=args, it="it" if one else "one", its="its")


def pinned(
    turn: Sequence[StepRecord], spec_of: Callable[[str], ToolSpec | None], task: str = ""
) -> dict[str, tuple[str, ...]]:
    """Per tool, the optional arguments the next request may not set: those that its last two calls in
    `turn` (the current user turn's steps, oldest first) both set away from their defaults, to values
    `task` does not name, where both calls failed."""
    history: dict[str, list[tuple[bool, set[str]]]] = {}
    for call, failed in _calls(turn):
        away = set(_away(call, _defaults(spec_of(call.name)), task))
        history.setdefault(call.name, []).append((failed, away))
    out: dict[str, tuple[str, ...]] = {}
    for name, calls in history.items():
        if len(calls) >= 2 and calls[-1][0] and calls[-2][0]:
            both = calls[-1][1] & calls[-2][1]
            if both:
                out[name] = tuple(sorted(both))
    return out


def resting(turn: Sequence[StepRecord]) -> tuple[str, ...]:
    """The tools the next request may not call: each has a successful result in `turn` (the current
    user turn's steps, oldest first), and its last two calls in it came after that and both failed."""
    history: dict[str, list[bool]] = {}  # per tool, whether each of its calls failed, in order
    for call, failed in _calls(turn):
        history.setdefault(call.name, []).append(failed)
    return tuple(
        name
        for name, calls in history.items()
        if len(calls) >= 3 and calls[-1] and calls[-2] and not all(calls[:-2])
    )


# The values `grounded` offers: plain names and paths (what a grammar's enum spells safely), few enough
# that the enum stays small; past the count the argument is left as it is.
_PLAIN_VALUE = re.compile(r"[A-Za-z0-9_./ :@+-]{1,80}")
_MAX_GROUNDED = 32
_FILE_LIKE = re.compile(r"[\w.-]+(?:/[\w.-]+)*")
_QUOTED = re.compile(r"'([^'\n]{1,80})'|\"([^\"\n]{1,80})\"")


def grounded(turn: Sequence[StepRecord], task: str = "") -> dict[str, dict[str, tuple[str, ...]]]:
    """Per tool, per string argument, the only values the next request may give it: the values seen
    in `turn` (the current user turn's steps) but those it already failed with (none left: the grammar
    leaves an optional argument out), for an argument one of whose calls failed with a value the error
    named and nothing in the turn or `task` holds. Empty when no value was made up, or when the turn
    has seen none to offer (or too many)."""
    seen = _seen(turn, task)
    offered = tuple(sorted(value for value in seen if _PLAIN_VALUE.fullmatch(value)))
    if not offered or len(offered) > _MAX_GROUNDED:
        return {}
    made_up: set[tuple[str, str]] = set()
    tried: dict[tuple[str, str], set[str]] = {}  # the values each argument failed with
    for record in turn:
        results = {obs.call_id: obs for obs in record.observations}
        for call in record.tool_calls:
            result = results.get(call.id)
            if result is None or not result.is_error:
                continue
            for name, value in call.arguments.items():
                if isinstance(value, str) and _named_by(result, value):
                    tried.setdefault((call.name, name), set()).add(value)
                    if value not in seen:
                        made_up.add((call.name, name))
    out: dict[str, dict[str, tuple[str, ...]]] = {}
    for tool, name in sorted(made_up):
        out.setdefault(tool, {})[name] = tuple(value for value in offered if value not in tried[tool, name])
    return out


def _seen(turn: Sequence[StepRecord], task: str) -> set[str]:
    """The strings the turn holds: those of its successful results (values and keys of a JSON one),
    the string arguments of its successful calls, and the file-like and quoted words of `task`."""
    seen = {word for word in _FILE_LIKE.findall(task) if "." in word.strip(".") or "/" in word}
    seen |= {single or double for single, double in _QUOTED.findall(task)}
    for record in turn:
        failed = {obs.call_id for obs in record.observations if obs.is_error}
        for obs in record.observations:
            if not obs.is_error and obs.tool_name:
                seen |= _strings(obs.output)
        for call in record.tool_calls:
            if call.id not in failed:
                seen |= {value for value in call.arguments.values() if isinstance(value, str)}
    return seen


def _strings(output: str) -> set[str]:
    """The strings of a JSON result, its values and keys (a text that is no JSON, or nests past the
    decoder's depth: none)."""
    try:
        value = json.loads(output)
    except (ValueError, RecursionError):
        return set()
    found: set[str] = set()
    pending = [value]
    while pending and len(found) <= 4 * _MAX_GROUNDED:
        node = pending.pop()
        if isinstance(node, str):
            found.add(node)
        elif isinstance(node, dict):
            found |= {key for key in node if isinstance(key, str)}
            pending += node.values()
        elif isinstance(node, list):
            pending += node
    return found


def _named_by(result: Observation, value: str) -> bool:
    """Whether the error `result` names `value`, quoted as Python or JSON quotes it."""
    return any(quoted in result.output for quoted in (repr(value), json.dumps(value)))


def _calls(turn: Sequence[StepRecord]) -> Iterator[tuple[ToolCall, bool]]:
    """Each call of `turn`, oldest first, with whether its result was an error."""
    for record in turn:
        failed = {obs.call_id for obs in record.observations if obs.is_error}
        for call in record.tool_calls:
            yield call, call.id in failed


def _defaults(spec: ToolSpec | None) -> dict[str, Any]:
    """The optional arguments of `spec` that declare a default, with it."""
    properties = spec.input_schema.get("properties") if spec is not None else None
    if spec is None or not isinstance(properties, dict):
        return {}
    required = set(spec.input_schema.get("required", ()))
    return {
        name: schema["default"]
        for name, schema in properties.items()
        if name not in required and isinstance(schema, dict) and "default" in schema
    }


def _away(call: ToolCall, defaults: dict[str, Any], task: str) -> list[str]:
    return [
        name
        for name, value in call.arguments.items()
        if name in defaults and value != defaults[name] and not _named_in(value, task)
    ]


def _named_in(value: Any, task: str) -> bool:
    """Whether `value` is a string `task` holds as a whole word ("src" in "the folder 'src'")."""
    if not isinstance(value, str) or not value.strip():
        return False
    return re.search(r"(?<!\w)" + re.escape(value.strip()) + r"(?!\w)", task) is not None


def _shown(value: Any) -> str:
    text = json.dumps(value, ensure_ascii=False)
    return text if len(text) <= _SHOWN_LIMIT else text[:_SHOWN_LIMIT] + "…"
