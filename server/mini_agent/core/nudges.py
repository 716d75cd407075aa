"""What the loop adds to a turn, around the model's own words, to help a small model finish: the final
check's second look at an answer, the note that the next turn is the budget's last, and the notes that
take the place of a repeated call. Each is an `llm.harness` switch, measured on and off by
`bench/agents`.

Each function changes the step record and the history the way its note needs (the note is a tool
message the model reads next) and says what the person should see, or returns the notes to observe;
the stepper emits the events. `finish` is the current tool mode's words for giving the final answer.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import replace
from typing import Any

from mini_agent.core import answercheck, changecheck, windup
from mini_agent.core.contracts import Message, Observation, Role, StopReason, ToolSpec
from mini_agent.core.loops import known_calls, known_note, streaks
from mini_agent.core.session import AgentSession, StepRecord

LOOP_NOTE = (
    "You have called {name} with exactly these arguments {count} times in a row and it was not run again: "
    "the result would not change. Use what you already have, try different arguments or another tool, "
    "or {finish}."
)


def another_look(session: AgentSession, record: StepRecord, finish: str) -> str | None:
    """The final check (`finalCheck`, `answercheck`): when this turn's answer does not use a result the
    turn gathered, the answer is held back as a draft (the step's completion), the model is shown the
    task and what it left out, and the turn goes on; once a turn, and only with a step of the budget
    left for the answer. Returns the status message when it held the answer back."""
    turn = session.steps[session.turn_start :]
    if not session.config.llm.harness.final_check or windup.spent(session) or answercheck.checked(turn):
        return None
    task = answercheck.current_task(session.messages)
    wanted = answercheck.wanted_results(turn, record.final_answer or "", task)
    if not wanted:
        return None
    words = {"answer_with": list(answercheck.answer_words(wanted))}
    text = answercheck.note(task, wanted, finish)
    _hold_back(session, record, f"{answercheck.CHECK_PREFIX}{record.index}", text, words)
    names = ", ".join(item.name for item in answercheck.left_out(wanted))
    return (
        f"The answer does not use what {names} returned: the model is shown the task again "
        "for one more turn (llm.harness.finalCheck)."
    )


def change_look(
    session: AgentSession, record: StepRecord, finish: str, tools: Sequence[ToolSpec]
) -> str | None:
    """The change check (`changeCheck`, `changecheck`): when this turn's answer says something was
    changed, or names a tool that would change it, and no tool that changes anything ran, the answer
    is held back as the final check holds one, the model is told so, and the turn goes on; once a
    turn, with a step of the budget left. Returns the status message when it held the answer back."""
    turn = session.steps[session.turn_start :]
    if not session.config.llm.harness.change_check or windup.spent(session) or changecheck.checked(turn):
        return None
    writers = changecheck.unbacked(turn, record.final_answer or "", tools)
    if not writers:
        return None
    text = changecheck.note(answercheck.current_task(session.messages), writers, finish)
    _hold_back(session, record, f"{changecheck.CHECK_PREFIX}{record.index}", text)
    return changecheck.STATUS


def _hold_back(
    session: AgentSession,
    record: StepRecord,
    check_id: str,
    text: str,
    structured: dict[str, Any] | None = None,
) -> None:
    """Hold back `record`'s answer: it stays the step's completion as a draft, but the model is sent an
    empty assistant turn in its place (a small model shown its own draft writes it once more; this
    message was never part of a request, so the history sent so far is untouched and the prefix cache
    holds), and `text` after it, the check's note, kept in the record under `check_id`."""
    record.final_answer = None
    session.messages[-1] = Message(Role.ASSISTANT, "")
    record.observations.append(Observation(check_id, "", text, structured=structured))
    session.messages.append(Message(Role.TOOL, text))


def last_step(session: AgentSession, record: StepRecord, finish: str) -> str | None:
    """`lastStep` (`windup`): a step after which one model turn of the budget is left, its calls all
    answered, ends with the note that the next turn is the last and is for the answer (not after the
    final check's note, which asks for the answer already). Returns the status message when noted."""
    if (
        not session.config.llm.harness.last_step
        or session.finished
        or record.stop_reason is not None
        or not session.steps
        or record is not session.steps[-1]
        or record.open_calls()
        or answercheck.checked([record])
        or changecheck.checked([record])
        or windup.noted(record)
        or not windup.is_last(session)
    ):
        return None
    text = windup.NOTE.format(finish=finish)
    record.observations.append(Observation(f"{windup.NOTE_PREFIX}{record.index}", "", text))
    session.messages.append(Message(Role.TOOL, text))
    return windup.STATUS


def loop_notes(
    session: AgentSession, record: StepRecord, finish: str, spec_of: Callable[[str], ToolSpec | None]
) -> list[Observation]:
    """The notes that replace this step's repeated calls: the same call N times in a row is not run
    (once more ends the session, `record.stop_reason`); a call whose result the model already has in
    this turn gets that result instead of a run (`knownResults`)."""
    earlier = [step.tool_calls for step in session.steps[session.turn_start : -1]]
    threshold = session.config.loop_threshold
    notes: list[Observation] = []
    for call, streak in zip(record.tool_calls, streaks(earlier, record.tool_calls), strict=True):
        if streak > threshold:
            record.stop_reason = StopReason.LOOP_DETECTED
        if streak >= threshold:
            text = LOOP_NOTE.format(name=call.name, count=streak, finish=finish)
            notes.append(Observation(call.id, call.name, text, is_error=True))
    harness = session.config.llm.harness
    if harness.known_results and record.stop_reason is None:
        turn = session.steps[session.turn_start : -1]
        spoken = {note.call_id for note in notes}  # the loop detector's note is the call's one answer
        known = [(call, found) for call, found in known_calls(turn, record, spec_of) if call.id not in spoken]
        # a step answered whole goes back to the model empty, its notes naming the calls
        hide = harness.hide_repeats and not notes and bool(known) and len(known) == len(record.tool_calls)
        if hide:
            _hide_last_turn(session)
        notes += [known_note(call, found, finish, hidden=hide) for call, found in known]
    return notes


def _hide_last_turn(session: AgentSession) -> None:
    """`hideRepeats`: the model's last turn, a repeat answered whole from earlier results, goes back to
    it empty (its calls kept for a server that pairs results with them). The turn was never part of a
    request, so the history sent so far is untouched (the prefix cache holds)."""
    last = session.messages[-1]
    if last.role is Role.ASSISTANT:
        session.messages[-1] = replace(last, content="")
