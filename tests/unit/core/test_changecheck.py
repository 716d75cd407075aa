"""The change check (`llm.harness.changeCheck`): an answer that claims a change no tool made gets one
more turn, the model told so; the pure rules first, then through the runtime."""

from __future__ import annotations

import dataclasses

import pytest
from mini_agent.core import changecheck
from mini_agent.core.contracts import Harness, LLMConfig, Message, Observation, Role, StopReason, ToolSpec
from mini_agent.core.events import AgentEvent, StatusChanged
from mini_agent.core.runtime import AgentRuntime
from mini_agent.core.session import AgentConfig, Decision, StepRecord

from ...support.fakes import ECHO, RISKY, Approver, ScriptedModel, Tools, action, answer, call

NO_ARGUMENTS = {"type": "object", "properties": {}}
READ_ONLY = ToolSpec("look", "Look.", NO_ARGUMENTS, hints=(("readOnlyHint", True),))
NOT_READ_ONLY = ToolSpec("put", "Put.", NO_ARGUMENTS, hints=(("readOnlyHint", False),))


@pytest.mark.parametrize(
    "answer_text",
    [
        "The VAT rate in shop/pricing.py has been changed from 0.2 to 0.25.",
        "The `count` method has been renamed to `quantity`.",
        "I updated the file.",
        "I've added the line to todo.md.",
        "Done: the rate is now 0.25.",
        "The version was bumped to 1.5.0.",
    ],
)
def test_an_answer_that_says_something_was_changed_claims_a_change(answer_text: str) -> None:
    assert changecheck.claims_change(answer_text)


@pytest.mark.parametrize(
    "answer_text",
    [
        "The VAT rate is 0.2, and gross_price adds it.",
        "There are 3 open items; the CI one is the flaky job.",
        "I could not change the file: the text was not found.",
        "The settings file sets the rate.",
    ],
)
def test_an_answer_that_reports_what_is_claims_no_change(answer_text: str) -> None:
    assert not changecheck.claims_change(answer_text)


def record_of(*calls_and_outputs: tuple[str, str, bool]) -> StepRecord:
    calls = [call(name, n) for n, (name, _, _) in enumerate(calls_and_outputs)]
    observations = [
        Observation(c.id, c.name, output, is_error=error)
        for c, (_, output, error) in zip(calls, calls_and_outputs, strict=True)
    ]
    return StepRecord(index=0, tool_calls=calls, observations=observations)


CLAIM = "The file has been updated."


def test_a_claim_with_no_call_to_a_tool_that_changes_things_is_unbacked_and_names_those_tools() -> None:
    turn = [record_of(("echo", "x", False), ("look", "y", False))]
    assert changecheck.unbacked(turn, CLAIM, [ECHO, READ_ONLY, RISKY, NOT_READ_ONLY]) == ["wipe", "put"]


def test_an_answer_that_tells_which_tool_to_call_is_unbacked_too() -> None:
    turn = [record_of(("echo", "x", False))]
    told = 'You can use the `replace_in_file` tool: {"path": "a.py", "old": "0.2", "new": "0.25"}'
    writer = ToolSpec("replace_in_file", "Replace.", NO_ARGUMENTS, requires_approval=True)
    assert changecheck.unbacked(turn, told, [ECHO, writer]) == ["replace_in_file"]
    assert changecheck.unbacked(turn, 'Replace_in_file, {"path": "a.py"}', [writer]) == ["replace_in_file"]
    # an answer that reports the failure of a call it made names the tool: that is no advice to call it
    failed = [record_of(("replace_in_file", "replace_in_file raised ValueError", True))]
    assert changecheck.unbacked(failed, "replace_in_file raised ValueError", [writer]) == []
    # the name as part of another word is not the name
    assert changecheck.unbacked(turn, "See replace_in_file_docs.md.", [writer]) == []


def test_a_claim_after_a_successful_change_or_without_a_tool_that_could_make_one_is_left_alone() -> None:
    assert changecheck.unbacked([record_of(("wipe", "done", False))], CLAIM, [RISKY]) == []
    assert changecheck.unbacked([record_of(("echo", "x", False))], CLAIM, [ECHO, READ_ONLY]) == []
    # a change that failed (or was declined) changed nothing: the claim is still unbacked
    assert changecheck.unbacked([record_of(("wipe", "declined", True))], CLAIM, [RISKY]) == ["wipe"]
    assert changecheck.unbacked([], "The rate is 0.2.", [RISKY]) == []


def build(model: ScriptedModel, **config: object) -> tuple[AgentRuntime, list[AgentEvent], Tools]:
    events: list[AgentEvent] = []
    tools = Tools(ECHO, RISKY)
    approver = Approver((Decision.ALLOW_ONCE, None))
    defaults = AgentConfig(**config)  # type: ignore[arg-type]
    runtime = AgentRuntime(model, tools, defaults=defaults, approver=approver, events=events.append)
    return runtime, events, tools


@pytest.mark.asyncio
async def test_a_claimed_change_no_tool_made_is_held_back_and_the_model_told_which_tools_can() -> None:
    model = ScriptedModel(answer("Everything has been wiped."), action(call("wipe", 1)), answer("Wiped."))
    runtime, events, tools = build(model)
    summary = await runtime.run(runtime.start_session("Wipe the cache.").session_id)
    assert summary.stop_reason is StopReason.END_TURN and summary.session.final_answer == "Wiped."
    assert [c.name for c in tools.ran] == ["wipe"]
    draft = summary.session.steps[0]
    assert draft.final_answer is None and "has been wiped" in draft.completion
    note = model.seen[1][-1]
    assert note.role is Role.TOOL and "no tool that changes anything has run" in note.content
    assert "The tools that can, which you call yourself: wipe." in note.content
    assert "The task was: Wipe the cache." in note.content
    # the held-back draft is not sent again
    assert model.seen[1][-2] == Message(Role.ASSISTANT, "")
    assert any(isinstance(e, StatusChanged) and e.message and "changeCheck" in e.message for e in events)


@pytest.mark.asyncio
@pytest.mark.parametrize("change_check", [True, False])
async def test_the_change_check_is_once_a_turn_and_can_be_switched_off(change_check: bool) -> None:
    model = ScriptedModel(answer("It has been wiped."), answer("It has been wiped, I said."))
    runtime, _, tools = build(model)
    llm = dataclasses.replace(LLMConfig(), harness=Harness(change_check=change_check))
    summary = await runtime.run(runtime.start_session("Wipe the cache.", llm=llm).session_id)
    assert summary.stop_reason is StopReason.END_TURN and not tools.ran
    expected = "It has been wiped, I said." if change_check else "It has been wiped."
    assert summary.session.final_answer == expected


@pytest.mark.asyncio
async def test_the_turn_after_the_change_check_may_call_a_tool_even_when_it_is_the_budgets_last() -> None:
    echo, wipe = action(call("echo", 1, text="a")), action(call("wipe", 2))
    model = ScriptedModel(echo, answer("It has been wiped."), wipe)
    runtime, _, tools = build(model, max_steps=3)
    summary = await runtime.run(runtime.start_session("Wipe the cache.").session_id)
    assert [asked.get("answer_only") for asked in model.asked] == [False, False, False]
    assert [c.name for c in tools.ran] == ["echo", "wipe"]
    assert summary.stop_reason is StopReason.MAX_TURN_REQUESTS
    assert not any("This is your last step" in m.content for m in model.seen[2])


@pytest.mark.asyncio
async def test_the_change_check_never_spends_the_last_step_of_the_budget() -> None:
    model = ScriptedModel(action(call("echo", 1, text="a")), answer("It has been wiped."))
    runtime, _, _ = build(model, max_steps=2)
    summary = await runtime.run(runtime.start_session("Wipe the cache.").session_id)
    assert summary.stop_reason is StopReason.END_TURN and summary.session.final_answer == "It has been wiped."
