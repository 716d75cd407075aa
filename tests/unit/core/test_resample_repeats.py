"""`llm.harness.resampleRepeats`: the model turn after a repeated call is sampled, not greedy.

Through the runtime's ports with the in-test fakes: the settings each model request was sent with.
"""

from __future__ import annotations

import dataclasses

import pytest
from mini_agent.core.contracts import REPEAT_TEMPERATURE, Harness, LLMConfig
from mini_agent.core.events import AgentEvent, StatusChanged
from mini_agent.core.runtime import AgentRuntime

from ...support.fakes import ECHO, ScriptedModel, Tools, action, answer, call


async def temperatures(llm: LLMConfig) -> tuple[list[float], list[str]]:
    model = ScriptedModel(
        action(call("echo", 0, text="x")), action(call("echo", 1, text="y")),
        action(call("echo", 2, text="x")), action(call("echo", 3, text="z")), answer("x, y and z"),
    )  # fmt: skip
    events: list[AgentEvent] = []
    runtime = AgentRuntime(model, Tools(ECHO), events=events.append)
    await runtime.run(runtime.start_session("echo x, y and z", llm=llm).session_id)
    said = [e.message for e in events if isinstance(e, StatusChanged) and "resample" in (e.message or "")]
    return [config.temperature for config in model.configs], said


@pytest.mark.asyncio
async def test_only_the_turn_after_the_repeat_is_sampled_and_the_session_is_told_why() -> None:
    seen, said = await temperatures(LLMConfig())
    assert seen == [0.0, 0.0, 0.0, REPEAT_TEMPERATURE, 0.0]
    assert said == [
        "The model asked again for a call it had made: this turn is sampled at temperature 0.7 "
        "(llm.harness.resampleRepeats)."
    ]


@pytest.mark.asyncio
async def test_the_switch_off_keeps_the_temperature_asked_for() -> None:
    llm = dataclasses.replace(LLMConfig(), harness=Harness(resample_repeats=False))
    assert (await temperatures(llm))[0] == [0.0] * 5


@pytest.mark.asyncio
async def test_a_higher_temperature_is_never_lowered() -> None:
    seen, said = await temperatures(dataclasses.replace(LLMConfig(), temperature=1.2))
    assert seen == [1.2] * 5 and said == []
