"""Tool calls written as text (`llm.textcalls`): the forms small models write when their server did not
take `tools`, read only for listed tools and only where a call can start."""

from __future__ import annotations

import pytest
from mini_agent.core.contracts import Message, Role, ToolCall, ToolSpec
from mini_agent.llm import native, textcalls

COUNT = ToolSpec(
    "count_file_lines",
    "Count lines.",
    {"type": "object", "properties": {"file_path": {"type": "string"}}, "required": ["file_path"]},
)
LIST = ToolSpec("list_python_files", "List.", {"type": "object", "properties": {}})
TOOLS = [COUNT, LIST]


def found(text: str) -> list[tuple[str, dict[str, object]]]:
    return [(call.name, call.arguments) for call in textcalls.read(text, TOOLS)]


@pytest.mark.parametrize(
    "text",
    [
        '```json\n{"name": "count_file_lines", "arguments": {"file_path": "schema.py"}}\n```',
        '{"name": "count_file_lines", "arguments": {"file_path": "schema.py"}}',
        '<tool_call>\n{"name": "count_file_lines", "arguments": {"file_path": "schema.py"}}\n</tool_call>',
        'I will count them.\n{"name": "count_file_lines", "parameters": {"file_path": "schema.py"}}',
        '{"type": "function", "function": {"name": "count_file_lines", '
        '"arguments": "{\\"file_path\\": \\"schema.py\\"}"}}',
        '{"tool": "count_file_lines", "file_path": "schema.py"}',
    ],
)
def test_the_common_written_forms_of_one_call_are_read_as_that_call(text: str) -> None:
    assert found(text) == [("count_file_lines", {"file_path": "schema.py"})]


def test_a_list_of_calls_and_several_tagged_calls_are_read_in_order() -> None:
    listed = (
        '[{"name": "list_python_files", "arguments": {}}, '
        '{"name": "count_file_lines", "arguments": {"file_path": "a.py"}}]'
    )
    tagged = (
        '<tool_call>{"name": "list_python_files", "arguments": {}}</tool_call>\n'
        '<tool_call>{"name": "count_file_lines", "arguments": {"file_path": "a.py"}}</tool_call>'
    )
    expected = [("list_python_files", {}), ("count_file_lines", {"file_path": "a.py"})]
    assert found(listed) == expected and found(tagged) == expected


def test_calls_with_doubled_braces_in_tools_tags_are_read_as_the_object_inside() -> None:
    # what Qwen2.5-Coder-1.5B wrote on llama-cpp-python, which ignored `tools`
    text = (
        '<tools>\n{{"name": "list_python_files", "arguments": {"directory": "."}}}\n</tools>\n\n'
        '<tools>\n{{"name": "count_file_lines", "arguments": {"file_path": "schema.py"}}}\n</tools>'
    )
    assert found(text) == [
        ("list_python_files", {"directory": "."}),
        ("count_file_lines", {"file_path": "schema.py"}),
    ]


@pytest.mark.parametrize(
    "text",
    [
        "schema.py has 21 non-empty lines.",
        '{"name": "delete_everything", "arguments": {}}',  # not a listed tool
        # in the middle of prose
        'The call would be {"name": "count_file_lines", "arguments": {"file_path": "x"}} in JSON.',
        '{"name": "count_file_lines", "arguments": "not json"}',
        '{"name": "count_file_lines", "arguments": [1, 2]}',
        '{"name": "count_file_lines", "arguments": {"file_path": ',  # cut off
    ],
)
def test_prose_unknown_tools_and_broken_objects_are_no_call(text: str) -> None:
    assert found(text) == []


def test_the_scan_is_bounded_however_many_objects_the_text_holds() -> None:
    text = '\n{"name": "list_python_files", "arguments": {}}' * 100
    assert len(textcalls.read(text, TOOLS)) == textcalls.MAX_CALLS
    noise = "\n{" * 10_000 + '\n{"name": "list_python_files"}'
    assert textcalls.read(noise, TOOLS) == []  # past MAX_CANDIDATES starts, nothing more is decoded


def test_a_call_followed_by_more_prose_is_an_example_in_an_answer_not_a_call() -> None:
    # what Qwen2.5-Coder-1.5B wrote after it had its results: an answer showing how to call a tool
    example = (
        "To find the average, you can use the `average` function:\n\n"
        '```json\n{"name": "average", "arguments": {"values": [21, 34]}}\n```\n\n'
        "This will calculate the average of the line counts."
    )
    tools = [*TOOLS, ToolSpec("average", "Mean.", {"type": "object"})]
    assert textcalls.read(example, tools, ended=True) == []
    assert [call.name for call in textcalls.read(example, tools)] == ["average"]  # a plan, before results
    said_first = (
        'Let me count them.\n```json\n{"name": "count_file_lines", "arguments": {"file_path": "a.py"}}\n```\n'
    )
    assert [call.name for call in textcalls.read(said_first, TOOLS, ended=True)] == ["count_file_lines"]


def test_no_tools_means_no_calls() -> None:
    assert textcalls.read('{"name": "count_file_lines", "arguments": {}}', []) == []


def test_a_reply_that_is_only_a_call_attempt_says_why_no_call_was_read() -> None:
    tools = [ToolSpec("average", "Mean.", {"type": "object", "properties": {}})]
    unlisted = '```json\n{"name": "Inventory", "arguments": {}}\n```'
    assert textcalls.attempted(unlisted, tools) == (
        "it names 'Inventory', which is not a listed tool (the tools: average)"
    )
    broken = '<tool_call>{"name": "average", "arguments": {"values": [f(1)]}}</tool_call>'
    assert textcalls.attempted(broken, tools) == (
        "its arguments are not one valid JSON object (a JSON value is a literal (a number, a string, "
        "a list), never a call: call that tool by itself first, and put the result it returns into a "
        "later call)"
    )
    assert textcalls.attempted('{"name": "average", "arguments": {}}', tools) is None  # a call: read
    assert textcalls.attempted('It is 5. {"name": "x", "arguments": {}}', tools) is None  # prose first
    assert textcalls.attempted('{"name": "Ada", "age": 3}', tools) is None  # no arguments: data


def test_a_turn_whose_calls_were_written_as_text_goes_back_as_those_calls_alone() -> None:
    """A chat template renders `tool_calls` in its own form: the text they were read from would show
    them twice. A turn whose server returned the calls keeps its words."""
    written = '```json\n{"name": "count", "arguments": {"path": "a.txt"}}\n```'
    call = ToolCall("c1", "count", {"path": "a.txt"}, '{"path": "a.txt"}')
    from_text = native.message(Message(Role.ASSISTANT, written, tool_calls=(call,)))
    from_server = native.message(Message(Role.ASSISTANT, "Counting a.txt.", tool_calls=(call,)))
    assert from_text["content"] == "" and from_text["tool_calls"][0]["function"]["name"] == "count"
    assert from_server["content"] == "Counting a.txt."
