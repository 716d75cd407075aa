"""Tool calls written as text: what a model that can call tools writes when its server did not take
`tools` (llama-cpp-python ignores them with `tool_choice: "auto"`; other servers parse calls only with a
flag or a chat template that knows them).

Pure functions, no I/O. `read` finds, in a reply's text, the calls in the common textual forms:

- a JSON object naming a tool and its arguments: `{"name": …, "arguments": {…}}` (also `parameters`,
  `args` or `input` for the arguments, `tool` or `tool_name` for the name, and OpenAI's own
  `{"function": {"name": …, "arguments": "…"}}`, arguments as a JSON string or an object);
- the same object between `<tool_call>` and `</tool_call>` (Qwen's and Hermes' chat templates), fenced
  in markdown or bare;
- a JSON list of such objects;
- an object whose braces are doubled, `{{"name": …, "arguments": {…}}}` (what a model writes after
  reading a prompt template's escaped braces), read as the object inside the outer brace.

Only a call naming a listed tool counts, and only objects that start a line (or follow a fence or a
tag) are read, so an example buried in prose stays prose. Once the model has results, a call ends its
reply (`ended`): a model that calls a tool stops to wait for the result, so objects followed by more
prose are examples written into an answer ("you can call it so: … This will give you …"), and the
reply holds no call. Before any result, a plan that names its calls amid prose is what the model means
to run.

JSON is decoded, never repaired; a reply that is nothing but such an object and still gives no call
(a tool that is not listed, JSON that does not decode) is a call attempt (`attempted`) the model can
be told about, not an answer. The scan is bounded: at most `MAX_CANDIDATES` objects are decoded per
reply, and at most `MAX_CALLS` calls come back.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Any

from mini_agent.core.contracts import ToolSpec
from mini_agent.llm import formaterror

MAX_CANDIDATES = 32
MAX_CALLS = 8

_NAME_KEYS = ("name", "tool", "tool_name")
_ARGUMENT_KEYS = ("arguments", "parameters", "args", "input")
# where a written call may begin: the start of a line (after indentation or a list marker), or right
# after an opening tag or fence
_START = re.compile(r"(?m)(?:^[ \t]*(?:[-*][ \t]+)?|<tool_call>\s*|<tools>\s*|```[a-zA-Z]*\s*)([\[{])")
_DECODER = json.JSONDecoder()


@dataclass(frozen=True, slots=True)
class TextCall:
    """One call found in the text: the tool, its arguments, and the exact JSON they were read from."""

    name: str
    arguments: dict[str, Any]
    raw_arguments: str


def read(text: str, tools: Sequence[ToolSpec], *, ended: bool = False) -> list[TextCall]:
    """The calls of listed tools written in `text`, in order; empty when there is none, or, with
    `ended`, when prose follows the last of them."""
    return _read(text, {tool.name for tool in tools}, ended=ended)


def holds_calls(text: str, names: Iterable[str]) -> bool:
    """Whether `text` is a reply whose calls of the tools `names` were read from it (a turn whose
    calls came as text, told apart from one whose server returned them as `tool_calls`)."""
    return bool(_read(text, set(names)))


def _read(text: str, names: set[str], *, ended: bool = False) -> list[TextCall]:
    if not names or not text.strip():
        return []
    calls: list[TextCall] = []
    end = last = 0
    for tried, match in enumerate(_START.finditer(text)):
        if tried >= MAX_CANDIDATES or len(calls) >= MAX_CALLS:
            return calls[:MAX_CALLS]  # the scan's bound: what follows is not looked at
        start = match.start(1)
        if start < end:  # inside a value already read
            continue
        decoded = _decode(text, start)
        if decoded is None and text.startswith("{{", start):
            decoded = _decode(text, start + 1)
        if decoded is None:
            continue
        value, end = decoded
        found = list(_calls(value, names))
        if found:
            calls += found
            last = end
    if ended and calls and not _CLOSED.match(text, last):
        return []  # prose after the last call: the objects were examples in an answer
    return calls[:MAX_CALLS]


# what may follow a reply's last written call: space, closing fences and tags, the outer brace of a
# doubled one
_CLOSED = re.compile(r"(?:\s|```|</tool_call>|</tools>|})*\Z")


# a reply that is one written call and nothing else: an optional fence or tag around an object (or a
# list) that names something and gives it arguments
_OPENING = re.compile(r"\A(?:```[a-zA-Z]*|<tool_call>)?\s*")
_CLOSING = re.compile(r"\s*(?:```|</tool_call>)?\Z")
_NAMED = re.compile(r'"(?:name|tool|tool_name)"\s*:\s*"([^"\n]{0,200})"')
_GIVEN = re.compile(r'"(?:arguments|parameters|args|input)"\s*:')
_ATTEMPT_LIMIT = 16_000  # characters of a reply looked at as a call attempt


def attempted(text: str, tools: Sequence[ToolSpec]) -> str | None:
    """Why `text`, a reply that is nothing but a written call, gives no call `read` takes (the tool is
    not listed, or the JSON does not decode); None when it is no such reply, or a call was read."""
    body = text.strip()
    if len(body) > _ATTEMPT_LIMIT:
        return None
    opening, closing = _OPENING.match(body), _CLOSING.search(body)
    body = body[opening.end() if opening else 0 : closing.start() if closing else len(body)]
    named = _NAMED.search(body)
    if body[:1] not in ("{", "[") or body[-1:] not in ("}", "]") or named is None or not _GIVEN.search(body):
        return None
    if read(text, tools):
        return None
    names = {tool.name for tool in tools}
    if named.group(1) not in names:
        listed = ", ".join(sorted(names))
        return f"it names {named.group(1)!r}, which is not a listed tool (the tools: {listed})"
    hint = formaterror.json_hint(body)
    return "its arguments are not one valid JSON object" + (f" ({hint})" if hint else "")


def _decode(text: str, start: int) -> tuple[Any, int] | None:
    try:
        return _DECODER.raw_decode(text, start)
    except (ValueError, RecursionError):
        return None


def _calls(value: Any, names: set[str]) -> Iterable[TextCall]:
    items = value if isinstance(value, list) else [value]
    for item in items:
        call = _call(item, names)
        if call is not None:
            yield call


def _call(value: Any, names: set[str]) -> TextCall | None:
    if not isinstance(value, dict):
        return None
    if isinstance(value.get("function"), dict):  # OpenAI's own shape, written out
        value = value["function"]
    name = next((value[key] for key in _NAME_KEYS if isinstance(value.get(key), str)), None)
    if name not in names:
        return None
    present = [key for key in _ARGUMENT_KEYS if key in value]
    # no arguments key: the other keys are the arguments (`{"name": "read", "path": "a.txt"}`)
    arguments: Any = value[present[0]] if present else {k: v for k, v in value.items() if k not in _NAME_KEYS}
    if isinstance(arguments, str):
        try:
            arguments = json.loads(arguments) if arguments.strip() else {}
        except ValueError:
            return None
    if not isinstance(arguments, dict):
        return None
    return TextCall(name, arguments, json.dumps(arguments, ensure_ascii=False))
