"""The change check: an answer that says something was changed, or how to change it, in a turn where
nothing was.

A small model asked for an edit often looks at the file and then answers as if it had made the edit
("The VAT rate has been changed to 0.25"), or tells the user which tool to call with which arguments
("you can use `replace_in_file` with …"), with no call to a tool that changes anything. Before such an
answer is taken it is held back, as the final check holds one back (the model is not shown it again),
and the model is told that no tool that changes anything has run in this turn, which listed tools
can, and the task again: it makes the change, or answers again. Once a turn, and only with a step of
the budget left; the turn after it may call tools even when it is the budget's last (`lastStep` does
not hold it to an answer).

"Says something was changed" is read off the words, in English: "has been renamed", "I updated",
"is now 0.25"; "how to change it", off the name of a tool that changes things, as a word of the answer.
"A tool that changes anything" is one that needs approval or is declared not read-only or destructive
(`loops.writes`). A turn with a successful call to such a tool is left alone, and so is a session
whose tools hold none (nothing the model could have used). Pure: no I/O.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence

from mini_agent.core.contracts import ToolSpec
from mini_agent.core.loops import writes
from mini_agent.core.session import StepRecord

CHECK_PREFIX = "change-"
NOTE = (
    "Before you finish: your answer says that something was changed, or how to change it, but no tool that "
    "changes anything has run in this task, so nothing has changed yet. The tools that can, which you call "
    "yourself: {tools}.\n"
    "The task was: {task}\n"
    "If it asks for a change, make it now with one of those tools; if it does not, {finish} without "
    "saying that anything changed."
)
STATUS = (
    "The answer says something was changed, or how to change it, but no tool that changes anything ran: "
    "the model is told so for one more turn (llm.harness.changeCheck)."
)
_DONE = (
    r"changed|renamed|updated|replaced|modified|edited|set|added|appended|inserted|removed|deleted|"
    r"created|written|wrote|moved|fixed|saved|bumped|applied|cleared|wiped|reset"
)
_CLAIM = re.compile(
    rf"\b(?:has|have|had|was|were)\s+(?:now\s+)?(?:been\s+)?(?:successfully\s+)?(?:{_DONE})\b"
    rf"|\bI(?:'ve|\s+have)?\s+(?:now\s+)?(?:successfully\s+)?(?:{_DONE})\b"
    r"|\b(?:is|are)\s+now\b",
    re.IGNORECASE,
)
_WORD = re.compile(r"[A-Za-z0-9_][A-Za-z0-9_.-]*[A-Za-z0-9_]|[A-Za-z0-9_]")


def claims_change(answer: str) -> bool:
    """Whether `answer` says, in so many words, that something was changed."""
    return _CLAIM.search(answer) is not None


def names_a_tool(answer: str, names: Iterable[str]) -> bool:
    """Whether `answer` holds one of `names` as a word of its own (any case)."""
    words = {word.lower() for word in _WORD.findall(answer)}
    return any(name.lower() in words for name in names)


def unbacked(turn: Sequence[StepRecord], answer: str, tools: Iterable[ToolSpec]) -> list[str]:
    """The names of the listed tools that change things, when `answer` claims a change or names one of
    them not called in `turn`, and no call to such a tool succeeded in `turn`; empty otherwise (neither,
    a change made, no such tool)."""
    writers = [spec.name for spec in tools if writes(spec)]
    called: set[str] = set()
    for record in turn:
        failed = {obs.call_id for obs in record.observations if obs.is_error}
        for call in record.tool_calls:
            if call.name in writers and call.id not in failed:
                return []  # a change was made
            called.add(call.name)
    # a tool that was called and failed may be named: the answer reports its failure
    if writers and (claims_change(answer) or names_a_tool(answer, set(writers) - called)):
        return writers
    return []


def note(task: str, writers: Sequence[str], finish: str) -> str:
    return NOTE.format(tools=", ".join(writers), task=task, finish=finish)


def checked(turn: Iterable[StepRecord]) -> bool:
    """Whether this turn already had its change check (it gets one)."""
    return any(obs.call_id.startswith(CHECK_PREFIX) for record in turn for obs in record.observations)
