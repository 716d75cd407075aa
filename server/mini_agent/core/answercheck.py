"""The final check: a final answer that leaves out a result its turn gathered gets one more turn.

A small model that called every tool a multi-part task needs often answers the last part alone (the
count, and not the list of files it fetched first). Before such an answer is taken, the model is shown
the task again and the results its answer does not use; it answers again, or goes on working. The
held-back answer is not shown to it again (the stepper sends an empty assistant turn in its place): a
small model that sees its own half answer repeats it.
At most once per user turn, so a model that meant what it said costs one turn, never a loop.

"Uses a result" is read off the words: a result is used when the answer shares at least one of its
salient tokens (a number, a name, a path) that neither the task nor the call's own arguments already
held. A result with no such token (empty, or nothing but what was asked) counts as used; an error
result counts as used (the model had to work around it, not report it). The check asks only when the
task asks for more than one thing (two questions, or a question joined to another by "and": `parts`)
and the answer uses some result of the turn while it leaves out another: the mark of half an answer.
A one-part task answered from the last result is taken (the earlier calls were the way there), and so
is an answer that uses no result (a judgement the results only informed: "yes", "the tests pass").
Pure: no I/O.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

from mini_agent.core.contracts import Message, Role
from mini_agent.core.session import StepRecord

CHECK_PREFIX = "check-"
NOTE = (
    "Before you finish: the task was: {task}\n"
    "The answer must use what the tools returned: {results}\n"
    "Answer with every part of the task in one answer ({finish})."
)
_RESULT_LIMIT = 300  # characters of each left-out result shown again
_WORDS_LIMIT = 4  # salient words kept of each left-out result
_ANSWER_WORDS = 6  # words an answer after the check must hold, at most
_PLAIN_WORD = re.compile(r"[A-Za-z0-9_./:@+-]{1,64}")


@dataclass(frozen=True, slots=True)
class LeftOut:
    """A tool's result an answer should use: its name, its result, the result's salient words."""

    name: str
    output: str
    words: tuple[str, ...]
    used: bool = False  # the held-back answer holds one of its words
_TOKEN = re.compile(r"[A-Za-z0-9_][A-Za-z0-9_.\-/]*[A-Za-z0-9_]|[0-9]")
_TASK_LIMIT = 2000  # characters of the task shown again
_ASKING = (
    r"which|what|how|where|when|who|whom|whose|why|is|are|was|were|does|do|did|can|could|list|count|"
    r"name|give|tell|show|find|say|report"
)
# a further part: a second question mark, or ", and" / "; " / " and also" before an asking word
_FURTHER = re.compile(rf"\?\s*\S|(?:,\s*and|;|\band also)\s+(?:{_ASKING})\b", re.IGNORECASE)
_COMMON = frozenset(
    {
        "the", "and", "for", "not", "are", "was", "were", "with", "this", "that", "from", "have", "has",
        "none", "null", "true", "false", "file", "files", "line", "lines", "ok", "yes", "no",
    }
)  # fmt: skip


def unused_results(turn: Sequence[StepRecord], answer: str, task: str) -> list[LeftOut]:
    """The tools whose successful results in `turn` the answer does not use, with each one's first
    such result and its salient words in the order they appear, in call order (each tool once); empty
    when the answer uses them all, or none of them, or when the task asks for one thing only."""
    return left_out(wanted_results(turn, answer, task))


def left_out(wanted: Sequence[LeftOut]) -> list[LeftOut]:
    """Of `wanted`, the first result of each tool the held-back answer did not use, in call order."""
    missing: dict[str, LeftOut] = {}
    for item in wanted:
        if not item.used:
            missing.setdefault(item.name, item)
    return list(missing.values())


def wanted_results(turn: Sequence[StepRecord], answer: str, task: str) -> list[LeftOut]:
    """What the answer after the check must use, when `unused_results` is not empty: every result
    with salient words, used by the held-back answer or not, in call order, each distinct result
    once (the model does not see that answer again, so what it got right is asked for too)."""
    results = _weigh(turn, answer, task)
    if all(item.used for item in results) or not any(item.used for item in results):
        return []
    return list({(item.name, item.output): item for item in results}.values())


def _weigh(turn: Sequence[StepRecord], answer: str, task: str) -> list[LeftOut]:
    """Each successful result with salient words in `turn`, in call order, marked used when the
    answer holds one of its salient words; empty when the task asks for one thing only."""
    if parts(task) < 2:
        return []
    said = _tokens(answer)
    asked = _tokens(task)
    results: list[LeftOut] = []
    for record in turn:
        calls = {call.id: call for call in record.tool_calls}
        for obs in record.observations:
            call = calls.get(obs.call_id)
            if call is None or obs.is_error:
                continue
            known = asked | _tokens(call.raw_arguments or str(call.arguments))
            salient = _tokens(obs.output) - known
            if salient:
                words = tuple(dict.fromkeys(w for w in _TOKEN.findall(obs.output) if w.lower() in salient))
                results.append(LeftOut(call.name, obs.output, words[:_WORDS_LIMIT], bool(salient & said)))
    return results


def answer_words(left_out: Sequence[LeftOut]) -> tuple[str, ...]:
    """Words the answer after the check must hold (json mode's grammar makes it): the left-out results'
    salient words that a plain pattern can hold, a few of each."""
    words = [word for item in left_out for word in item.words if _PLAIN_WORD.fullmatch(word)]
    return tuple(dict.fromkeys(words))[:_ANSWER_WORDS]


def parts(task: str) -> int:
    """How many things the task asks for, as far as its shape shows: 1 plus each further part."""
    return 1 + len(_FURTHER.findall(task))


def asked_words(record: StepRecord) -> tuple[str, ...]:
    """The words the final check asked an answer to hold, when `record` is a step it held back."""
    for obs in record.observations:
        if obs.call_id.startswith(CHECK_PREFIX) and obs.structured:
            words = obs.structured.get("answer_with")
            if isinstance(words, list):
                return tuple(str(word) for word in words)
    return ()


def checked(turn: Iterable[StepRecord]) -> bool:
    """Whether this turn already had its final check (it gets one)."""
    return any(obs.call_id.startswith(CHECK_PREFIX) for record in turn for obs in record.observations)


def current_task(messages: Sequence[Message]) -> str:
    """The words of the current user turn: the task, or the latest follow-up."""
    text = next((m.content for m in reversed(messages) if m.role is Role.USER), "")
    return text if len(text) <= _TASK_LIMIT else text[:_TASK_LIMIT] + " …"


def note(task: str, missing: Sequence[LeftOut], finish: str) -> str:
    results = "; ".join(f"{item.name}: {_cut(item.output)}" for item in missing)
    return NOTE.format(task=task, results=results, finish=finish)


def _cut(text: str) -> str:
    text = " ".join(text.split())
    return text if len(text) <= _RESULT_LIMIT else text[:_RESULT_LIMIT] + " …"


def _tokens(text: str) -> set[str]:
    return {token for token in (t.lower() for t in _TOKEN.findall(text)) if token not in _COMMON}
