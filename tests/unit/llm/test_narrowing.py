"""What json mode's grammar learns from the loop (`llm.narrowing`): arguments left out of a tool's
schema for one turn, and the pattern an answer after the final check must match."""

from __future__ import annotations

import re

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
