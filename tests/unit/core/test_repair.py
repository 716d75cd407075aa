"""Repair hints (`core.repair`): a failed call that set an optional argument away from its declared
default is told the argument is optional; any other failed call gets no hint."""

from __future__ import annotations

from mini_agent.core import repair
from mini_agent.core.contracts import ToolCall, ToolSpec

LIST = ToolSpec(
    "list_python_files",
    "List the Python files of a folder.",
    {
        "type": "object",
        "properties": {
            "directory": {"type": "string", "default": "."},
            "pattern": {"type": "string", "default": "*.py"},
            "limit": {"type": "integer"},
        },
        "required": [],
    },
)
COUNT = ToolSpec(
    "count_file_lines",
    "Count a file's lines.",
    {"type": "object", "properties": {"file_path": {"type": "string"}}, "required": ["file_path"]},
)


def call(name: str, **arguments: object) -> ToolCall:
    return ToolCall("c1", name, dict(arguments))


def test_a_made_up_value_for_an_optional_argument_is_hinted_with_its_default() -> None:
    text = repair.hint(call("list_python_files", directory="./workspace"), LIST)
    assert text == 'Note: `directory` (default ".") is optional; leaving it out uses its default.'


def test_several_such_arguments_are_named_together() -> None:
    text = repair.hint(call("list_python_files", directory="src", pattern="*.txt"), LIST)
    assert '`directory` (default ".")' in text and '`pattern` (default "*.py")' in text and " are " in text


def test_defaults_required_arguments_and_unknown_tools_get_no_hint() -> None:
    assert repair.hint(call("list_python_files", directory="."), LIST) == ""
    assert repair.hint(call("list_python_files", limit=3), LIST) == ""  # optional, but no default declared
    assert repair.hint(call("count_file_lines", file_path="nope.py"), COUNT) == ""
    assert repair.hint(call("gone", directory="x"), None) == ""
