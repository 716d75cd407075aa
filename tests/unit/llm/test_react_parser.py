"""The text ReAct adapter on the kinds of output real models write.

The cases follow what other ReAct parsers got wrong (see shared/REACT-PARSING-NOTES.md): each test
names the exact tool, arguments, raw argument text, answer or error it expects.
"""

from __future__ import annotations

import json
from typing import Any

import pytest
from mini_agent.core.contracts import Message, Role, ToolCall, ToolSpec
from mini_agent.llm.react import (
    EXPECTED_FORMAT,
    STOP_SEQUENCES,
    ReactTurn,
    parse,
    render_action,
    render_final,
)
from mini_agent.llm.reactprompt import build_system_prompt, render_messages


def turn(text: str, *, truncated: bool = False) -> ReactTurn:
    result = parse(text, call_id="call-1", truncated=truncated)
    outcomes = [result.call, result.final_answer, result.format_error]
    assert sum(outcome is not None for outcome in outcomes) == 1, result
    return result


def call_of(text: str) -> ToolCall:
    result = turn(text)
    assert result.call is not None, result.format_error or result.final_answer
    assert result.call.id == "call-1"
    return result.call


def answer_of(text: str) -> str:
    result = turn(text)
    assert result.final_answer is not None, result.format_error or result.call
    return result.final_answer


def error_of(text: str, *, truncated: bool = False) -> str:
    result = turn(text, truncated=truncated)
    assert result.format_error is not None, result.call or result.final_answer
    assert EXPECTED_FORMAT in result.format_error
    return result.format_error


def server_cut(text: str) -> str:
    """What a server honouring STOP_SEQUENCES returns: the text before the earliest stop string."""
    hits = [at for at in (text.find(stop) for stop in STOP_SEQUENCES) if at >= 0]
    return text[: min(hits)] if hits else text


# --- the JSON after Action Input ------------------------------------------------------------------

JSON_CASES: list[tuple[str, str, dict[str, Any], str]] = [
    (
        "nested objects and arrays",
        'Action: save\nAction Input: {"file": "app.json", "data": {"host": "h", "ports": [1, {"x": {}}]}}',
        {"file": "app.json", "data": {"host": "h", "ports": [1, {"x": {}}]}},
        '{"file": "app.json", "data": {"host": "h", "ports": [1, {"x": {}}]}}',
    ),
    (
        "closing brace and quotes inside strings",
        'Action: save\nAction Input: {"code": "if (x) { return \\"}\\"; }", "k": "}}"}',
        {"code": 'if (x) { return "}"; }', "k": "}}"},
        '{"code": "if (x) { return \\"}\\"; }", "k": "}}"}',
    ),
    (
        "json fence on the following lines",
        'Action: search\nAction Input:\n```json\n{\n  "q": "weather"\n}\n```\n',
        {"q": "weather"},
        '{\n  "q": "weather"\n}',
    ),
    (
        "json fence on the marker line",
        'Action: search\nAction Input: ```json {"q": "weather"} ```',
        {"q": "weather"},
        '{"q": "weather"}',
    ),
    (
        "plain fence",
        'Action: search\nAction Input:\n```\n{"q": 1}\n```',
        {"q": 1},
        '{"q": 1}',
    ),
    (
        "prose after the JSON",
        'Action: search\nAction Input: {"q": "a"} I will wait for the result {not json}.',
        {"q": "a"},
        '{"q": "a"}',
    ),
    (
        "bold junk before the brace",
        'Action: search\nAction Input: **{"q": "a"}**',
        {"q": "a"},
        '{"q": "a"}',
    ),
    (
        "prose before the brace",
        'Action: search\nAction Input: the arguments are {"q": "a"}',
        {"q": "a"},
        '{"q": "a"}',
    ),
    (
        "whitespace inside the JSON is kept in the raw slice",
        'Action: search\nAction Input: {  "q" :\t"a" ,"n":1 }  ',
        {"q": "a", "n": 1},
        '{  "q" :\t"a" ,"n":1 }',
    ),
    (
        "empty object",
        "Action: now\nAction Input: {}",
        {},
        "{}",
    ),
    (
        "escaped unicode and literal non-ASCII",
        'Action: search\nAction Input: {"q": "caf\\u00e9 天气", "e": "\\ud83d\\ude00"}',
        {"q": "café 天气", "e": "😀"},
        '{"q": "caf\\u00e9 天气", "e": "\\ud83d\\ude00"}',
    ),
]


@pytest.mark.parametrize(
    ("text", "args", "raw"), [case[1:] for case in JSON_CASES], ids=[c[0] for c in JSON_CASES]
)
def test_action_input_json(text: str, args: dict[str, Any], raw: str) -> None:
    call = call_of(text)
    assert call.arguments == args
    assert call.raw_arguments == raw
    assert call.parse_error is None


NAME_CASES: list[tuple[str, str, str]] = [
    ("plain", "Action: web_search", "web_search"),
    ("non-ASCII", "Action: 搜索_网页", "搜索_网页"),
    ("non-ASCII letters", "Action: größe_prüfen", "größe_prüfen"),
    ("backticks", "Action: `web_search`", "web_search"),
    ("single quotes", "Action: 'web_search'", "web_search"),
    ("double quotes", 'Action: "web_search"', "web_search"),
    ("bold name", "Action: **web_search**", "web_search"),
    ("square brackets", "Action: [web_search]", "web_search"),
    ("trailing description", "Action: web_search (searches the web)", "web_search"),
    ("quoted, then description", "Action: `web_search` (searches the web)", "web_search"),
    ("full-width parenthesis", "Action: 搜索（搜索网页）", "搜索"),
    ("name on the next line", "Action:\nweb_search", "web_search"),
    ("name after a blank line", "Action:\n\n   `web_search`  ", "web_search"),
    ("dotted name", "Action: files.read", "files.read"),
]


@pytest.mark.parametrize(("action", "name"), [c[1:] for c in NAME_CASES], ids=[c[0] for c in NAME_CASES])
def test_tool_name_forms(action: str, name: str) -> None:
    call = call_of(f'Thought: I need it.\n{action}\nAction Input: {{"q": 1}}')
    assert call.name == name
    assert call.arguments == {"q": 1}


# --- marker variants ------------------------------------------------------------------------------

MARKER_CASES: list[tuple[str, str]] = [
    ("lowercase", 'thought: t\naction: search\naction input: {"q": 1}'),
    ("uppercase", 'THOUGHT: t\nACTION: search\nACTION INPUT: {"q": 1}'),
    ("extra spaces", 'Thought :  t\nAction  : search\nAction  Input :  {"q": 1}'),
    ("underscore", 'Thought: t\nAction: search\nAction_Input: {"q": 1}'),
    ("bold with colon inside", '**Thought:** t\n**Action:** search\n**Action Input:** {"q": 1}'),
    ("bold with colon outside", '**Thought**: t\n**Action**: search\n**Action Input**: {"q": 1}'),
    ("numbered", 'Thought 1: t\nAction 1: search\nAction Input 1: {"q": 1}'),
    ("numbered and bold", '**Thought 2:** t\n**Action 2:** search\n**Action Input 2:** {"q": 1}'),
    ("heading", '### Thought: t\n### Action: search\n### Action Input: {"q": 1}'),
    ("indented", '  Thought: t\n  Action: search\n  Action Input: {"q": 1}'),
    ("CRLF", 'Thought: t\r\nAction: search\r\nAction Input: {"q": 1}\r\n'),
    ("full-width colon", 'Thought： t\nAction：search\nAction Input：{"q": 1}'),
    ("no space after colon", 'Thought:t\nAction:search\nAction Input:{"q": 1}'),
    ("blank lines between", 'Thought: t\n\nAction: search\n\nAction Input: {"q": 1}\n\n'),
]


@pytest.mark.parametrize("text", [c[1] for c in MARKER_CASES], ids=[c[0] for c in MARKER_CASES])
def test_marker_variants(text: str) -> None:
    result = turn(text)
    assert result.call is not None, result.format_error
    assert (result.call.name, result.call.arguments, result.call.raw_arguments) == (
        "search",
        {"q": 1},
        '{"q": 1}',
    )
    assert result.thought == "t"


def test_bold_final_answer_keeps_the_answers_own_emphasis() -> None:
    assert answer_of("**Final Answer:** **42** is it") == "**42** is it"
    assert answer_of("Final Answer: *yes*, really") == "*yes*, really"


def test_chinese_model_output_with_full_width_colons() -> None:
    result = turn('Thought：需要查天气\nAction：查询天气\nAction Input：{"城市": "北京"}')
    assert result.thought == "需要查天气"
    assert result.call is not None
    assert (result.call.name, result.call.arguments) == ("查询天气", {"城市": "北京"})


def test_thought_collects_text_before_the_action() -> None:
    result = turn('Let me see.\nThought: first line\nsecond line\nAction: search\nAction Input: {"q": 1}')
    assert result.thought == "Let me see.\nfirst line\nsecond line"


def test_crlf_final_answer_is_normalised_to_lf() -> None:
    assert answer_of("Thought: t\r\nFinal Answer: one\r\ntwo\r\n") == "one\ntwo"


# --- markers that are not markers ------------------------------------------------------------------


def test_marker_words_inside_prose_are_not_markers() -> None:
    text = "To call a tool, write Action: name and then Action Input: {...} on the next line."
    assert answer_of(text) == text


def test_fenced_example_in_an_answer_stays_an_answer() -> None:
    text = (
        'The protocol looks like this:\n\n```\nThought: why\nAction: search\nAction Input: {"q": 1}\n```\n\n'
        "Write it exactly so."
    )
    assert answer_of(text) == text


def test_fenced_example_inside_a_final_answer_is_kept_whole() -> None:
    text = "Thought: done\nFinal Answer: Use:\n```\nAction: x\nObservation: y\n```\nThat is all."
    assert answer_of(text) == "Use:\n```\nAction: x\nObservation: y\n```\nThat is all."


def test_a_fence_around_the_action_input_line_after_an_action_still_counts() -> None:
    call = call_of('Action: search\n```\nAction Input: {"q": 1}\n```')
    assert (call.name, call.arguments) == ("search", {"q": 1})


def test_words_that_only_start_like_markers() -> None:
    text = "Actions: none needed.\nThoughtful answer: 42\nObservations: none"
    assert answer_of(text) == text


# --- reasoning blocks ----------------------------------------------------------------------------


def test_think_block_goes_to_thought_and_its_markers_do_not_count() -> None:
    text = (
        '<think>\nMaybe Action: delete_all\nAction Input: {"really": true}\nNo, just search.\n</think>\n'
        'Thought: searching\nAction: search\nAction Input: {"q": "x"}'
    )
    result = turn(text)
    assert result.call is not None
    assert (result.call.name, result.call.arguments) == ("search", {"q": "x"})
    assert (
        result.thought
        == 'Maybe Action: delete_all\nAction Input: {"really": true}\nNo, just search.\n\nsearching'
    )


def test_think_then_plain_text_is_an_answer_with_the_reasoning_as_thought() -> None:
    result = turn("<think>2 + 2 is 4</think>\n\nThe answer is 4.")
    assert result.final_answer == "The answer is 4."
    assert result.thought == "2 + 2 is 4"


def test_think_then_final_answer_on_the_same_line() -> None:
    result = turn("<think>easy</think>Final Answer: 4")
    assert (result.thought, result.final_answer) == ("easy", "4")


def test_reasoning_opened_by_the_chat_template_ends_at_a_lone_closing_tag() -> None:
    text = (
        'The user wants x.\nAction: not_this\n</think>\n\nThought: ok\nAction: search\nAction Input: {"q": 1}'
    )
    result = turn(text)
    assert result.call is not None
    assert result.call.name == "search"
    assert result.thought == "The user wants x.\nAction: not_this\n\n\nok"  # the tag's line, a blank line


def test_unclosed_think_is_reported() -> None:
    message = error_of("<think>I wonder whether", truncated=True)
    assert "no Action and no Final Answer" in message
    assert "token limit" in message


def test_think_tags_inside_a_json_string_are_data() -> None:
    call = call_of('Action: write\nAction Input: {"text": "<think>a</think>", "end": "</think>"}')
    assert call.arguments == {"text": "<think>a</think>", "end": "</think>"}


# --- hallucinated rounds ---------------------------------------------------------------------------


def test_fabricated_observation_and_final_answer_after_an_action_are_cut() -> None:
    text = (
        'Thought: need the weather\nAction: weather\nAction Input: {"city": "Paris"}\n'
        "Observation: 31 degrees and sunny\nThought: I know it now\nFinal Answer: It is 31 degrees."
    )
    result = turn(text)
    assert result.call is not None
    assert (result.call.name, result.call.arguments) == ("weather", {"city": "Paris"})
    assert result.thought == "need the weather"


def test_final_answer_after_the_json_without_observation_loses_to_the_action() -> None:
    call = call_of('Action: weather\nAction Input: {"city": "Paris"}\nFinal Answer: sunny')
    assert call.arguments == {"city": "Paris"}


def test_observation_and_final_answer_inside_json_strings_are_data() -> None:
    args = {"note": "Observation: fine\nFinal Answer: no", "x": "Observation："}
    text = f"Action: save\nAction Input: {json.dumps(args, ensure_ascii=False)}\nObservation: fake"
    call = call_of(text)
    assert call.arguments == args
    assert call.raw_arguments == json.dumps(args, ensure_ascii=False)


def test_multi_line_json_is_not_cut_by_later_observation_line() -> None:
    text = 'Action: save\nAction Input: {\n  "a": "Observation: x",\n  "b": [1,\n 2]\n}\nObservation: fake'
    call = call_of(text)
    assert call.arguments == {"a": "Observation: x", "b": [1, 2]}
    assert call.raw_arguments == '{\n  "a": "Observation: x",\n  "b": [1,\n 2]\n}'


def test_observation_line_cuts_a_final_answer() -> None:
    text = "Final Answer: first part\nstill the answer\nObservation: invented\nmore invention"
    assert answer_of(text) == "first part\nstill the answer"


def test_full_width_observation_line_cuts_too() -> None:
    assert answer_of("Final Answer: 是的\nObservation：编造的") == "是的"


def test_observation_without_an_action_leaves_a_plain_answer_before_it() -> None:
    assert answer_of("The file has 3 lines.\nObservation: made up") == "The file has 3 lines."


def test_markers_after_a_final_answer_belong_to_the_answer() -> None:
    text = 'Final Answer: call it like this\nAction: search\nAction Input: {"q": 1}'
    assert answer_of(text) == 'call it like this\nAction: search\nAction Input: {"q": 1}'


# --- answers ---------------------------------------------------------------------------------------


def test_final_answer_multi_line_is_kept_and_stripped() -> None:
    result = turn("Thought: I know.\nFinal Answer:\n\n  Line one.\n\n  Line two.  \n\n")
    assert result.final_answer == "Line one.\n\n  Line two."
    assert result.thought == "I know."


def test_plain_text_is_the_answer_and_has_no_thought() -> None:
    text = "\n  Paris is the capital of France.\nIt has 2 million people.  \n"
    result = turn(text)
    assert result.final_answer == text.strip()
    assert result.thought == ""


def test_text_before_final_answer_is_thought() -> None:
    result = turn("Sure.\nFinal Answer: 42")
    assert (result.thought, result.final_answer) == ("Sure.", "42")


def test_a_truncated_final_answer_is_still_an_answer() -> None:
    result = turn("Final Answer: The list is: 1, 2, 3,", truncated=True)
    assert result.final_answer == "The list is: 1, 2, 3,"


def test_render_final_parses_back() -> None:
    result = turn(render_final("all done", "It is 42.\nReally."))
    assert (result.thought, result.final_answer) == ("all done", "It is 42.\nReally.")


def test_render_action_parses_back() -> None:
    args = {"q": 'a}b"c', "nested": {"list": [1, 2.5, None, True]}, "obs": "Observation: x"}
    result = turn(render_action("look it up", "检索", args))
    assert result.thought == "look it up"
    assert result.call is not None
    assert (result.call.name, result.call.arguments) == ("检索", args)
    assert result.call.raw_arguments == json.dumps(args, ensure_ascii=False)


# --- format errors ---------------------------------------------------------------------------------


def test_thought_alone_is_an_error() -> None:
    message = error_of("Thought: I should look this up.")
    assert "a Thought must be followed by an Action or a Final Answer" in message
    assert "Thought: I should look this up." in message


def test_a_reply_that_stops_after_its_action_line_is_told_to_add_the_input_with_the_argument_names() -> None:
    spec = ToolSpec(
        name="web_search",
        description="",
        input_schema={"type": "object", "properties": {"q": {}, "n": {}}, "required": ["q"]},
    )
    result = parse("Thought: t\nAction: web_search", call_id="c", tools=[spec])
    assert result.call is None and result.final_answer is None and result.format_error is not None
    assert "ended right after `Action: web_search`" in result.format_error
    assert "nothing was run" in result.format_error
    assert "`Action Input:` that holds web_search's arguments as one JSON object (its argument: q)" in (
        result.format_error
    )


@pytest.mark.parametrize(
    ("schema", "phrase"),
    [
        ({"type": "object", "properties": {"a": {}, "b": {}}, "required": ["b", "a"]}, "its arguments: a, b"),
        ({"type": "object", "properties": {"a": {}}}, "every argument is optional (a); {} leaves them"),
        ({"type": "object"}, "it takes none: write {}"),
    ],
)
def test_the_missing_input_message_names_what_the_tool_takes(schema: dict[str, Any], phrase: str) -> None:
    spec = ToolSpec(name="t", description="", input_schema=schema)
    message = parse("Action: t", call_id="c", tools=[spec]).format_error
    assert message is not None and phrase in message


def test_an_action_line_holding_a_listed_name_and_its_arguments_calls_that_tool() -> None:
    # Qwen2.5-Coder-1.5B: the arguments on the Action line too, then (told the input was missing) the input
    outline = ToolSpec(name="outline", description="", input_schema={"type": "object"})
    text = 'Thought: t\nAction: outline, module_path="shop/storage.py\nAction Input: {"module_path": "a.py"}'
    call = parse(text, call_id="c", tools=[outline]).call
    assert call is not None and (call.name, call.arguments) == ("outline", {"module_path": "a.py"})
    longer = parse('Action: outline_all\nAction Input: {}', call_id="c", tools=[outline]).call
    assert longer is not None and longer.name == "outline_all"  # another name: the registry refuses it


@pytest.mark.parametrize(
    "action",
    ['Action: outline(module_path="shop/__init__.py")', 'Action: outline, module_path="shop/__init__.py"'],
    ids=["call syntax", "after a comma"],
)
def test_an_action_line_holding_the_whole_call_in_python_syntax_is_that_call(action: str) -> None:
    # Qwen2.5-Coder-1.5B's first reply on several of the suite's tasks, which the old parser read as
    # `Action: outline` with its input missing
    outline = ToolSpec(name="outline", description="", input_schema={"type": "object"})
    result = parse(f"Thought: I need the version.\n{action}", call_id="c", tools=[outline])
    assert result.call is not None and result.format_error is None
    assert (result.call.name, result.call.arguments) == ("outline", {"module_path": "shop/__init__.py"})
    assert result.call.raw_arguments == '{"module_path": "shop/__init__.py"}'
    cut = parse(f"Thought: t\n{action}", call_id="c", tools=[outline], truncated=True)
    assert cut.call is None  # a reply cut by the token limit is never taken as a call
    other = parse('Action: outline(path=open("x").read())', call_id="c", tools=[outline])
    assert other.call is None and other.format_error is not None


def test_a_missing_input_for_an_unlisted_tool_names_no_arguments() -> None:
    message = parse("Action: other", call_id="c").format_error
    assert message is not None and message.endswith("holds other's arguments as one JSON object.")


def test_action_followed_by_final_answer_is_an_error_naming_the_tool() -> None:
    message = error_of("Action: web_search\nFinal Answer: 4")
    assert "Action `web_search` is not followed by an Action Input line" in message


def test_action_cut_by_observation_before_its_input() -> None:
    message = error_of("Action: web_search\nObservation: invented")
    assert "`web_search`" in message


def test_action_input_without_action() -> None:
    message = error_of('Thought: t\nAction Input: {"q": 1}')
    assert "Action Input without an Action line before it" in message
    assert 'Action Input: {"q": 1}' in message


@pytest.mark.parametrize(
    "text",
    [
        'Action: None\nAction Input: {"q": 1}',
        "Action: none\nAction Input: {}",
        "Action: `null`\nAction Input: {}",
        "Action: N/A\nAction Input: {}",
        'Action:\nAction Input: {"q": 1}',
        "Action:",
    ],
    ids=["None", "none", "null", "N/A", "empty", "empty at end"],
)
def test_action_naming_no_tool(text: str) -> None:
    message = turn(text).format_error
    assert message is not None and "names no tool" in message


@pytest.mark.parametrize("action", ["Action: None", "Action: none", "Action:", "Action: N/A"])
def test_an_action_that_says_none_followed_by_an_answer_is_that_answer(action: str) -> None:
    assert answer_of(f"Thought: I have the methods.\n{action}\nFinal Answer: add, remove") == "add, remove"


def test_an_action_that_says_none_is_told_how_to_call_no_tool() -> None:
    # Qwen2.5-Coder-1.5B after a tool failed: `Action: none`, three times, until the step budget ended
    reply = "Thought: I need to call the average tool with an empty list of values.\nAction: none"
    message = turn(reply).format_error
    assert message is not None
    assert message.startswith("Format error: `Action: none` names no tool, so nothing was run.")
    assert message.endswith("Thought: why you are done\nFinal Answer: your answer for the user (if a tool "
                            "failed, say what went wrong)")
    assert "Action Input" not in message  # only the form that answers
    assert "Action Input" in error_of('Action:\nAction Input: {"q": 1}')  # no name: the whole format


@pytest.mark.parametrize(
    ("raw", "decoder"),
    [
        ("{'q': 'weather'}", "Expecting property name enclosed in double quotes: line 1 column 2 (char 1)"),
        ('{"flag": True}', "Expecting value: line 1 column 10 (char 9)"),
        ('{"q": "a",}', "Expecting property name enclosed in double quotes: line 1 column 11 (char 10)"),
        ('{"q": "a", "n": [1, 2,]}', "Expecting value: line 1 column 23 (char 22)"),
        ('{"x": NaN}', "NaN is not valid JSON"),
        ('{"x": -Infinity}', "-Infinity is not valid JSON"),
        ('{"q": 1, "q": 2}', "duplicate key 'q'"),
    ],
    ids=[
        "single quotes",
        "Python True",
        "trailing comma",
        "trailing comma in array",
        "NaN",
        "Infinity",
        "duplicate key",
    ],
)
def test_invalid_json_is_reported_not_repaired(raw: str, decoder: str) -> None:
    message = error_of(f"Thought: t\nAction: web_search\nAction Input: {raw}")
    assert "the Action Input for `web_search` is not valid JSON" in message
    assert f"JSON decoder: {decoder}" in message
    assert raw in message


@pytest.mark.parametrize(
    ("raw", "fix"),
    [
        ('{"pattern": r"CODES = \\{.*\\}", "folder": "shop"}', "JSON strings have no r prefix"),
        ('{"pattern": "\\d+ items"}', "a backslash in a JSON string starts an escape"),
        ("{'q': 'weather'}", 'JSON strings and keys are in double quotes: "key": "value"'),
        ('{"q": "weather", "fresh": True}', "JSON writes true, false and null (lowercase)"),
        ('{"q": "weather",}', "JSON allows no comma before } or ]"),
        ('{"values": [count_file_lines("a.py"), 3]}', "a JSON value is a literal"),
    ],
    ids=["raw string", "lone backslash", "single quotes", "Python True", "trailing comma", "a call as value"],
)
def test_a_python_ism_in_the_json_is_named_with_what_to_write_instead(raw: str, fix: str) -> None:
    message = error_of(f"Thought: t\nAction: web_search\nAction Input: {raw}")
    assert "is not valid JSON" in message and f"To fix: {fix}" in message


def test_json_that_is_wrong_otherwise_gets_no_hint() -> None:
    assert "To fix:" not in error_of('Action: web_search\nAction Input: {"q": "weather" "n": 3}')
    assert "To fix:" not in error_of('Action: web_search\nAction Input: {"q": "weather"')  # unclosed


def test_unclosed_object_is_reported() -> None:
    message = error_of('Action: web_search\nAction Input: {"q": "weather", "n": 3')
    assert "the JSON object in the Action Input for `web_search` ends before it is closed" in message
    assert "JSON decoder: Expecting ',' delimiter" in message
    assert '{"q": "weather", "n": 3' in message
    assert "token limit" not in message


def test_json_cut_by_the_token_limit() -> None:
    message = error_of('Action: web_search\nAction Input: {"q": "the wea', truncated=True)
    assert "the JSON object in the Action Input for `web_search` was cut off by the token limit" in message
    assert "Unterminated string" in message


def test_json_cut_by_the_bare_observation_stop_sequence() -> None:
    full = render_action("save it", "save_note", {"text": "Observation: the sky is blue", "n": 1})
    cut = server_cut(full)
    assert cut.endswith('{"text": "')
    message = error_of(cut)
    assert "`save_note`" in message
    assert "ends before it is closed" in message
    assert "Observation:" in message  # the hint tells the model why


@pytest.mark.parametrize(
    ("raw", "kind"),
    [
        ('[{"q": 1}]', "an array"),
        ('"{\\"q\\": 1}"', "a string"),
        ("42", "a number"),
        ("-1.5e3", "a number"),
        ("true", "a boolean"),
        ("null", "null"),
    ],
)
def test_json_that_is_not_an_object(raw: str, kind: str) -> None:
    message = error_of(f"Action: web_search\nAction Input: {raw}")
    assert f"the Action Input for `web_search` must be a JSON object, not {kind}" in message
    assert f"Your text: {raw}" in message


@pytest.mark.parametrize(
    "rest", ["", "   ", "```json\n```", "**"], ids=["nothing", "spaces", "empty fence", "bold"]
)
def test_empty_action_input(rest: str) -> None:
    message = error_of(f"Action: web_search\nAction Input: {rest}")
    assert "the Action Input for `web_search` is empty" in message


def test_action_input_with_no_json_at_all() -> None:
    message = error_of("Action: web_search\nAction Input: weather in Paris")
    assert "the Action Input for `web_search` is not valid JSON" in message
    assert "weather in Paris" in message


def test_empty_final_answer_and_empty_reply() -> None:
    assert "the Final Answer is empty" in error_of("Thought: done\nFinal Answer:  \n")
    assert "the reply is empty" in error_of("  \n ")


def test_deeply_nested_json_is_an_error_not_a_crash() -> None:
    message = error_of("Action: f\nAction Input: " + "[" * 100_000)
    assert "the Action Input for `f` is not valid JSON" in message


def test_long_raw_text_is_shortened_in_the_message() -> None:
    raw = "{'q': '" + "x" * 5000 + "'}"
    message = error_of(f"Action: f\nAction Input: {raw}")
    assert "more characters]" in message
    assert len(message) < 2000


def test_error_keeps_the_thought() -> None:
    result = turn("Thought: need data\nAction: f\nAction Input: {bad}")
    assert result.thought == "need data"


# --- long completions --------------------------------------------------------------------------------


def test_200kb_of_thought_lines_then_an_action() -> None:
    thought = "\n".join(f"step {i}: consider option {i} carefully" for i in range(6000))
    assert len(thought) > 200_000
    result = turn(f'Thought: {thought}\nAction: pick\nAction Input: {{"i": 5999}}')
    assert result.call is not None
    assert result.call.arguments == {"i": 5999}
    assert result.thought == thought


def test_200kb_json_argument() -> None:
    body = "Observation: {not a marker}\\n" * 8000
    call = call_of(f'Action: write\nAction Input: {{"text": "{body}"}}')
    assert call.arguments == {"text": body.replace("\\n", "\n")}


@pytest.mark.parametrize("filler", [" ", "*", "Action", "{", "Action  Input 1", "`"])
def test_200kb_single_line_without_protocol(filler: str) -> None:
    text = "x" + filler * (200_000 // len(filler))
    assert answer_of(text) == text.strip()


def test_200kb_of_unclosed_json() -> None:
    message = error_of('Action: f\nAction Input: {"a": [' + "1, " * 70_000, truncated=True)
    assert "cut off by the token limit" in message


# --- the prompt and the message list ---------------------------------------------------------------

TOOLS = (
    ToolSpec(
        name="web_search",
        description="Search the web.\nReturns the top hits.",
        input_schema={"type": "object", "properties": {"query": {"type": "string"}}, "required": ["query"]},
    ),
    ToolSpec(
        name="天气",
        description="查询城市天气",
        input_schema={"type": "object", "properties": {"城市": {"type": "string", "description": "城市名"}}},
    ),
)


def test_system_prompt_lists_tools_with_compact_schemas() -> None:
    prompt = build_system_prompt("You are a careful assistant.\n", TOOLS)
    assert prompt.startswith("You are a careful assistant.\n\n")
    for tool in TOOLS:
        assert tool.name in prompt
        assert tool.description in prompt
        assert json.dumps(tool.input_schema, ensure_ascii=False, sort_keys=False) in prompt
    assert "城市名" in prompt  # not \u escaped
    for marker in ("Thought:", "Action:", "Action Input:", "Observation:", "Final Answer:"):
        assert marker in prompt


def test_system_prompt_is_deterministic() -> None:
    first = build_system_prompt("base", TOOLS)
    again = build_system_prompt(
        "base", tuple(ToolSpec(t.name, t.description, dict(t.input_schema)) for t in TOOLS)
    )
    assert first.encode() == again.encode()


def test_system_prompt_without_tools_is_the_base() -> None:
    assert build_system_prompt("Just answer.", []) == "Just answer."


def test_system_prompt_with_empty_base() -> None:
    assert build_system_prompt("", TOOLS).startswith("## Tools")


def test_render_messages_maps_each_role() -> None:
    raw_completion = 'Thought: t\nAction: web_search\nAction Input: {"query":  "x"}'
    call = ToolCall(id="c1", name="web_search", arguments={"query": "x"}, raw_arguments='{"query": "x"}')
    messages = [
        Message(Role.SYSTEM, "Be brief."),
        Message(Role.USER, "  What is x?  "),
        Message(Role.ASSISTANT, raw_completion, tool_calls=(call,)),
        Message(Role.TOOL, "x is 1", tool_call_id="c1", name="web_search"),
        Message(Role.ASSISTANT, "Final Answer: 1"),
    ]
    assert render_messages(messages, TOOLS) == [
        {"role": "system", "content": build_system_prompt("Be brief.", TOOLS)},
        {"role": "user", "content": "  What is x?  "},
        {"role": "assistant", "content": raw_completion},
        {"role": "user", "content": "Observation: x is 1"},
        {"role": "assistant", "content": "Final Answer: 1"},
    ]


def test_parsed_call_rendered_back_is_the_completion_verbatim() -> None:
    completion = 'Thought:  odd   spacing\r\nAction: `web_search`\nAction Input: ```json\n{"query":"x"}\n```'
    assert call_of(completion).arguments == {"query": "x"}
    rendered = render_messages([Message(Role.ASSISTANT, completion)], TOOLS)
    assert rendered == [{"role": "assistant", "content": completion}]


def test_a_closing_think_tag_inside_an_invented_observation_is_not_reasoning() -> None:
    """Found by the property test: `</think>` after `Observation:` must not swallow the action before it."""
    turn = parse('Thought: \nAction: A\nAction Input: {}\nObservation: </think>', call_id="c1")
    assert turn.call is not None and turn.call.name == "A" and turn.call.arguments == {}


def test_a_raw_newline_inside_an_action_input_string_is_a_newline_in_the_argument() -> None:
    call = call_of('Thought: t\nAction: write_file\nAction Input: {"text": "line one\nline two"}')
    assert call.name == "write_file" and call.arguments == {"text": "line one\nline two"}
