"""`llm.harness.knownResults`: a call whose result the model already has in this turn is not run again.

Through the runtime's ports with the in-test fakes: what ran, and what the model was shown instead.
"""

from __future__ import annotations

import dataclasses

import pytest
from mini_agent.core.contracts import Harness, LLMConfig, StopReason, ToolSpec
from mini_agent.core.runtime import AgentRuntime
from mini_agent.core.session import Decision

from ...support.fakes import ECHO, RISKY, Approver, ScriptedModel, Tools, action, answer, call

WEATHER = ToolSpec(
    "weather", "Today's weather.", {"type": "object", "properties": {}}, hints=(("openWorldHint", True),)
)
SAVE = ToolSpec("save", "Save.", {"type": "object", "properties": {}}, hints=(("readOnlyHint", False),))


def runtime_for(
    model: ScriptedModel, tools: Tools, *, known_results: bool = True
) -> tuple[AgentRuntime, LLMConfig]:
    llm = dataclasses.replace(LLMConfig(), harness=Harness(known_results=known_results))
    return AgentRuntime(model, tools, approver=Approver((Decision.ALLOW_ONCE, None))), llm


@pytest.mark.asyncio
async def test_a_call_asked_again_after_another_is_not_run_and_the_model_is_shown_its_result() -> None:
    model = ScriptedModel(
        action(call("echo", 0, text="x")), action(call("echo", 1, text="y")),
        action(call("echo", 2, text="x")), answer("x and y"),
    )  # fmt: skip
    tools = Tools(ECHO)
    runtime, llm = runtime_for(model, tools)
    summary = await runtime.run(runtime.start_session("echo x and y", llm=llm).session_id)
    assert summary.stop_reason is StopReason.END_TURN
    assert [c.arguments for c in tools.ran] == [{"text": "x"}, {"text": "y"}]
    shown = summary.session.steps[2].observations[0]
    assert shown.is_error
    assert shown.output.startswith('You asked again for echo with {"text": "x"}. It was not run again')
    assert 'It returned: {"text": "x"}' in shown.output and "give your Final Answer" in shown.output


@pytest.mark.asyncio
async def test_the_switch_off_runs_the_call_again() -> None:
    model = ScriptedModel(action(call("echo", 0, text="x")), action(call("echo", 1, text="x")), answer("x"))
    tools = Tools(ECHO)
    runtime, llm = runtime_for(model, tools, known_results=False)
    await runtime.run(runtime.start_session("echo x", llm=llm).session_id)
    assert len(tools.ran) == 2


@pytest.mark.asyncio
@pytest.mark.parametrize("between", [RISKY, SAVE], ids=["needs approval", "declared not read-only"])
async def test_a_call_after_one_that_may_change_state_runs_again(between: ToolSpec) -> None:
    model = ScriptedModel(
        action(call("echo", 0, text="x")), action(call(between.name, 1)),
        action(call("echo", 2, text="x")), answer("x"),
    )  # fmt: skip
    tools = Tools(ECHO, between)
    runtime, llm = runtime_for(model, tools)
    await runtime.run(runtime.start_session("echo, change, echo", llm=llm).session_id)
    assert [c.name for c in tools.ran] == ["echo", between.name, "echo"]


@pytest.mark.asyncio
async def test_a_change_that_succeeded_is_not_made_twice_and_asks_no_second_approval() -> None:
    model = ScriptedModel(action(call("wipe", 0)), action(call("wipe", 1)), answer("wiped"))
    tools = Tools(RISKY)
    approver = Approver((Decision.ALLOW_ONCE, None))
    runtime = AgentRuntime(model, tools, approver=approver)
    summary = await runtime.run(runtime.start_session("wipe it").session_id)
    assert [c.name for c in tools.ran] == ["wipe"] and approver.asked == ["wipe"]
    assert summary.session.steps[1].observations[0].output.startswith("You asked again for wipe with {}")


@pytest.mark.asyncio
async def test_an_open_world_tool_and_a_tool_the_daemon_lacks_always_run_again() -> None:
    model = ScriptedModel(
        action(call("weather", 0)), action(call("weather", 1)),
        action(call("missing", 2)), action(call("missing", 3)), answer("sunny"),
    )  # fmt: skip
    tools = Tools(WEATHER)
    runtime, llm = runtime_for(model, tools)
    await runtime.run(runtime.start_session("weather", llm=llm).session_id)
    assert [c.name for c in tools.ran] == ["weather", "weather", "missing", "missing"]  # no such tool here


@pytest.mark.asyncio
async def test_a_new_user_turn_starts_with_nothing_known() -> None:
    first, again = action(call("echo", 0, text="x")), action(call("echo", 1, text="x"))
    model = ScriptedModel(first, answer("x"), again, answer("x"))
    tools = Tools(ECHO)
    runtime, llm = runtime_for(model, tools)
    session = runtime.start_session("echo x", llm=llm)
    await runtime.run(session.session_id)
    runtime.prompt(session.session_id, "again, please")
    await runtime.run(session.session_id)
    assert len(tools.ran) == 2


@pytest.mark.asyncio
async def test_an_mcp_tool_takes_mcps_defaults_and_runs_again_unless_its_server_says_it_is_closed() -> None:
    unsaid = ToolSpec("fix_ping", "Ping.", {"type": "object", "properties": {}}, mcp_server="fix",
                      hints=(("readOnlyHint", True),))  # fmt: skip
    closed = ToolSpec("fix_get", "Get.", {"type": "object", "properties": {}}, mcp_server="fix",
                      hints=(("openWorldHint", False), ("readOnlyHint", True)))  # fmt: skip
    model = ScriptedModel(
        action(call("fix_ping", 0)), action(call("fix_ping", 1)),
        action(call("fix_get", 2)), action(call("fix_get", 3)), answer("pong"),
    )  # fmt: skip
    tools = Tools(unsaid, closed)
    runtime, llm = runtime_for(model, tools)
    await runtime.run(runtime.start_session("ping", llm=llm).session_id)
    assert [c.name for c in tools.ran] == ["fix_ping", "fix_ping", "fix_get"]


@pytest.mark.asyncio
@pytest.mark.parametrize("hide", [True, False], ids=["hideRepeats on", "hideRepeats off"])
async def test_a_repeat_answered_whole_goes_back_to_the_model_empty_with_a_note_naming_the_call(
    hide: bool,
) -> None:
    model = ScriptedModel(
        action(call("echo", 0, text="x")), action(call("echo", 1, text="x")), answer("x"),
    )  # fmt: skip
    tools = Tools(ECHO)
    llm = dataclasses.replace(LLMConfig(), harness=Harness(hide_repeats=hide))
    runtime = AgentRuntime(model, tools)
    await runtime.run(runtime.start_session("echo x", llm=llm).session_id)
    repeat, note = model.seen[2][-2:]
    assert repeat.content == ("" if hide else "Action: echo")
    assert [c.name for c in repeat.tool_calls] == ["echo"]  # kept for a server that pairs results with calls
    asked = 'You asked again for echo with {"text": "x"}. It was not run again'
    expected = asked if hide else "Not run again"
    assert note.content.startswith(expected) and 'It returned: {"text": "x"}' in note.content


@pytest.mark.asyncio
async def test_a_step_where_one_call_is_new_is_shown_as_the_model_wrote_it() -> None:
    model = ScriptedModel(
        action(call("echo", 0, text="x")), action(call("echo", 1, text="x"), call("echo", 2, text="y")),
        answer("x and y"),
    )  # fmt: skip
    runtime, llm = runtime_for(model, Tools(ECHO))
    await runtime.run(runtime.start_session("echo x and y", llm=llm).session_id)
    step = [m for m in model.seen[2] if m.tool_calls][-1]
    assert step.content == "Action: echo" and len(step.tool_calls) == 2
    assert any(m.content.startswith("Not run again: echo") for m in model.seen[2])


@pytest.mark.asyncio
async def test_a_call_the_loop_detector_answers_gets_that_one_answer_and_no_second() -> None:
    model = ScriptedModel(*(action(call("echo", n, text="x")) for n in range(3)), answer("x"))
    runtime, llm = runtime_for(model, Tools(ECHO))
    summary = await runtime.run(runtime.start_session("echo x", llm=llm).session_id)
    third = summary.session.steps[2].observations
    assert len(third) == 1 and "3 times in a row" in third[0].output
    assert sum(1 for m in model.seen[3] if m.tool_call_id == "c2") == 1  # one result for the one call
