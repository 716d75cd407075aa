"""What json mode's grammar learns from the loop (`llm.narrowing`): arguments left out of a tool's
schema for one turn, and the pattern an answer after the final check must match."""

from __future__ import annotations

import re

import jsonschema
from mini_agent.core.contracts import Message, Role, ToolCall, ToolSpec
from mini_agent.llm import narrowing

LIST = ToolSpec(
    "list_python_files",
    "List.",
    {
        "type": "object",
        "properties": {"directory": {"type": "string", "default": "."}, "path": {"type": "string"}},
        "required": ["path"],
    },
)


def test_arguments_left_out_vanish_from_that_tool_only_and_required_ones_stay() -> None:
    other = ToolSpec("other", "Other.", {"type": "object", "properties": {"directory": {"type": "string"}}})
    narrowed = narrowing.without_arguments([LIST, other], {"list_python_files": ("directory", "path")})
    assert set(narrowed[0].input_schema["properties"]) == {"path"}
    assert narrowed[0].input_schema["additionalProperties"] is False
    assert narrowed[1] == other and LIST.input_schema["properties"]["directory"]  # nothing changed in place


def test_nothing_to_leave_out_offers_the_tools_as_they_are() -> None:
    assert narrowing.without_arguments([LIST], {}) == [LIST]


def test_a_spent_default_stays_out_when_another_spent_value_cannot_be_spelled_by_a_pattern() -> None:
    listing = ToolSpec(
        "list_python_files",
        "List.",
        {"type": "object", "properties": {"directory": {"type": "string", "default": "."}}},
    )
    calls = (
        ToolCall("a", "list_python_files", {}),
        ToolCall("b", "list_python_files", {"directory": "ws}'x"}),
    )
    messages = [
        Message(Role.USER, "list them"),
        Message(Role.ASSISTANT, "", tool_calls=calls),
        *(Message(Role.TOOL, "out", tool_call_id=call.id) for call in calls),
    ]
    (offered,) = narrowing.unspent([listing], messages)
    directory = offered.input_schema["properties"]["directory"]
    pattern = re.compile(directory["pattern"])
    assert offered.input_schema["required"] == ["directory"]  # leaving it out would be the spent default
    assert not pattern.fullmatch(".") and pattern.fullmatch("src") and pattern.fullmatch("ws}'x")


COUNT = ToolSpec(
    "count_file_lines",
    "Count.",
    {
        "type": "object",
        "properties": {"file_path": {"type": "string"}, "ignore_empty": {"type": "boolean", "default": True}},
        "required": ["file_path"],
        "additionalProperties": False,
    },
)


def answered(*calls: ToolCall) -> list[Message]:
    return [
        Message(Role.USER, "count them"),
        Message(Role.ASSISTANT, "", tool_calls=calls),
        *(Message(Role.TOOL, "12", tool_call_id=call.id) for call in calls),
    ]


def test_a_spent_key_is_writable_again_only_beside_another_argument_away_from_its_default() -> None:
    messages = answered(ToolCall("a", "count_file_lines", {"file_path": "metrics.py"}))
    (offered,) = narrowing.unspent([COUNT], messages)
    valid = jsonschema.Draft202012Validator(offered.input_schema)
    assert not valid.is_valid({"file_path": "metrics.py"})  # the call the model has the result of
    assert not valid.is_valid({"file_path": "metrics.py", "ignore_empty": True})  # the same, spelled out
    assert valid.is_valid({"file_path": "metrics.py", "ignore_empty": False})  # another call
    assert valid.is_valid({"file_path": "schema.py"})
    assert valid.is_valid({"file_path": "m", "ignore_empty": True})
    assert not valid.is_valid({"file_path": "schema.py", "extra": 1})


def test_a_call_that_set_another_argument_leaves_the_key_free_and_a_pinned_argument_goes_first() -> None:
    messages = answered(ToolCall("a", "count_file_lines", {"file_path": "metrics.py", "ignore_empty": False}))
    assert narrowing.unspent([COUNT], messages) == [COUNT]
    # with `ignore_empty` pinned (left out), the call with it set is not one the model can write again
    pinned = narrowing.Narrowing(leave_out={"count_file_lines": ("ignore_empty",)})
    (offered,) = narrowing.offered([COUNT], messages, pinned, prune_repeats=True)
    assert offered.input_schema["properties"] == {"file_path": {"type": "string"}}
    # … while the plain call, once spent, is left out of the pinned tool's only argument
    messages = answered(ToolCall("b", "count_file_lines", {"file_path": "metrics.py"}))
    (offered,) = narrowing.offered([COUNT], messages, pinned, prune_repeats=True)
    valid = jsonschema.Draft202012Validator(offered.input_schema)
    assert not valid.is_valid({"file_path": "metrics.py"}) and valid.is_valid({"file_path": "tools.py"})


def test_a_tool_whose_only_argument_is_pinned_goes_once_its_default_call_is_spent() -> None:
    listing = ToolSpec("ls", "List.", {"type": "object", "properties": {"directory": {"type": "string"}}})
    pinned = narrowing.Narrowing(leave_out={"ls": ("directory",)})
    made_up = answered(ToolCall("a", "ls", {"directory": "your-workspace"}))
    assert [t.name for t in narrowing.offered([listing], made_up, pinned, prune_repeats=True)] == ["ls"]
    spent = answered(ToolCall("a", "ls", {}))
    assert narrowing.offered([listing], spent, pinned, prune_repeats=True) == []


def test_a_grounded_argument_is_an_enum_and_its_spent_values_leave_it() -> None:
    held = narrowing.Narrowing(only={"count_file_lines": {"file_path": ("metrics.py", "schema.py")}})
    (offered,) = narrowing.offered([COUNT], [Message(Role.USER, "count")], held, prune_repeats=True)
    held_to = {"type": "string", "enum": ["metrics.py", "schema.py"]}
    assert offered.input_schema["properties"]["file_path"] == held_to
    messages = answered(ToolCall("a", "count_file_lines", {"file_path": "metrics.py"}))
    (offered,) = narrowing.offered([COUNT], messages, held, prune_repeats=True)
    valid = jsonschema.Draft202012Validator(offered.input_schema)
    assert valid.is_valid({"file_path": "schema.py"}) and not valid.is_valid({"file_path": "metrics.py"})
    assert not valid.is_valid({"file_path": "made-up.py"})
    assert valid.is_valid({"file_path": "metrics.py", "ignore_empty": False})  # another call
    both = answered(*(ToolCall(n, "count_file_lines", {"file_path": f}) for n, f in (("a", "metrics.py"),
                                                                                      ("b", "schema.py"))))
    (offered,) = narrowing.offered([COUNT], both, held, prune_repeats=True)  # only the other flag is left
    valid = jsonschema.Draft202012Validator(offered.input_schema)
    assert not valid.is_valid({"file_path": "schema.py"}) and not valid.is_valid({"file_path": "x.py"})


def test_a_grounded_argument_with_no_value_left_is_left_out_when_optional_and_free_when_required() -> None:
    listing = ToolSpec("ls", "List.", {"type": "object", "properties": {"directory": {"type": "string"}}})
    exhausted = narrowing.Narrowing(only={"ls": {"directory": ()}, "count_file_lines": {"file_path": ()}})
    asked = [Message(Role.USER, "list")]
    ls, count = narrowing.offered([listing, COUNT], asked, exhausted, prune_repeats=True)
    assert ls.input_schema["properties"] == {} and ls.input_schema["additionalProperties"] is False
    assert count.input_schema == COUNT.input_schema
