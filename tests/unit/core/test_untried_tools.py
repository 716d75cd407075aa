"""`llm.harness.untriedTools`: a call that is not run again names the tools the turn has not called yet.

Through the runtime's ports with the in-test fakes: what the model was shown in place of the repeat.
"""

from __future__ import annotations

import dataclasses

import pytest
from mini_agent.core.contracts import Harness, LLMConfig, ToolSpec
from mini_agent.core.loops import untried
from mini_agent.core.runtime import AgentRuntime
from mini_agent.core.session import Decision

from ...support.fakes import ECHO, RISKY, Approver, ScriptedModel, Tools, action, answer, call

READ = ToolSpec(
    "read_file",
    "Read a text file of the workspace and return every line of it, numbered from one. Paths are relative.",
    {"type": "object", "properties": {"path": {"type": "string"}}},
)


async def shown_for_repeat(harness: Harness) -> str:
    model = ScriptedModel(
        action(call("echo", 0, text="x")), action(call("echo", 1, text="x")), answer("x"),
    )  # fmt: skip
    runtime = AgentRuntime(model, Tools(ECHO, READ, RISKY), approver=Approver((Decision.ALLOW_ONCE, None)))
    llm = dataclasses.replace(LLMConfig(), harness=harness)
    summary = await runtime.run(runtime.start_session("echo x", llm=llm).session_id)
    return summary.session.steps[1].observations[0].output


@pytest.mark.asyncio
async def test_the_note_for_a_repeated_call_names_each_tool_not_called_yet_with_its_purpose() -> None:
    shown = await shown_for_repeat(Harness())
    assert shown.startswith("You asked again for echo")
    last = shown.splitlines()[-1]
    assert last.startswith("Not called yet in this task: read_file (Read a text file of the workspace")
    assert last.endswith("; wipe (Delete things).") and "echo (" not in last


@pytest.mark.asyncio
async def test_the_switch_off_leaves_the_note_as_it_was() -> None:
    shown = await shown_for_repeat(Harness(untried_tools=False))
    assert shown.startswith("You asked again for echo") and "Not called yet" not in shown


def test_nothing_is_named_once_every_tool_has_been_asked_for() -> None:
    assert untried([call("echo", 0, text="x"), call("wipe", 1)], [ECHO, RISKY]) == ""
    line = untried([call("echo", 0, text="x")], [ECHO, RISKY])
    assert line == "\nNot called yet in this task: wipe (Delete things)."


def test_a_long_description_is_cut_at_a_word() -> None:
    line = untried([], [READ])
    purpose = "Read a text file of the workspace and return every line of …"
    assert line == f"\nNot called yet in this task: read_file ({purpose})."
