"""AgentRuntime through its ports, with small in-test fakes for the model and the tools.

The runtime is pure orchestration; these tests pin its rules (history, loops, budget, cancel,
approval, errors) without any process or socket. End-to-end behaviour is in test_e2e_*.
"""

from __future__ import annotations

import asyncio
import dataclasses
from collections.abc import Sequence
from typing import Any, ClassVar

import pytest
from mini_agent.core.contracts import (
    Harness,
    LLMConfig,
    LLMError,
    LLMResponse,
    Message,
    Observation,
    Role,
    SessionStatus,
    StopReason,
    TokenUsage,
    ToolCall,
    ToolSpec,
)
from mini_agent.core.errors import SessionBusy, SessionFinished, UnknownSession
from mini_agent.core.events import AgentEvent, AnswerChunk, StatusChanged, ToolCallFinished, ToolCallPending
from mini_agent.core.runtime import AgentRuntime
from mini_agent.core.session import AgentConfig, Decision
from mini_agent.llm.formats import reply_format

from ...support.fakes import ECHO, RISKY, Approver, MemoryStore, ScriptedModel, Tools, action, answer, call


def build(model: ScriptedModel, tools: Tools, **config: Any) -> tuple[AgentRuntime, list[AgentEvent]]:
    events: list[AgentEvent] = []
    runtime = AgentRuntime(model, tools, defaults=AgentConfig(**config), events=events.append)
    return runtime, events


@pytest.mark.asyncio
async def test_history_is_append_only_and_steps_end_on_answer() -> None:
    model = ScriptedModel(action(call("echo", 1, text="a")), answer("done"))
    runtime, events = build(model, Tools(ECHO))
    session = runtime.start_session("task")
    first = await runtime.step(session.session_id)
    second = await runtime.step(session.session_id)
    assert first.observations[0].output == '{"text": "a"}' and first.stop_reason is None
    assert second.final_answer == "done" and second.stop_reason is StopReason.END_TURN
    assert session.status is SessionStatus.FINISHED and session.usage == TokenUsage(20, 4, 10)
    assert model.seen[1][: len(model.seen[0])] == model.seen[0]
    assert [m.role for m in model.seen[1]] == [Role.SYSTEM, Role.USER, Role.ASSISTANT, Role.TOOL]
    kinds = [type(e) for e in events]
    assert kinds.index(ToolCallPending) < kinds.index(ToolCallFinished) < kinds.index(AnswerChunk)
    with pytest.raises(SessionFinished):
        await runtime.step(session.session_id)


@pytest.mark.asyncio
async def test_same_call_three_times_gets_a_note_and_a_fourth_stops() -> None:
    same = [action(call("echo", n, text="x")) for n in range(4)]
    tools = Tools(ECHO)
    runtime, _ = build(ScriptedModel(*same), tools)
    llm = dataclasses.replace(LLMConfig(), harness=Harness(known_results=False))  # the detector alone
    summary = await runtime.run(runtime.start_session("loop", llm=llm).session_id)
    assert summary.stop_reason is StopReason.LOOP_DETECTED
    assert len(tools.ran) == 2
    third = summary.session.steps[2].observations[0]
    assert third.is_error and "3 times in a row" in third.output


@pytest.mark.asyncio
@pytest.mark.parametrize(
    ("mode", "finish"),
    [
        ("react", "give your Final Answer"),
        ("json", '{"final_answer": ...}'),
        ("native", "without calling a tool"),
    ],
)
async def test_the_loop_note_says_how_to_finish_in_the_replys_tool_mode(mode: str, finish: str) -> None:
    same = [dataclasses.replace(action(call("echo", n, text="x")), tool_mode=mode) for n in range(3)]
    runtime = AgentRuntime(ScriptedModel(*same, answer("x")), Tools(ECHO), formats=reply_format)
    summary = await runtime.run(runtime.start_session("loop").session_id)
    note = summary.session.steps[2].observations[0].output
    assert "3 times in a row" in note and finish in note
    assert mode == "react" or "Final Answer" not in note


@pytest.mark.asyncio
async def test_step_budget_finishes_with_max_turn_requests() -> None:
    replies = [action(call("echo", n, text=str(n))) for n in range(3)]
    runtime, _ = build(ScriptedModel(*replies), Tools(ECHO), max_steps=3)
    summary = await runtime.run(runtime.start_session("budget").session_id)
    assert summary.stop_reason is StopReason.MAX_TURN_REQUESTS
    assert summary.session.stop_reason is StopReason.MAX_TURN_REQUESTS and len(summary.session.steps) == 3


@pytest.mark.asyncio
async def test_model_error_ends_the_step_and_leaves_the_session_ready() -> None:
    model = ScriptedModel(LLMError("http://x/v1/chat/completions answered 500", status=500), answer("ok"))
    runtime, events = build(model, Tools(ECHO))
    session = runtime.start_session("t")
    failed = await runtime.step(session.session_id)
    assert failed.stop_reason is StopReason.ERROR and "500" in (failed.error or "")
    assert session.status is SessionStatus.READY and session.steps == []
    assert any(isinstance(e, StatusChanged) and (e.message or "").endswith("500") for e in events)
    assert (await runtime.step(session.session_id)).final_answer == "ok"


@pytest.mark.asyncio
async def test_cancel_during_model_call_and_during_tool() -> None:
    model = ScriptedModel(
        action(call("echo", 1, text="slow")), action(call("echo", 2, text="b")), answer("ok"), delay=0.05
    )
    tools = Tools(ECHO, delay=5)
    runtime, _ = build(model, tools)
    session = runtime.start_session("t")
    stepping = asyncio.create_task(runtime.step(session.session_id))
    await asyncio.sleep(0.01)
    with pytest.raises(SessionBusy):
        await runtime.step(session.session_id)
    assert runtime.cancel(session.session_id)
    cancelled = await stepping
    assert cancelled.stop_reason is StopReason.CANCELLED and session.steps == []

    stepping = asyncio.create_task(runtime.step(session.session_id))
    while not tools.ran:
        await asyncio.sleep(0.01)
    runtime.cancel(session.session_id)
    in_tool = await stepping
    assert in_tool.stop_reason is StopReason.CANCELLED
    assert in_tool.observations[0].is_error and "Cancelled" in in_tool.observations[0].output
    assert session.messages[-1].role is Role.TOOL and session.status is SessionStatus.READY
    tools.delay = 0
    assert (await runtime.step(session.session_id)).observations[0].output == '{"text": "b"}'


@pytest.mark.asyncio
async def test_step_pauses_for_approval_until_a_decision_arrives() -> None:
    tools = Tools(RISKY)
    model = ScriptedModel(action(call("wipe", 1)), answer("wiped"))
    runtime = AgentRuntime(model, tools, approver=Approver(None))
    session = runtime.start_session("wipe it")
    paused = await runtime.step(session.session_id)
    assert session.status is SessionStatus.AWAITING_APPROVAL and paused.stop_reason is None and not tools.ran
    runtime.approve(session.session_id, "c1", Decision.ALLOW_ONCE)
    resumed = await runtime.step(session.session_id)
    assert resumed.index == 0 and tools.ran and not resumed.observations[0].is_error
    assert (await runtime.step(session.session_id)).final_answer == "wiped"


@pytest.mark.asyncio
async def test_run_waits_for_the_client_answer_and_rejection_reaches_the_model() -> None:
    tools = Tools(RISKY)
    model = ScriptedModel(action(call("wipe", 1)), action(call("wipe", 2)), answer("left alone"))
    approver = Approver((Decision.REJECT_ALWAYS, "not today"))
    runtime = AgentRuntime(model, tools, approver=approver)
    summary = await runtime.run(runtime.start_session("wipe it").session_id)
    assert summary.stop_reason is StopReason.END_TURN and not tools.ran
    first = summary.session.steps[0].observations[0]
    assert first.is_error and "declined" in first.output and "not today" in first.output
    assert approver.asked == ["wipe"]  # reject_always held for the second call


@pytest.mark.asyncio
async def test_unknown_session() -> None:
    runtime, _ = build(ScriptedModel(), Tools())
    with pytest.raises(UnknownSession):
        await runtime.step("nope")


# --- the final check (llm.harness.finalCheck) --------------------------------------------------------


class Lookup(Tools):
    """`echo` that answers with a fact of its own: the capital of the country it is given."""

    CAPITALS: ClassVar[dict[str, str]] = {"France": "Paris", "Spain": "Madrid"}

    async def execute(self, call: ToolCall, *, session_id: str) -> Observation:
        self.ran.append(call)
        return Observation(call.id, call.name, f"capital: {self.CAPITALS[call.arguments['text']]}")


TWO_PARTS = "What is the capital of France, and what is the capital of Spain?"
BOTH = action(call("echo", 1, text="France"), call("echo", 2, text="Spain"))


@pytest.mark.asyncio
async def test_an_answer_that_leaves_out_a_result_gets_one_more_turn_with_the_task_shown() -> None:
    model = ScriptedModel(BOTH, answer("Madrid."), answer("Paris and Madrid."))
    runtime, events = build(model, Lookup(ECHO))
    summary = await runtime.run(runtime.start_session(TWO_PARTS).session_id)
    assert summary.stop_reason is StopReason.END_TURN and summary.session.final_answer == "Paris and Madrid."
    draft = summary.session.steps[1]
    assert draft.final_answer is None and "Madrid." in draft.completion
    note = model.seen[2][-1]
    assert note.role is Role.TOOL and TWO_PARTS in note.content
    assert "must use what the tools returned: echo: capital: Paris" in note.content
    # the held-back draft is not sent again: the model answers anew, not from its half answer
    assert model.seen[2][-2] == Message(Role.ASSISTANT, "") and "Madrid." not in str(model.seen[2])
    assert note.content == draft.observations[0].output
    assert [e.text for e in events if isinstance(e, AnswerChunk)] == ["Paris and Madrid."]
    # the draft is not shown again, so what it got right is asked for as well as what it left out
    assert "echo: capital: Paris; echo: capital: Madrid" in note.content
    assert [asked.get("answer_with") for asked in model.asked] == [(), (), ("Paris", "Madrid")]
    assert any(isinstance(e, StatusChanged) and e.message and "finalCheck" in e.message for e in events)


@pytest.mark.asyncio
@pytest.mark.parametrize("final_check", [True, False])
async def test_the_final_check_is_once_a_turn_and_can_be_switched_off(final_check: bool) -> None:
    model = ScriptedModel(BOTH, answer("Madrid."), answer("Madrid, I said."))
    runtime, _ = build(model, Lookup(ECHO))
    llm = dataclasses.replace(LLMConfig(), harness=Harness(final_check=final_check))
    summary = await runtime.run(runtime.start_session(TWO_PARTS, llm=llm).session_id)
    assert summary.stop_reason is StopReason.END_TURN
    assert summary.session.final_answer == ("Madrid, I said." if final_check else "Madrid.")


@pytest.mark.asyncio
async def test_the_final_check_never_spends_the_last_step_of_the_budget() -> None:
    runtime, _ = build(ScriptedModel(BOTH, answer("Madrid.")), Lookup(ECHO), max_steps=2)
    summary = await runtime.run(runtime.start_session(TWO_PARTS).session_id)
    assert summary.stop_reason is StopReason.END_TURN and summary.session.final_answer == "Madrid."


# --- the budget's last step is for the answer (llm.harness.lastStep) ----------------------------------


@pytest.mark.asyncio
@pytest.mark.parametrize("last_step", [True, False])
async def test_before_the_budgets_last_turn_the_model_is_told_to_answer(last_step: bool) -> None:
    model = ScriptedModel(action(call("echo", 1, text="France")), BOTH, answer("Paris and Madrid."))
    runtime, events = build(model, Lookup(ECHO), max_steps=3)
    llm = dataclasses.replace(LLMConfig(), harness=Harness(last_step=last_step))
    summary = await runtime.run(runtime.start_session(TWO_PARTS, llm=llm).session_id)
    assert summary.stop_reason is StopReason.END_TURN and summary.session.final_answer == "Paris and Madrid."
    assert [asked.get("answer_only") for asked in model.asked] == [False, False, last_step]
    last_request = model.seen[2]
    told = last_request[-1].role is Role.TOOL and "This is your last step" in last_request[-1].content
    assert told is last_step
    if last_step:  # after the step's results, and kept in its record
        assert last_request[-2].content == "capital: Madrid"
        assert summary.session.steps[1].observations[-1].output == last_request[-1].content
        assert "Do not call a tool: give your Final Answer now" in last_request[-1].content
    said = [e for e in events if isinstance(e, StatusChanged) and e.message and "lastStep" in e.message]
    assert len(said) == (1 if last_step else 0)


@pytest.mark.asyncio
async def test_the_last_step_note_is_not_added_on_a_one_step_budget_or_after_the_final_check() -> None:
    model = ScriptedModel(answer("Paris."))
    runtime, _ = build(model, Lookup(ECHO), max_steps=1)
    await runtime.run(runtime.start_session(TWO_PARTS).session_id)
    assert model.asked[0].get("answer_only") is False and len(model.seen[0]) == 2
    # the final check's note on the second-to-last step already asks for the answer: no second note
    model = ScriptedModel(BOTH, answer("Madrid."), answer("Paris and Madrid."))
    runtime, _ = build(model, Lookup(ECHO), max_steps=3)
    summary = await runtime.run(runtime.start_session(TWO_PARTS).session_id)
    assert summary.session.final_answer == "Paris and Madrid."
    assert model.asked[2].get("answer_only") is True
    assert not any("last step" in m.content for m in model.seen[2])


# --- tools added before the first model turn (an MCP server that came up late) -----------------------


class ToolsSeen(ScriptedModel):
    """The scripted model that also keeps the tools each request offered."""

    def __init__(self, *replies: LLMResponse | Exception) -> None:
        super().__init__(*replies)
        self.tools_seen: list[list[ToolSpec]] = []

    async def generate(
        self,
        messages: Sequence[Message],
        tools: Sequence[ToolSpec],
        config: LLMConfig,
        *args: Any,
        **kwargs: Any,
    ) -> LLMResponse:
        self.tools_seen.append(list(tools))
        return await super().generate(messages, tools, config, *args, **kwargs)


@pytest.mark.asyncio
async def test_tools_added_before_the_first_model_turn_are_saved_and_offered_to_the_model() -> None:
    store = MemoryStore()
    model = ToolsSeen(answer("done"))
    runtime = AgentRuntime(model, Tools(ECHO), store=store)
    session = runtime.start_session("task", tool_names=[])
    assert runtime.add_tools(session.session_id, [ECHO, RISKY]) == [ECHO, RISKY]
    assert runtime.add_tools(session.session_id, [ECHO]) == []  # it has them already
    assert [spec.name for spec in store.saved[session.session_id].tools] == ["echo", "wipe"]
    await runtime.step(session.session_id)
    assert [spec.name for spec in model.tools_seen[0]] == ["echo", "wipe"]


@pytest.mark.asyncio
async def test_a_session_past_its_first_model_turn_keeps_its_tool_set() -> None:
    runtime, _ = build(ScriptedModel(answer("done")), Tools(ECHO))
    session = runtime.start_session("task", tool_names=[])
    await runtime.step(session.session_id)
    runtime.prompt(session.session_id, "and now?")
    assert runtime.add_tools(session.session_id, [ECHO]) == []
    assert session.tools == []


# --- repair hints (llm.harness.repairHints) ------------------------------------------------------------

LISTER = ToolSpec(
    "list_files",
    "List a folder.",
    {"type": "object", "properties": {"directory": {"type": "string", "default": "."}}},
)


class Folders(Tools):
    """`list_files` that knows one folder, the default."""

    async def execute(self, call: ToolCall, *, session_id: str) -> Observation:
        self.ran.append(call)
        folder = call.arguments.get("directory", ".")
        if folder != ".":
            return Observation(call.id, call.name, f"no directory named {folder!r}", is_error=True)
        return Observation(call.id, call.name, '["a.py"]')


@pytest.mark.asyncio
@pytest.mark.parametrize("repair_hints", [True, False])
async def test_a_failed_call_that_set_an_optional_argument_is_told_it_may_leave_it_out(
    repair_hints: bool,
) -> None:
    model = ScriptedModel(action(call("list_files", 1, directory="./workspace")), answer("a.py"))
    runtime, _ = build(model, Folders(LISTER))
    llm = dataclasses.replace(LLMConfig(), harness=Harness(repair_hints=repair_hints))
    summary = await runtime.run(runtime.start_session("Which files are there?", llm=llm).session_id)
    shown = model.seen[1][-1]
    assert shown.role is Role.TOOL and shown.content.startswith("no directory named './workspace'")
    hint = 'Note: `directory` (default ".") is optional; leaving it out uses its default.'
    assert (hint in shown.content) is repair_hints
    assert summary.session.steps[0].observations[0].output == shown.content
