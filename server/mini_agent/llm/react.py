"""Text ReAct, for model servers without native tool calling: reading what the model wrote
(`reactprompt` is what it reads). The parser turns one completion into exactly one of an action, a
final answer, or a format error written for the model to read and fix. Pure functions, no I/O.

Parsing rules, in short (the reasons are in docs and in tests/unit/llm/test_react_parser.py):

- Markers (``Thought:``, ``Action:``, ``Action Input:``, ``Final Answer:``, ``Observation:``) count only
  at the start of a line; case, extra spaces, markdown bold, a number (``Action 1:``) and the
  full-width colon are tolerated. Before the first action, markers inside ``` fences do not count.
- The first decision wins: a JSON object decoded after ``Action Input:`` ends the parse, so anything the
  model invented afterwards (an observation, a final answer) is ignored; an ``Observation:`` line cuts
  the text anywhere else.
- ``<think>`` blocks are reasoning. A completion whose only tag is a closing ``</think>`` at the end of
  a line, before any ``Observation:`` line, is taken as reasoning up to it (chat templates that open the
  block inside the prompt).
- JSON is decoded, never repaired: anything the decoder rejects is reported with the raw text.
- `Action: none` (or an empty Action line) followed by a `Final Answer:` is that answer.
- An Action line that holds the whole call in Python's syntax, `Action: outline(module_path="a.py")`
  or `Action: outline, module_path="a.py"`, with no Action Input after it, is that call (`pycall`:
  literals only, nothing is evaluated).
- Line endings are normalised to ``\\n`` in the thought and the answer; ``raw_arguments`` is the exact
  slice of the completion that was decoded (for a call read from the Action line, its arguments as JSON).
"""

from __future__ import annotations

import json
import re
from collections.abc import Sequence
from dataclasses import dataclass
from enum import Enum
from typing import Any

from mini_agent.core.contracts import ToolCall, ToolSpec
from mini_agent.llm import formaterror, pycall

STOP_SEQUENCES: tuple[str, ...] = ("\nObservation:", "\nObservation：", "Observation:")

EXPECTED_FORMAT = (
    "Thought: what you know so far and what you need next\n"
    "Action: the tool's name, exactly as listed\n"
    "Action Input: the arguments as one JSON object, keyed by the tool's argument names\n"
    "\n"
    "or, when you can answer:\n"
    "\n"
    "Thought: why you are done\n"
    "Final Answer: the answer for the user, every part of what they asked"
)


def render_action(thought: str, name: str, arguments: dict[str, Any]) -> str:
    """A completion that `parse` reads back as this call (scripted models, examples, tests)."""
    return f"Thought: {thought}\nAction: {name}\nAction Input: {json.dumps(arguments, ensure_ascii=False)}"


def render_final(thought: str, answer: str) -> str:
    """A completion that `parse` reads back as this answer."""
    return f"Thought: {thought}\nFinal Answer: {answer}"


@dataclass(frozen=True, slots=True)
class ReactTurn:
    """One parsed completion: exactly one of `call`, `final_answer` and `format_error` is set.

    `thought` is the reasoning without its markers (``<think>`` blocks included); a format error is
    written for the model: what was wrong, its own text, and `EXPECTED_FORMAT` (for a reply that stops
    right after its Action line: the line to add instead).
    """

    thought: str
    call: ToolCall | None
    final_answer: str | None
    format_error: str | None


def parse(
    text: str, *, call_id: str, truncated: bool = False, tools: Sequence[ToolSpec] = ()
) -> ReactTurn:
    """Read one completion. `truncated` says the server stopped on its token limit; `tools`, the listed
    ones, lets a format error name the arguments of the tool the model chose."""
    return _Parser(text, call_id, truncated, tools).run()


def parse_marked(text: str, *, call_id: str, truncated: bool = False) -> ReactTurn | None:
    """The step `text` decides in ReAct's own markers: a call after `Action:` and `Action Input:`, or an
    answer after `Final Answer:`. None for anything else (plain prose, a format error), so a reply
    asked for in another format is taken as ReAct only when it plainly is ReAct."""
    turn = parse(text, call_id=call_id, truncated=truncated)
    if turn.call is not None:
        return turn
    if turn.final_answer is not None and any(_is_final(line) for line in text.splitlines()):
        return turn
    return None


def _is_final(line: str) -> bool:
    found = _marker(line)
    return found is not None and found[0] is _Kind.FINAL


# --- markers -------------------------------------------------------------------------------------


class _Kind(Enum):
    THOUGHT = "thought"
    ACTION_INPUT = "action_input"
    ACTION = "action"
    FINAL = "final"
    OBSERVATION = "observation"


# Possessive quantifiers only: a line of 200 KB of spaces or asterisks must fail in one pass.
_MARKER = re.compile(
    r"[ \t#]*+(?P<em>[*_]++)?[ \t]*+"
    r"(?:(?P<thought>thought)|(?P<action_input>action[ \t_]*+input)|(?P<action>action)"
    r"|(?P<final>final[ \t_]*+answer)|(?P<observation>observation))"
    r"[ \t]*+(?:\d++[ \t]*+)?(?(em)[*_]*+[ \t]*+)[:：](?(em)[*_]*+)",
    re.IGNORECASE,
)


def _marker(line: str) -> tuple[_Kind, int] | None:
    """The marker a line starts with, and where the text after it begins."""
    match = _MARKER.match(line)
    if match is None:
        return None
    kind = next(kind for kind in _Kind if match[kind.value] is not None)
    return kind, match.end()


def _is_fence(line: str) -> bool:
    return line.lstrip().startswith("```")


def _line_end(text: str, pos: int) -> int:
    end = text.find("\n", pos)
    return len(text) if end < 0 else end


def _observed_before(text: str, end: int) -> bool:
    """Whether an `Observation:` line starts before `end`: a `</think>` after one is invented text."""
    pos = 0
    while pos < end:
        found = _marker(text[pos : _line_end(text, pos)])
        if found is not None and found[0] is _Kind.OBSERVATION:
            return True
        pos = _line_end(text, pos) + 1
    return False


def _next_marker_line(text: str, pos: int, kinds: frozenset[_Kind], *, fences: bool) -> int:
    """Start of the first line after the one holding `pos` that opens with one of `kinds`."""
    in_fence = False
    end = _line_end(text, pos)
    while end < len(text):
        start = end + 1
        end = _line_end(text, start)
        line = text[start:end]
        if fences and _is_fence(line):
            in_fence = not in_fence
            continue
        found = None if in_fence else _marker(line)
        if found is not None and found[0] in kinds:
            return start
    return len(text)


_ANY_MARKER = frozenset(_Kind)
_OBSERVATION = frozenset({_Kind.OBSERVATION})


# --- tool names and JSON -------------------------------------------------------------------------

_NO_TOOL = frozenset({"", "none", "null", "nil", "n/a"})
_NAME_DECOR = "*`'\"“”‘’[]"
_NAME_NOTE = re.compile(r"[(（]")
_GOES_ON = re.compile(r"[\w.-]")  # a character that makes a longer name


def _leads(name: str, listed: str) -> bool:
    return name.startswith(listed) and not _GOES_ON.match(name, len(listed))


def _clean_name(raw: str) -> str:
    """`search`, 'search', **search**, search (looks things up) -> search."""
    name = _NAME_NOTE.split(raw, maxsplit=1)[0]
    return name.strip().strip(_NAME_DECOR).strip()


def _reject_constant(name: str) -> Any:
    raise ValueError(f"{name} is not valid JSON")


def _unique_keys(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    seen: set[str] = set()
    for key, _ in pairs:
        if key in seen:
            raise ValueError(f"duplicate key {key!r}")
        seen.add(key)
    return dict(pairs)


# A raw control character inside a string (a newline in a multi-line argument) is taken as itself
# (the decoder's `strict=False`): nothing else could be meant by it, and grammar-constrained servers
# (llama-cpp-python's JSON-schema grammars) let a model write one.
DECODER = json.JSONDecoder(parse_constant=_reject_constant, object_pairs_hook=_unique_keys, strict=False)
# Whitespace, markdown emphasis and a ```json fence opener that models put before the object.
_INPUT_LEAD = re.compile(r"[\s*_`]*+(?:json\b)?[\s*_`]*+", re.IGNORECASE)


@dataclass(frozen=True, slots=True)
class _Json:
    value: Any = None
    raw: str = ""
    error: str | None = None
    incomplete: bool = False


def _decode_at(region: str, at: int) -> _Json:
    candidate = region[at:]
    try:
        value, stop = DECODER.raw_decode(candidate)
    except json.JSONDecodeError as exc:
        incomplete = exc.pos >= len(candidate.rstrip()) or exc.msg.startswith("Unterminated string")
        return _Json(raw=candidate, error=str(exc), incomplete=incomplete)
    except (ValueError, RecursionError) as exc:
        return _Json(raw=candidate, error=str(exc) or "JSON nested too deeply")
    return _Json(value=value, raw=candidate[:stop])


def _read_json(region: str) -> _Json | None:
    """The value after `Action Input:`; if it does not start one, the object at the first `{`.

    None when there is nothing but whitespace and markdown.
    """
    lead = _INPUT_LEAD.match(region)
    at = lead.end() if lead else 0
    if at >= len(region):
        return None
    first = _decode_at(region, at)
    if first.error is None or region[at] == "{":
        return first
    brace = region.find("{", at)
    return first if brace < 0 else _decode_at(region, brace)


def _json_kind(value: Any) -> str:
    if isinstance(value, list):
        return "an array"
    if isinstance(value, str):
        return "a string"
    if isinstance(value, bool):
        return "a boolean"
    if value is None:
        return "null"
    return "a number"


# --- the parser ----------------------------------------------------------------------------------


@dataclass(slots=True)
class _Action:
    line: str
    name: str | None
    rest: str = ""  # what the line holds after `Action:`

    @property
    def names_a_tool(self) -> bool:
        return self.name is not None and self.name.casefold() not in _NO_TOOL


class _Parser:
    """One left-to-right pass over the lines; each line is looked at a bounded number of times."""

    def __init__(self, text: str, call_id: str, truncated: bool, tools: Sequence[ToolSpec] = ()) -> None:
        self.text = text
        self.call_id = call_id
        self.truncated = truncated
        self.tools = tools
        self.pieces: list[tuple[bool, str]] = []  # (is reasoning, text) in order

    def run(self) -> ReactTurn:
        text = self.text
        pos = self._orphan_think()
        in_fence = False
        saw_thought = False
        action: _Action | None = None
        while pos <= len(text):
            end = _line_end(text, pos)
            line = text[pos:end]
            head = line.lstrip()
            found = None
            if action is None and head.startswith("```"):
                in_fence = not in_fence
            elif action is None and head.startswith("<think>") and not in_fence:
                pos = self._think(end - len(head) + len("<think>"))  # the tag's line start + the tag
                continue
            elif action is not None or not in_fence:
                found = _marker(line)
            if found is None:
                self._plain(line, action)
                pos = end + 1
                continue
            kind, body = found
            if kind is _Kind.OBSERVATION:
                return self._unfinished(action) if action is not None else self._undecided(saw_thought)
            if action is not None and kind is _Kind.FINAL and not action.names_a_tool:
                return self._final(pos, pos + body)  # `Action: none`, then the answer: no tool, as it said
            if action is not None and kind is not _Kind.ACTION_INPUT:
                return self._unfinished(action)
            rest = text[pos + body : end]
            if kind is _Kind.ACTION_INPUT:
                return self._action_input(action, pos, pos + body)
            if kind is _Kind.FINAL:
                return self._final(pos, pos + body)
            if kind is _Kind.ACTION:
                action = _Action(line=line, name=self._name(rest), rest=rest)
            else:
                saw_thought = True
                self._add(False, rest.lstrip(" \t"))
            pos = end + 1
        if action is not None:
            return self._unfinished(action, ended=True)
        return self._undecided(saw_thought)

    # pieces of the thought

    def _add(self, reasoning: bool, piece: str) -> None:
        piece = piece.replace("\r\n", "\n").removesuffix("\r")
        self.pieces.append((reasoning, piece.strip() if reasoning else piece))

    def _joined(self, *, reasoning: bool | None = None) -> str:
        kept = (piece for is_reasoning, piece in self.pieces if reasoning in (None, is_reasoning))
        return "\n".join(kept).strip()

    def _plain(self, line: str, action: _Action | None) -> None:
        """A line without a marker: thought before an action, the tool's name right after `Action:`."""
        if action is None:
            self._add(False, line)
        elif action.name is None:
            action.name, action.rest = self._name(line), line

    def _name(self, raw: str) -> str | None:
        """The tool an Action line names: a listed name followed by its arguments (`outline,
        module_path="a.py"`) is that tool, whose Action Input holds the arguments."""
        name = _clean_name(raw)
        starts = [tool.name for tool in self.tools if _leads(name, tool.name)]
        return max(starts, key=len) if starts else name or None

    def _orphan_think(self) -> int:
        """Skip reasoning whose `<think>` was part of the prompt, so only `</think>` is in the text."""
        text = self.text
        close = text.find("</think>")
        if close < 0 or text.find("<think>", 0, close) >= 0 or _observed_before(text, close):
            return 0
        after = close + len("</think>")
        if text[after : _line_end(text, after)].strip():
            return 0
        self._add(True, text[:close])
        return after

    def _think(self, start: int) -> int:
        close = self.text.find("</think>", start)
        if close < 0:
            self._add(True, self.text[start:])
            return len(self.text) + 1
        self._add(True, self.text[start:close])
        return close + len("</think>")

    # outcomes

    def _turn(self, *, call: ToolCall | None = None, answer: str | None = None) -> ReactTurn:
        return ReactTurn(thought=self._joined(), call=call, final_answer=answer, format_error=None)

    def _error(self, problem: str, raw: str, detail: str | None = None, hint: str | None = None) -> ReactTurn:
        message = formaterror.message(
            problem, raw, truncated=self.truncated, detail=detail, expected=EXPECTED_FORMAT, hint=hint
        )
        return ReactTurn(thought=self._joined(), call=None, final_answer=None, format_error=message)

    def _unfinished(self, action: _Action, *, ended: bool = False) -> ReactTurn:
        """`ended`: nothing follows the Action line (another marker does otherwise)."""
        if not action.names_a_tool:
            return self._no_tool(action)
        inline = None if self.truncated else self._inline(action)
        if inline is not None:
            return inline
        if self.truncated or not ended:
            return self._error(f"Action `{action.name}` is not followed by an Action Input line", action.line)
        return self._no_input(action.name or "")

    def _inline(self, action: _Action) -> ReactTurn | None:
        """The call an Action line holds whole, its arguments in Python's call syntax (`pycall`)."""
        name = action.name or ""
        at = action.rest.find(name)
        arguments = pycall.arguments(action.rest[at + len(name) :]) if at >= 0 else None
        if arguments is None:
            return None
        raw = json.dumps(arguments, ensure_ascii=False)
        return self._turn(call=ToolCall(id=self.call_id, name=name, arguments=arguments, raw_arguments=raw))

    def _no_tool(self, action: _Action) -> ReactTurn:
        """`Action: none`: the model means to call nothing, and is told the form that says so."""
        if not action.name:
            return self._error("the Action line names no tool", action.line)
        message = formaterror.no_tool(action.name)
        return ReactTurn(thought=self._joined(), call=None, final_answer=None, format_error=message)

    def _no_input(self, name: str) -> ReactTurn:
        spec = next((tool for tool in self.tools if tool.name == name), None)
        message = formaterror.missing_input(name, spec)
        return ReactTurn(thought=self._joined(), call=None, final_answer=None, format_error=message)

    def _action_input(self, action: _Action | None, line_start: int, start: int) -> ReactTurn:
        end = _next_marker_line(self.text, start, _ANY_MARKER, fences=False)
        region = self.text[start:end]
        if action is None:
            return self._error("Action Input without an Action line before it", self.text[line_start:end])
        if not action.names_a_tool:
            return self._no_tool(action)
        name = action.name or ""
        decoded = _read_json(region)
        if decoded is None:
            return self._error(f"the Action Input for `{name}` is empty", self.text[line_start:end])
        if decoded.error is not None:
            hint = None if decoded.incomplete else formaterror.json_hint(decoded.raw)
            return self._error(self._json_problem(name, decoded), decoded.raw, decoded.error, hint)
        if not isinstance(decoded.value, dict):
            problem = f"the Action Input for `{name}` must be a JSON object, not {_json_kind(decoded.value)}"
            return self._error(problem, decoded.raw)
        call = ToolCall(id=self.call_id, name=name, arguments=decoded.value, raw_arguments=decoded.raw)
        return self._turn(call=call)

    def _json_problem(self, name: str, decoded: _Json) -> str:
        if decoded.incomplete and self.truncated:
            return f"the JSON object in the Action Input for `{name}` was cut off by the token limit"
        if decoded.incomplete:
            return (
                f"the JSON object in the Action Input for `{name}` ends before it is closed (if an argument "
                "held the word `Observation:`, that word ended your reply: leave it out of arguments)"
            )
        return f"the Action Input for `{name}` is not valid JSON"

    def _final(self, line_start: int, start: int) -> ReactTurn:
        end = _next_marker_line(self.text, start, _OBSERVATION, fences=True)
        answer = self.text[start:end].replace("\r\n", "\n").strip()
        if not answer:
            return self._error("the Final Answer is empty", self.text[line_start:end])
        return self._turn(answer=answer)

    def _undecided(self, saw_thought: bool) -> ReactTurn:
        """No Action and no Final Answer: plain text is the answer, a bare Thought is an error."""
        if saw_thought:
            return self._error("a Thought must be followed by an Action or a Final Answer", self.text)
        answer = self._joined(reasoning=False)
        if not answer:
            empty = not self._joined()
            problem = "the reply is empty" if empty else "the reply has no Action and no Final Answer"
            return self._error(problem, self.text)
        thought = self._joined(reasoning=True)
        return ReactTurn(thought=thought, call=None, final_answer=answer, format_error=None)
