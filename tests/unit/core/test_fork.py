"""`core.fork` through the runtime: a fork copies history up to a step, and the source is untouched."""

from __future__ import annotations

import pytest
from mini_agent.core.contracts import Role, SessionStatus, StopReason
from mini_agent.core.fork import UnknownStep
from mini_agent.core.runtime import AgentRuntime
from mini_agent.core.session import Decision

from ...support.fakes import ECHO, Approver, MemoryStore, ScriptedModel, Tools, action, answer, call


async def two_turns() -> tuple[AgentRuntime, str]:
    """A session of two user turns: echo then answer, and after a follow-up, one more answer."""
    model = ScriptedModel(action(call("echo", 0, text="a")), answer("a"), answer("b"), answer("side"))
    runtime = AgentRuntime(model, Tools(ECHO), store=MemoryStore())
    session = runtime.start_session("echo a")
    await runtime.run(session.session_id)
    runtime.prompt(session.session_id, "and b?")
    await runtime.run(session.session_id)
    return runtime, session.session_id


@pytest.mark.asyncio
async def test_a_whole_fork_copies_every_step_and_takes_a_side_question_while_the_source_stays() -> None:
    runtime, source_id = await two_turns()
    source = runtime.get(source_id)
    before = (list(source.messages), len(source.steps))
    fork = runtime.fork(source_id)
    assert fork.session_id != source_id and fork.task == source.task
    assert fork.messages == source.messages and len(fork.steps) == 3
    assert fork.status is SessionStatus.FINISHED and fork.final_answer == "b" and fork.usage == source.usage
    runtime.prompt(fork.session_id, "a side question")
    summary = await runtime.run(fork.session_id)
    assert summary.session.final_answer == "side"
    assert (runtime.get(source_id).messages, len(runtime.get(source_id).steps)) == before


@pytest.mark.asyncio
async def test_a_fork_at_a_step_ends_with_that_step_and_leaves_out_the_turn_after_it() -> None:
    runtime, source_id = await two_turns()
    fork = runtime.fork(source_id, step=1)
    assert [record.index for record in fork.steps] == [0, 1]
    roles = [m.role for m in fork.messages]
    assert roles == [Role.SYSTEM, Role.USER, Role.ASSISTANT, Role.TOOL, Role.ASSISTANT]
    assert fork.status is SessionStatus.FINISHED and fork.stop_reason is StopReason.END_TURN
    assert fork.final_answer == "a"


@pytest.mark.asyncio
async def test_a_fork_cut_mid_turn_is_ready_to_go_on_from_there() -> None:
    runtime, source_id = await two_turns()
    fork = runtime.fork(source_id, step=0)
    assert fork.status is SessionStatus.READY and fork.messages[-1].role is Role.TOOL


@pytest.mark.asyncio
@pytest.mark.parametrize("step", [3, 99])
async def test_a_step_the_session_has_not_finished_is_refused_by_name(step: int) -> None:
    runtime, source_id = await two_turns()
    with pytest.raises(UnknownStep, match=f"has no finished step {step}: it has steps 0 to 2"):
        runtime.fork(source_id, step=step)


@pytest.mark.asyncio
async def test_a_fork_is_stored_and_does_not_inherit_standing_decisions() -> None:
    store = MemoryStore()
    runtime = AgentRuntime(ScriptedModel(answer("x")), Tools(ECHO), store=store, approver=Approver(None))
    session = runtime.start_session("x", standing={"echo": Decision.ALLOW_ALWAYS})
    await runtime.run(session.session_id)
    fork = runtime.fork(session.session_id)
    assert store.load(fork.session_id) is not None and fork.standing_decisions == {}
