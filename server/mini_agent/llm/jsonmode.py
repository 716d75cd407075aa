"""JSON tool mode: each model turn is one JSON object that a `response_format` schema constrains.

For small local models that neither call tools natively nor follow the text ReAct protocol: the server
compiles the schema into a grammar, so the choice of tool becomes a constrained decision and the
arguments come out as JSON valid against the tool's own input schema. The prompt still explains the
tools in words (reactprompt's tool list with a JSON protocol): the schema constrains, the prompt explains.

Pure functions and one incremental scanner, no I/O. `parse` reads the thought with the same
`ThoughtScanner` that the client feeds while the reply streams in, so what the editor was streamed and
the step's thought agree by construction; the decision itself comes from the JSON decoder.
"""

from __future__ import annotations

import json
import re
from collections.abc import Sequence
from typing import Any, Literal

from mini_agent.core.contracts import ToolCall, ToolSpec
from mini_agent.llm import formaterror, narrowing, react

Form = Literal["json_schema", "json_object"]

SCHEMA_NAME = "agent_turn"

EXPECTED_FORMAT = (
    'one JSON object: a "thought" string, and an "action" object holding either "tool" (a listed '
    'tool\'s name) and "arguments" (an object), or "final_answer" (a string)'
)

# A template for reactprompt.build_system_prompt: `{names}` is filled in, so literal braces are doubled.
PROTOCOL = """\
## How to work

Work in rounds. Each of your replies is exactly one JSON object and nothing else.

To use a tool:
{{"thought": "what you know so far and what you need next", \
"action": {{"tool": "one of {names}", "arguments": {{"key": "value"}}}}}}

The arguments follow the tool's schema above. The tool's result arrives in the next message, starting \
with "Observation:".

When you have what you need, or when no listed tool does what the user asks (then call none, and \
answer directly):
{{"thought": "why you are done", "action": {{"final_answer": "your answer for the user, every part of \
what they asked"}}}}"""


_FINAL_BRANCH: dict[str, Any] = {
    "type": "object",
    "additionalProperties": False,
    "required": ["final_answer"],
    # an empty answer is refused by `parse`: the grammar cannot write one (a last turn lost to it)
    "properties": {"final_answer": {"type": "string", "minLength": 1}},
}


def turn_schema(tools: Sequence[ToolSpec], must_hold: Sequence[str] = ()) -> dict[str, Any]:
    """The schema of one turn: a thought and one action, a call of a listed tool or the final answer.

    With `must_hold`, the turn is the final answer and it holds those words, in that order (the final
    check's left-out results): the grammar writes what a small model, shown them, still left out."""
    if must_hold:
        holding = {"type": "string", "pattern": narrowing.holding(must_hold)}
        final = {**_FINAL_BRANCH, "properties": {"final_answer": holding}}
        return {
            "type": "object",
            "additionalProperties": False,
            "required": ["thought", "action"],
            "properties": {"thought": {"type": "string"}, "action": final},
        }
    branches = [
        {
            "type": "object",
            "additionalProperties": False,
            "required": ["tool", "arguments"],
            "properties": {"tool": {"const": tool.name}, "arguments": tool.input_schema},
        }
        for tool in tools
    ]
    return {
        "type": "object",
        "additionalProperties": False,
        "required": ["thought", "action"],
        "properties": {"thought": {"type": "string"}, "action": {"anyOf": [*branches, _FINAL_BRANCH]}},
    }


def response_format(tools: Sequence[ToolSpec], form: Form, must_hold: Sequence[str] = ()) -> dict[str, Any]:
    """The request's `response_format` in OpenAI's form, or in the `json_object` form llama.cpp takes."""
    schema = turn_schema(tools, must_hold)
    if form == "json_object":
        return {"type": "json_object", "schema": schema}
    strict = all(_object_meets_strict(tool.input_schema) for tool in tools)
    return {"type": "json_schema", "json_schema": {"name": SCHEMA_NAME, "schema": schema, "strict": strict}}


# Keywords OpenAI's strict mode accepts; any other makes the server refuse the schema.
_STRICT_KEYWORDS = frozenset(
    {
        "type", "properties", "required", "additionalProperties", "items", "enum", "const", "anyOf",
        "description", "title", "$defs", "$ref", "pattern", "format", "minimum", "maximum",
        "exclusiveMinimum", "exclusiveMaximum", "multipleOf", "minItems", "maxItems",
    }
)  # fmt: skip


def _object_meets_strict(schema: Any) -> bool:
    return isinstance(schema, dict) and schema.get("type") == "object" and _meets_strict(schema)


def _meets_strict(schema: Any) -> bool:
    """OpenAI's strict rules: known keywords only; every object closed, with all its properties required."""
    if not isinstance(schema, dict) or not set(schema) <= _STRICT_KEYWORDS:
        return False
    properties = schema.get("properties", {})
    if not isinstance(properties, dict):
        return False
    is_object = schema.get("type") == "object" or bool(properties)
    required = set(schema.get("required", ()))
    closed = schema.get("additionalProperties") is False and required == set(properties)
    if is_object and not closed:
        return False
    children = [*properties.values(), *schema.get("anyOf", ()), *dict(schema.get("$defs", {})).values()]
    if "items" in schema:
        children.append(schema["items"])
    return all(_meets_strict(child) for child in children)


# --- the incremental thought reader --------------------------------------------------------------

_ESCAPES = {'"': '"', "\\": "\\", "/": "/", "b": "\b", "f": "\f", "n": "\n", "r": "\r", "t": "\t"}
_STRING_SPECIAL = re.compile(r'["\\]')  # what ends a plain run inside a string: its end or an escape
_HEX4 = re.compile(r"[0-9a-fA-F]{4}")
_WHITESPACE = " \t\r\n"
_REPLACEMENT = "\ufffd"


class ThoughtScanner:
    """Decodes the `thought` string of a JSON reply while the reply streams in.

    Invariant: for every way of splitting a text, the pieces `feed` returns, followed by `finish()`,
    concatenate to the same string as feeding the text whole — so the streamed thought chunks are
    exactly the thought `parse` reports. Only an unfinished escape (or a high surrogate waiting for its
    pair) is held back.

    It reads the first top-level object (from the first `{`), finds its first `thought` key at depth 1
    and decodes that string value as the JSON decoder does (a raw control character is kept, as the
    decoder keeps it). Where the decoder would refuse the string (a bad escape) the thought ends; a
    lone surrogate becomes U+FFFD, since it could not be sent on as UTF-8. Everything after the
    thought is ignored.
    """

    def __init__(self) -> None:
        self._started = False  # the first `{` was seen
        self._depth = 0
        self._expect_key = False  # at depth 1, the next string is a key
        self._in_string = False  # inside a string that is not the thought
        self._escaped = False  # … right after its backslash
        self._key: list[str] | None = None  # raw text of the depth-1 key being read
        self._last_key = ""
        self._awaiting = False  # `"thought":` was read; its value comes next
        self._in_thought = False
        self._pending = ""  # thought text held back: an escape not complete yet
        self._high: int | None = None  # a high surrogate waiting for its low half
        self.done = False

    def feed(self, text: str) -> str:
        """The newly decoded part of the thought."""
        out: list[str] = []
        pos = 0
        while pos < len(text) and not self.done:
            if self._in_thought:
                pos = self._thought(text, pos, out)
            elif self._in_string:
                pos = self._skip_string(text, pos)
            elif not self._started:
                brace = text.find("{", pos)
                if brace < 0:
                    return ""
                self._started, self._depth, self._expect_key = True, 1, True
                pos = brace + 1
            else:
                self._structure(text[pos])
                pos += 1
        return "".join(out)

    def finish(self) -> str:
        """At the end of the text: a held-back half escape is dropped, a lone high surrogate replaced."""
        out: list[str] = []
        self._flush_high(out)
        self._pending = ""
        self.done = True
        return "".join(out)

    def _structure(self, char: str) -> None:
        if char in _WHITESPACE:
            return
        if char == '"':
            if self._awaiting:
                self._in_thought = True
            else:
                self._in_string, self._escaped = True, False
                self._key = [] if self._depth == 1 and self._expect_key else None
        elif char in "{[":
            self._depth += 1
        elif char in "}]":
            self._depth -= 1
            self.done = self._depth == 0
        elif self._depth == 1 and char == ":":
            self._expect_key = False
            self._awaiting = self._last_key == "thought"
            return
        elif self._depth == 1 and char == ",":
            self._expect_key = True
        self._awaiting = False  # the thought's value is something other than a string

    def _skip_string(self, text: str, pos: int) -> int:
        while pos < len(text):
            if self._escaped:  # the character after a backslash that ended the previous piece
                if self._key is not None:
                    self._key.append(text[pos])
                self._escaped = False
                pos += 1
                continue
            found = _STRING_SPECIAL.search(text, pos)
            end = found.start() if found else len(text)
            if self._key is not None:
                self._key.append(text[pos:end])
            if found is None:
                return len(text)
            if found.group() == "\\":
                if self._key is not None:
                    self._key.append("\\" + text[end + 1 : end + 2])
                self._escaped = end + 1 >= len(text)
                pos = end + 2
                continue
            self._in_string = False
            if self._key is not None:
                self._last_key = _decoded_key("".join(self._key))
                self._key = None
            return end + 1
        return pos

    def _thought(self, text: str, pos: int, out: list[str]) -> int:
        buf = self._pending + text[pos:]
        self._pending = ""
        i = 0
        while i < len(buf):
            found = _STRING_SPECIAL.search(buf, i)
            end = found.start() if found else len(buf)
            if end > i:
                self._put(out, buf[i:end])
            if found is None:
                break
            i = end
            char = found.group()
            if char == '"':  # the end of the string
                self._end_thought(out)
                break
            step = self._escape(buf, i, out)
            if step == 0:  # an escape that is not complete yet
                self._pending = buf[i:]
                break
            if step < 0:
                self._end_thought(out)
                break
            i += step
        return len(text)

    def _escape(self, buf: str, i: int, out: list[str]) -> int:
        """Decode the escape at `buf[i]`: its length, 0 while incomplete, -1 if the decoder refuses it."""
        if i + 1 >= len(buf):
            return 0
        kind = buf[i + 1]
        if kind in _ESCAPES:
            self._put(out, _ESCAPES[kind])
            return 2
        if kind != "u":
            return -1
        if i + 6 > len(buf):
            return 0 if _HEX4.fullmatch(buf[i + 2 :].ljust(4, "0")) else -1
        if not _HEX4.fullmatch(buf, i + 2, i + 6):
            return -1
        self._put_code(out, int(buf[i + 2 : i + 6], 16))
        return 6

    def _put(self, out: list[str], text: str) -> None:
        self._flush_high(out)
        out.append(text)

    def _put_code(self, out: list[str], code: int) -> None:
        if 0xD800 <= code < 0xDC00:
            self._flush_high(out)
            self._high = code
        elif 0xDC00 <= code < 0xE000:
            if self._high is None:
                out.append(_REPLACEMENT)
            else:
                out.append(chr(0x10000 + ((self._high - 0xD800) << 10) + (code - 0xDC00)))
                self._high = None
        else:
            self._put(out, chr(code))

    def _flush_high(self, out: list[str]) -> None:
        if self._high is not None:
            out.append(_REPLACEMENT)
            self._high = None

    def _end_thought(self, out: list[str]) -> None:
        self._flush_high(out)
        self._in_thought = False
        self.done = True


def _decoded_key(raw: str) -> str:
    try:
        key = json.loads(f'"{raw}"')
    except ValueError:
        return ""
    return key if isinstance(key, str) else ""


# --- parsing a whole reply -----------------------------------------------------------------------


def parse(text: str, *, call_id: str, truncated: bool = False) -> react.ReactTurn:
    """Read one reply: exactly one of a call, a final answer and a format error, as in react mode.

    The object at the first `{` is decoded by the JSON decoder (no NaN, no duplicate keys, nothing
    repaired); text after it is ignored. The thought is the scanner's, as it was streamed.
    """
    scanner = ThoughtScanner()
    thought = scanner.feed(text) + scanner.finish()

    def error(problem: str, detail: str | None = None) -> react.ReactTurn:
        message = formaterror.message(
            problem, text, truncated=truncated, detail=detail, expected=EXPECTED_FORMAT
        )
        return react.ReactTurn(thought=thought, call=None, final_answer=None, format_error=message)

    start = text.find("{")
    if start < 0:
        return error("the reply is empty" if not text.strip() else "the reply is not a JSON object")
    try:
        value, _ = react.DECODER.raw_decode(text, start)
    except json.JSONDecodeError as exc:
        if truncated and exc.pos >= len(text.rstrip()):
            return error("the JSON object was cut off by the token limit", str(exc))
        return error("the reply is not valid JSON", str(exc))
    except (ValueError, RecursionError) as exc:
        return error("the reply is not valid JSON", str(exc) or "JSON nested too deeply")
    problem, call, answer = _decision(value, call_id)
    if problem is not None:
        return error(problem)
    return react.ReactTurn(thought=thought, call=call, final_answer=answer, format_error=None)


def _decision(value: dict[str, Any], call_id: str) -> tuple[str | None, ToolCall | None, str | None]:
    """(problem, call, answer) for a decoded object: the schema's rules, checked again."""
    if not isinstance(value.get("thought"), str):
        return "the object needs a `thought` string", None, None
    action = value.get("action")
    if not isinstance(action, dict):
        return "the object needs an `action` object", None, None
    if "tool" in action and "final_answer" not in action:
        name, arguments = action["tool"], action.get("arguments")
        if not isinstance(name, str) or not name.strip():
            return "`action.tool` must be a tool's name", None, None
        if not isinstance(arguments, dict):
            return f"`action.arguments` for `{name}` must be a JSON object", None, None
        raw = json.dumps(arguments, ensure_ascii=False)
        return None, ToolCall(id=call_id, name=name, arguments=arguments, raw_arguments=raw), None
    if "final_answer" in action and "tool" not in action:
        answer = action["final_answer"]
        if not isinstance(answer, str) or not answer.strip():
            return "`action.final_answer` must be a non-empty string", None, None
        return None, None, answer
    return "the action must hold either `tool` and `arguments`, or `final_answer`", None, None
