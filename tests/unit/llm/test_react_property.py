"""Properties of the text ReAct adapter over generated input.

Strategy constraints, and why:
- Tool names are identifier-like (a letter, then letters, digits or `_`, any script), never a word that
  means "no tool" (None, null, nil) — the forms `render_action` is meant for.
- Thoughts contain no colon (ASCII or full-width), backtick, `<` or carriage return: without them no
  line of the thought can be a marker, a fence or a think tag, so the thought is plain text.
- Final answers may contain anything except a carriage return (answers are normalised to LF) and a
  line that opens with the word "observation" (an Observation line ends the answer, by design), and
  they do not end on `</think>` (a reply whose text ends on a closing think tag is all reasoning, and
  holds no answer, by design).
- JSON arguments are unrestricted: braces, quotes, newlines, backslashes, markers and think tags
  inside strings, nesting, every scalar type (floats are finite: JSON has no NaN).
"""

from __future__ import annotations

import json
import re
from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st
from mini_agent.core.contracts import Message, Role, ToolSpec
from mini_agent.llm.react import (
    EXPECTED_FORMAT,
    STOP_SEQUENCES,
    ReactTurn,
    parse,
    render_action,
    render_final,
)
from mini_agent.llm.reactprompt import render_messages

PROPERTY = settings(deadline=None, max_examples=150)

NO_SURROGATES = st.characters(codec="utf-8")  # any code point a real completion can carry

tool_names = st.from_regex(r"[^\W\d_]\w{0,24}", fullmatch=True).filter(
    lambda name: name.casefold() not in {"none", "null", "nil"}
)

thoughts = st.text(alphabet=st.characters(codec="utf-8", exclude_characters=":：`<\r"), max_size=120)

_OBSERVATION_LINE = re.compile(r"^[ \t#*_]*observation", re.IGNORECASE | re.MULTILINE)
answers = st.text(alphabet=st.characters(codec="utf-8", exclude_characters="\r"), max_size=200)
answers = answers.filter(
    lambda a: bool(a.strip()) and _OBSERVATION_LINE.search(a) is None and not a.rstrip().endswith("</think>")
)

TRICKY = [
    "{",
    "}",
    '"}',
    "\\",
    "\n",
    "Observation: x",
    "\nObservation: y",
    "Observation：",
    "Final Answer: z",
    "Action: a",
    "<think>",
    "</think>",
    "```",
    '{"a": 1}',
    "'",
    "\r\n",
]
json_strings = st.text(alphabet=NO_SURROGATES, max_size=30) | st.sampled_from(TRICKY)
json_values = st.recursive(
    st.none()
    | st.booleans()
    | st.integers()
    | st.floats(allow_nan=False, allow_infinity=False)
    | json_strings,
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(json_strings, inner, max_size=4),
    max_leaves=25,
)
json_objects = st.dictionaries(json_strings, json_values, max_size=6)

# Fragments real completions are made of, so generated text reaches every branch of the parser.
FRAGMENTS = [
    "Thought:",
    "Action:",
    "Action Input:",
    "Final Answer:",
    "Observation:",
    "**Action:**",
    "action 2 :",
    "Action：",
    "Observation：",
    "\n",
    "\r\n",
    "\r",
    "```",
    "```json",
    "<think>",
    "</think>",
    "{",
    "}",
    "[",
    "]",
    '"',
    "'",
    ",",
    ":",
    "None",
    "True",
    "NaN",
    "search",
    " ",
    "\\",
    "ſ",
    "İ",
    "\u2028",
    "\x00",
    "（",
    "`",
    "**",
    '{"q": 1}',
    '{"a": {"b": [1, "}"]}}',
    "\ud800",
]
protocolish = st.lists(st.sampled_from(FRAGMENTS) | st.text(max_size=6), max_size=40).map("".join)


def check_invariants(result: ReactTurn) -> None:
    outcomes = [result.call, result.final_answer, result.format_error]
    assert sum(outcome is not None for outcome in outcomes) == 1
    if result.call is not None:
        assert result.call.id == "call-p"
        assert result.call.name.strip()
        assert isinstance(result.call.arguments, dict)
        assert json.loads(result.call.raw_arguments) == result.call.arguments
    if result.final_answer is not None:
        assert result.final_answer == result.final_answer.strip() != ""
    if result.format_error is not None:
        # the format in full, or (a reply that stopped after naming its tool) the one line to add
        assert EXPECTED_FORMAT in result.format_error or "a line starting with `Action Input:`" in (
            result.format_error
        )


@PROPERTY
@given(st.text(), st.booleans())
def test_parse_never_raises_on_arbitrary_text(text: str, truncated: bool) -> None:
    check_invariants(parse(text, call_id="call-p", truncated=truncated))


@PROPERTY
@given(protocolish, st.booleans())
def test_parse_never_raises_on_protocol_fragments(text: str, truncated: bool) -> None:
    check_invariants(parse(text, call_id="call-p", truncated=truncated))


@PROPERTY
@given(thoughts, tool_names, json_objects)
def test_action_round_trip(thought: str, name: str, arguments: dict[str, Any]) -> None:
    result = parse(render_action(thought, name, arguments), call_id="call-p")
    assert result.call is not None, result.format_error
    assert result.call.name == name
    assert result.call.arguments == arguments
    assert result.call.raw_arguments == json.dumps(arguments, ensure_ascii=False)
    assert result.thought == thought.strip()


@PROPERTY
@given(thoughts, answers)
def test_final_round_trip(thought: str, answer: str) -> None:
    result = parse(render_final(thought, answer), call_id="call-p")
    assert result.final_answer == answer.strip(), result.format_error
    assert result.thought == thought.strip()


@PROPERTY
@given(thoughts, tool_names, json_objects, st.text(max_size=80))
def test_invented_continuation_never_changes_the_call(
    thought: str, name: str, arguments: dict[str, Any], invented: str
) -> None:
    """Whatever the model writes after its action (a fake observation, an answer) is ignored."""
    text = render_action(thought, name, arguments) + "\nObservation: " + invented
    result = parse(text, call_id="call-p")
    assert result.call is not None
    assert (result.call.name, result.call.arguments) == (name, arguments)


@PROPERTY
@given(thoughts, tool_names, json_objects)
def test_stop_sequence_cut_gives_the_same_call_or_an_error(
    thought: str, name: str, arguments: dict[str, Any]
) -> None:
    """A server honouring the bare `Observation:` may cut inside an argument: never a different call."""
    full = render_action(thought, name, arguments)
    hits = [at for at in (full.find(stop) for stop in STOP_SEQUENCES) if at >= 0]
    cut = full[: min(hits)] if hits else full
    result = parse(cut, call_id="call-p")
    if result.call is not None:
        assert (result.call.name, result.call.arguments) == (name, arguments)
    else:
        assert result.format_error is not None
        assert f"`{name}`" in result.format_error


roles = st.sampled_from(list(Role))
messages = st.lists(st.builds(Message, role=roles, content=st.text(max_size=60)), max_size=12)
tool_lists = st.lists(
    st.builds(ToolSpec, name=tool_names, description=st.text(max_size=40), input_schema=json_objects),
    max_size=3,
)


@PROPERTY
@given(messages, tool_lists)
def test_rendering_is_append_only(history: list[Message], tools: list[ToolSpec]) -> None:
    full = render_messages(history, tools)
    assert len(full) == len(history)
    for k in range(len(history) + 1):
        assert render_messages(history[:k], tools) == full[:k]


@PROPERTY
@given(messages, tool_lists)
def test_assistant_turns_are_sent_verbatim(history: list[Message], tools: list[ToolSpec]) -> None:
    for message, rendered in zip(history, render_messages(history, tools), strict=True):
        if message.role is Role.ASSISTANT:
            assert rendered == {"role": "assistant", "content": message.content}
        if message.role is Role.TOOL:
            assert rendered == {"role": "user", "content": "Observation: " + message.content}
