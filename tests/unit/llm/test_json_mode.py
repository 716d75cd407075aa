"""JSON tool mode without a server: the turn schema, the pure thought scanner and the parser."""

from __future__ import annotations

import json
import re
from itertools import pairwise
from typing import Any

import jsonschema
import pytest
from hypothesis import given
from hypothesis import strategies as st
from mini_agent.core.contracts import ToolSpec
from mini_agent.llm import jsonmode

ADD = ToolSpec(
    name="add",
    description="Add two numbers.",
    input_schema={"type": "object", "properties": {"a": {"type": "number"}, "b": {"type": "number"}}},
)
STRICT_ADD = ToolSpec(
    name="add",
    description="Add two numbers.",
    input_schema={
        "type": "object",
        "additionalProperties": False,
        "required": ["a", "b"],
        "properties": {"a": {"type": "number"}, "b": {"type": "number"}},
    },
)


def turn(thought: str, tool: str | None = None, answer: str | None = None, **arguments: Any) -> str:
    action = {"final_answer": answer} if tool is None else {"tool": tool, "arguments": arguments}
    return json.dumps({"thought": thought, "action": action}, ensure_ascii=False)


def scan(text: str, cuts: list[int]) -> list[str]:
    scanner = jsonmode.ThoughtScanner()
    bounds = [0, *sorted(c % (len(text) + 1) for c in cuts), len(text)]
    return [scanner.feed(text[a:b]) for a, b in pairwise(bounds)] + [scanner.finish()]


# --- the thought scanner and the parser (pure) ---------------------------------------------------

PIECES = ['"', "\\", "{", "}", "[", "]", ":", ",", "thought", "é", "🙂", "\n"]
NASTY = st.lists(st.sampled_from(PIECES)).map("".join)


@given(
    thought=st.text(),
    decoy=NASTY,
    thought_first=st.booleans(),
    ascii_only=st.booleans(),
    lead=st.sampled_from(["", "  ", "Sure:\n```json\n"]),
    cuts=st.lists(st.integers(min_value=0), max_size=8),
)
def test_scanner_gives_the_decoded_thought_however_the_reply_is_split(
    thought: str, decoy: str, thought_first: bool, ascii_only: bool, lead: str, cuts: list[int]
) -> None:
    action = {"tool": "t", "arguments": {"thought": decoy, decoy: [decoy, {"thought": decoy}]}}
    items = [("thought", thought), ("action", action)]
    value = dict(items if thought_first else items[::-1])
    text = lead + json.dumps(value, ensure_ascii=ascii_only)
    assert "".join(scan(text, cuts)) == thought
    assert jsonmode.parse(text, call_id="c").thought == thought


@given(st.lists(st.integers(min_value=0), max_size=6))
def test_scanner_stops_where_the_decoder_would(cuts: list[int]) -> None:
    text = '{"thought": "a\\u00e9\\ud83d\\ude00 b\\x", "action": {"final_answer": "x"}}'
    assert "".join(scan(text, cuts)) == "aé😀 b"
    parsed = jsonmode.parse(text, call_id="c")
    assert parsed.thought == "aé😀 b" and parsed.format_error is not None
    assert "Invalid \\escape" in parsed.format_error


@given(st.lists(st.integers(min_value=0), max_size=6))
def test_a_raw_newline_in_a_string_is_that_newline_as_llama_cpp_grammars_let_models_write_it(
    cuts: list[int],
) -> None:
    text = '{"thought": "two\nlines", "action": {"tool": "t", "arguments": {"path": "a\tb"}}}'
    assert "".join(scan(text, cuts)) == "two\nlines"
    parsed = jsonmode.parse(text, call_id="c")
    assert parsed.format_error is None and parsed.thought == "two\nlines"
    assert parsed.call is not None and parsed.call.arguments == {"path": "a\tb"}


def test_held_back_escape_is_released_once_complete() -> None:
    scanner = jsonmode.ThoughtScanner()
    assert scanner.feed('{"thought": "x\\u00') == "x"
    assert scanner.feed("e9") == "é"
    assert scanner.feed("\\ud83d") == ""  # a high surrogate waits for its other half
    assert scanner.feed('\\ude00"') == "😀"
    assert scanner.done and scanner.feed(', "thought": "again"') == ""


@pytest.mark.parametrize(
    ("text", "problem"),
    [
        ("", "the reply is empty"),
        ("I will add the numbers.", "the reply is not a JSON object"),
        ('{"thought": "t", "action": {"tool": "add", "arguments": {"a": 1}', "is not valid JSON"),
        ('{"thought": "t", "thought": "u", "action": {"final_answer": "5"}}', "duplicate key"),
        ('{"thought": "t", "action": {"tool": "add", "arguments": {"a": NaN}}}', "NaN is not valid JSON"),
        ('{"action": {"final_answer": "5"}}', "needs a `thought` string"),
        ('{"thought": "t", "action": "add"}', "needs an `action` object"),
        ('{"thought": "t", "action": {"tool": "add"}}', "`action.arguments` for `add` must be a JSON object"),
        ('{"thought": "t", "action": {"tool": "", "arguments": {}}}', "`action.tool` must be a tool's name"),
        ('{"thought": "t", "action": {"final_answer": " "}}', "must be a non-empty string"),
        ('{"thought": "t", "action": {"tool": "add", "arguments": {}, "final_answer": "5"}}', "either"),
        ('{"thought": "t", "action": {}}', "either"),
    ],
)
def test_replies_that_break_the_schema_are_format_errors_for_the_model(text: str, problem: str) -> None:
    parsed = jsonmode.parse(text, call_id="c")
    assert parsed.call is None and parsed.final_answer is None
    assert parsed.format_error is not None and problem in parsed.format_error
    assert jsonmode.EXPECTED_FORMAT in parsed.format_error


def test_a_reply_cut_by_the_token_limit_says_so() -> None:
    cut = '{"thought": "long", "action": {"tool": "add", "argu'
    parsed = jsonmode.parse(cut, call_id="c", truncated=True)
    assert parsed.thought == "long"
    assert parsed.format_error is not None and "cut off by the token limit" in parsed.format_error


def test_call_and_answer_are_read_with_prose_around_the_object() -> None:
    call = jsonmode.parse("```json\n" + turn("adding", "add", a=2, b=3) + "\n```", call_id="c1")
    assert call.call is not None and (call.call.id, call.call.name) == ("c1", "add")
    assert call.call.arguments == {"a": 2, "b": 3} and json.loads(call.call.raw_arguments) == {"a": 2, "b": 3}
    answer = jsonmode.parse(turn("done", answer="5") + " trailing words", call_id="c2")
    assert (answer.thought, answer.final_answer, answer.call) == ("done", "5", None)


def test_turn_schema_accepts_exactly_the_registered_calls_and_the_answer() -> None:
    schema = jsonmode.turn_schema([ADD, ToolSpec("noop", "Nothing.", {"type": "object", "properties": {}})])
    jsonschema.Draft202012Validator.check_schema(schema)
    valid = jsonschema.Draft202012Validator(schema)
    assert valid.is_valid(json.loads(turn("t", "add", a=1, b=2)))
    assert valid.is_valid(json.loads(turn("t", "noop")))
    assert valid.is_valid(json.loads(turn("t", answer="5")))
    assert not valid.is_valid(json.loads(turn("t", "add", a="one")))
    assert not valid.is_valid(json.loads(turn("t", "rm", path="/")))
    assert not valid.is_valid({"thought": "t", "action": {"final_answer": "5"}, "extra": 1})
    assert not valid.is_valid(json.loads(turn("t", answer="")))  # parse would refuse it: not writable


def test_strict_only_when_every_tool_schema_meets_openais_rules() -> None:
    def strict(*tools: ToolSpec) -> bool:
        return bool(jsonmode.response_format(tools, "json_schema")["json_schema"]["strict"])

    assert strict(STRICT_ADD) and strict()
    assert not strict(STRICT_ADD, ADD)  # optional properties, no additionalProperties: false
    with_default = {**STRICT_ADD.input_schema, "properties": {"a": {"type": "number", "default": 0}, "b": {}}}
    assert not strict(ToolSpec("add", "", with_default))
    assert jsonmode.response_format([ADD], "json_object") == {
        "type": "json_object",
        "schema": jsonmode.turn_schema([ADD]),
    }


# --- the client against the scripted server ------------------------------------------------------


# --- the daemon, end to end ----------------------------------------------------------------------


def test_a_turn_that_must_hold_words_is_a_final_answer_holding_them_in_order() -> None:
    schema = jsonmode.turn_schema([], ("metrics.py", "tools.py"))
    pattern = re.compile(schema["properties"]["action"]["properties"]["final_answer"]["pattern"])
    assert schema["properties"]["action"]["required"] == ["final_answer"]
    assert pattern.fullmatch("The files are metrics.py, schema.py and tools.py; 21 lines.")
    assert pattern.fullmatch("metrics.py tools.py") and pattern.fullmatch("- metrics.py; - tools.py")
    assert not pattern.fullmatch("metrics.py\ntools.py")  # a raw control character is not JSON
    assert not pattern.fullmatch("schema.py has 21 lines.") and not pattern.fullmatch("tools.py, metrics.py")


def test_a_word_the_answer_must_hold_stands_alone_not_inside_another() -> None:
    schema = jsonmode.turn_schema([], ("metrics.py", "tools.py"))
    pattern = re.compile(schema["properties"]["action"]["properties"]["final_answer"]["pattern"])
    assert not pattern.fullmatch("sametrics.python and tools.py")
    assert not pattern.fullmatch("metrics.py and mytools.py")
    assert not pattern.fullmatch("metrics.py and tools.pyc")
    # a letter of another script joins a word as much as a Latin one does
    assert not pattern.fullmatch("该metrics.py，tools.py")
    assert pattern.fullmatch("在该目录下: metrics.py, tools.py 和 schema.py")
