"""Repair hints (`core.repair`): a failed call that set an optional argument away from its declared
default is told the argument is optional; any other failed call gets no hint."""

from __future__ import annotations

from mini_agent.core import repair
from mini_agent.core.contracts import Observation, ToolCall, ToolSpec
from mini_agent.core.session import StepRecord

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


def test_a_value_the_users_task_names_is_no_invention_and_gets_no_hint_nor_a_pin() -> None:
    task = "Which Python files are in the folder 'src'?"
    assert repair.hint(call("list_python_files", directory="src"), LIST, task) == ""
    assert repair.hint(call("list_python_files", directory="sr"), LIST, task) != ""  # not a whole word
    assert repair.hint(call("list_python_files", directory="./src"), LIST, task) != ""  # not what was said
    spec_of = {"list_python_files": LIST}.get
    twice = [record(n, numbered(n, "list_python_files", directory="src"), failed=True) for n in range(2)]
    assert repair.pinned(twice, spec_of, task) == {}
    assert repair.pinned(twice, spec_of, "List the Python files.") == {"list_python_files": ("directory",)}


def record(index: int, *calls: ToolCall, failed: bool) -> StepRecord:
    step = StepRecord(index=index, tool_calls=list(calls))
    step.observations = [Observation(c.id, c.name, "no such folder", is_error=failed) for c in calls]
    return step


def numbered(n: int, name: str, **arguments: object) -> ToolCall:
    return ToolCall(f"c{n}", name, dict(arguments))


def test_an_optional_argument_that_failed_twice_in_a_row_is_pinned_to_its_default() -> None:
    spec_of = {"list_python_files": LIST, "count_file_lines": COUNT}.get
    first = record(0, numbered(1, "list_python_files", directory="./a"), failed=True)
    second = record(1, numbered(2, "list_python_files", directory="./b", pattern="*.txt"), failed=True)
    assert repair.pinned([first], spec_of) == {}
    assert repair.pinned([first, second], spec_of) == {"list_python_files": ("directory",)}
    fixed = record(2, numbered(3, "list_python_files"), failed=False)
    assert repair.pinned([first, second, fixed], spec_of) == {}  # the last call worked
    required = [
        record(n, numbered(n, "count_file_lines", file_path=f"{n}.py"), failed=True) for n in range(2)
    ]
    assert repair.pinned(required, spec_of) == {}  # a required argument is never pinned


def test_a_tool_that_failed_twice_since_its_result_came_rests_for_one_request() -> None:
    worked = record(0, numbered(1, "list_python_files"), failed=False)
    wrong = [record(n, numbered(n, "list_python_files", directory=f"./{n}"), failed=True) for n in (2, 3)]
    assert repair.resting([worked, wrong[0]]) == ()  # one failure: it may still be a repair
    assert repair.resting([worked, *wrong]) == ("list_python_files",)
    assert repair.resting(wrong) == ()  # never worked: the model has no result of it to go on with
    again = record(4, numbered(4, "list_python_files"), failed=False)
    assert repair.resting([worked, *wrong, again]) == ()  # its last call worked


def outcome(index: int, call: ToolCall, output: str, *, failed: bool) -> StepRecord:
    step = StepRecord(index=index, tool_calls=[call])
    step.observations = [Observation(call.id, call.name, output, is_error=failed)]
    return step


def test_a_value_the_tool_said_does_not_exist_holds_that_argument_to_the_values_the_turn_has_seen() -> None:
    listed = outcome(0, numbered(1, "list_python_files"), '["metrics.py","schema.py"]', failed=False)
    made_up = numbered(2, "count_file_lines", file_path="your-workspace.py")
    said = "count_file_lines raised FileNotFoundError: no file named 'your-workspace.py'"
    missing = outcome(1, made_up, said, failed=True)
    task = "How many lines does tools.py have, and which files are in 'src'?"
    assert repair.grounded([listed, missing], task) == {
        "count_file_lines": {"file_path": ("metrics.py", "schema.py", "src", "tools.py")}
    }
    assert repair.grounded([listed], task) == {}  # nothing made up yet


def test_a_failure_that_does_not_name_the_value_or_a_value_the_turn_holds_grounds_nothing() -> None:
    listed = outcome(0, numbered(1, "list_python_files"), '["metrics.py","schema.py"]', failed=False)
    unnamed = outcome(1, numbered(2, "count_file_lines", file_path="x.py"), "permission denied", failed=True)
    assert repair.grounded([listed, unnamed]) == {}
    held = numbered(3, "count_file_lines", file_path="schema.py")  # seen in the listing: no invention
    failed = outcome(2, held, "count_file_lines raised OSError: cannot read 'schema.py'", failed=True)
    assert repair.grounded([listed, failed]) == {}
    nothing_seen = outcome(0, numbered(4, "count_file_lines", file_path="a.py"), "no file named 'a.py'",
                           failed=True)
    assert repair.grounded([nothing_seen], "count the lines") == {}  # no value to offer instead


def test_a_value_an_argument_already_failed_with_is_not_offered_to_it_again() -> None:
    listed = outcome(0, numbered(1, "list_python_files"), '["metrics.py","schema.py"]', failed=False)
    made_up = outcome(1, numbered(2, "list_python_files", directory="src-x"), "no directory named 'src-x'",
                      failed=True)
    wrong = outcome(2, numbered(3, "list_python_files", directory="schema.py"),
                    "no directory named 'schema.py'", failed=True)
    assert repair.grounded([listed, made_up, wrong]) == {"list_python_files": {"directory": ("metrics.py",)}}
    last = outcome(3, numbered(4, "list_python_files", directory="metrics.py"),
                   "no directory named 'metrics.py'", failed=True)
    # nothing left to offer: an empty choice, which the grammar reads as "leave it out" when optional
    assert repair.grounded([listed, made_up, wrong, last]) == {"list_python_files": {"directory": ()}}


def test_a_result_nested_past_the_decoders_depth_holds_no_value_and_breaks_nothing() -> None:
    deep = outcome(0, numbered(1, "list_python_files"), "[" * 100_000 + "]" * 100_000, failed=False)
    made_up = outcome(1, numbered(2, "count_file_lines", file_path="x.py"), "no file named 'x.py'",
                      failed=True)
    held = repair.grounded([deep, made_up], "count a.py and b.py")
    assert held == {"count_file_lines": {"file_path": ("a.py", "b.py")}}
