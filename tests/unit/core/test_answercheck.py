"""The final check (`core.answercheck`): which results an answer leaves out, read off its words."""

from __future__ import annotations

from mini_agent.core import answercheck
from mini_agent.core.contracts import Message, Observation, Role, ToolCall
from mini_agent.core.session import StepRecord

TASK = "Which Python files are in the workspace, and how many non-empty lines does schema.py have?"


def step(index: int, name: str, arguments: str, output: str, *, error: bool = False) -> StepRecord:
    call = ToolCall(f"c{index}", name, {}, arguments)
    return StepRecord(index, tool_calls=[call], observations=[Observation(call.id, name, output, error)])


TURN = [
    step(0, "list_python_files", "{}", '["metrics.py", "schema.py", "tools.py"]'),
    step(1, "count_file_lines", '{"file_path": "schema.py"}', "21"),
]


def test_an_answer_that_gives_the_count_alone_leaves_out_the_file_list() -> None:
    answer = "schema.py has 21 non-empty lines."
    files = '["metrics.py", "schema.py", "tools.py"]'
    left_out = answercheck.unused_results(TURN, answer, TASK)
    assert left_out == [answercheck.LeftOut("list_python_files", files, ("metrics.py", "tools.py"))]
    assert answercheck.answer_words(left_out) == ("metrics.py", "tools.py")
    note = answercheck.note(TASK, left_out, "give your Final Answer")
    assert TASK in note and f"list_python_files: {files}" in note and "every part" in note


def test_after_a_half_answer_every_result_is_wanted_the_used_ones_too_in_call_order() -> None:
    files = '["metrics.py", "schema.py", "tools.py"]'
    wanted = answercheck.wanted_results(TURN, "schema.py has 21 non-empty lines.", TASK)
    assert wanted == [
        answercheck.LeftOut("list_python_files", files, ("metrics.py", "tools.py")),
        answercheck.LeftOut("count_file_lines", "21", ("21",), used=True),
    ]
    assert answercheck.answer_words(wanted) == ("metrics.py", "tools.py", "21")
    full = "The files are metrics.py, schema.py and tools.py; schema.py has 21 non-empty lines."
    assert answercheck.wanted_results(TURN, full, TASK) == []
    assert answercheck.wanted_results(TURN, "Yes, it does.", TASK) == []


def test_an_answer_that_uses_every_result_passes() -> None:
    full = "The files are metrics.py, schema.py and tools.py; schema.py has 21 non-empty lines."
    assert answercheck.unused_results(TURN, full, TASK) == []


def test_errors_and_results_holding_only_what_was_asked_count_as_used() -> None:
    turn = [
        step(0, "count_file_lines", '{"path": "schema.py"}', "unexpected argument 'path'", error=True),
        step(1, "count_file_lines", '{"file_path": "schema.py"}', "schema.py"),
    ]
    assert answercheck.unused_results(turn, "42", TASK) == []


def test_a_turn_is_checked_once_and_the_task_is_the_latest_user_words() -> None:
    record = StepRecord(2, observations=[Observation(f"{answercheck.CHECK_PREFIX}2", "", "note")])
    assert not answercheck.checked(TURN) and answercheck.checked([*TURN, record])
    messages = [Message(Role.SYSTEM, "s"), Message(Role.USER, "first"), Message(Role.USER, "x" * 5000)]
    shown = answercheck.current_task(messages)
    assert shown.startswith("xxx") and len(shown) < 2100


def test_a_one_part_task_or_an_answer_that_uses_no_result_is_taken_as_it_is() -> None:
    one_part = "How many non-empty lines does schema.py have?"
    assert answercheck.unused_results(TURN, "schema.py has 21 non-empty lines.", one_part) == []
    assert answercheck.unused_results(TURN, "Yes, it does.", TASK) == []


def test_the_parts_of_a_task_are_read_off_its_shape() -> None:
    assert answercheck.parts(TASK) == 2
    assert answercheck.parts("How many lines does a.py have? And b.py?") == 2
    assert answercheck.parts("List the files; count the lines of the largest.") == 2
    assert answercheck.parts("How many lines do a.py and b.py have together?") == 1
    assert answercheck.parts("Summarise notes.md.") == 1

