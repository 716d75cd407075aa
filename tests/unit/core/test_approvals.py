"""Approvals own the decisions tool calls need: opening them, asking the approver, recording an
answer, waking the step that waits, and taking up a decision another daemon stored."""

from __future__ import annotations

import asyncio
import copy
from collections.abc import Coroutine
from typing import Any

import pytest
from mini_agent.core import approvals as approvals_module
from mini_agent.core.approvals import Approvals
from mini_agent.core.errors import UnknownApproval
from mini_agent.core.flight import Flight, StepCancelled
from mini_agent.core.runtime import AgentRuntime
from mini_agent.core.session import AgentConfig, AgentSession, Decision

from ...support.fakes import ECHO, RISKY, Approver, MemoryStore, ScriptedModel, Tools, action, call


class Parts:
    """Approvals over fakes: the spawned prompts and the answers they gave are kept for the test."""

    def __init__(self, approver: Approver | None = None, store: MemoryStore | None = None) -> None:
        self.spawned: list[Coroutine[Any, Any, None]] = []
        self.answers: list[tuple[str, str, Decision, str | None]] = []
        self.approvals = Approvals(
            Tools(ECHO, RISKY),
            store,
            approver,
            spawn=self.spawned.append,
            decided=lambda *answer: self.answers.append(answer),
        )


def session() -> AgentSession:
    return AgentSession(session_id="sess_a", task="t", config=AgentConfig(), tools=[])


def test_a_call_whose_tool_needs_no_approval_opens_nothing() -> None:
    parts, s = Parts(Approver(None)), session()
    assert parts.approvals.open(s, 0, [call("echo", 1, text="a")]) is True
    assert s.pending == [] and parts.spawned == []


@pytest.mark.asyncio
async def test_a_call_that_needs_approval_is_pending_and_its_prompt_answers_through_the_runtime() -> None:
    approver = Approver((Decision.ALLOW_ONCE, "fine"))
    parts, s = Parts(approver), session()
    assert parts.approvals.open(s, 0, [call("wipe", 1)]) is False
    assert [(p.call.id, p.decision) for p in s.pending] == [("c1", None)]
    assert parts.approvals.open(s, 0, [call("wipe", 1)]) is False  # asked once, not again
    assert len(parts.spawned) == 1
    await parts.spawned[0]
    assert approver.asked == ["wipe"] and parts.answers == [("sess_a", "c1", Decision.ALLOW_ONCE, "fine")]


def test_a_standing_decision_decides_at_once_without_asking() -> None:
    parts, s = Parts(Approver(None)), session()
    s.standing_decisions["wipe"] = Decision.ALLOW_ALWAYS
    assert parts.approvals.open(s, 0, [call("wipe", 1)]) is True
    assert s.pending[0].decision is Decision.ALLOW_ALWAYS and parts.spawned == []


def test_a_decision_is_recorded_and_a_standing_one_stands_for_the_tool() -> None:
    parts, s = Parts(), session()
    parts.approvals.open(s, 0, [call("wipe", 1)])
    parts.approvals.decide(s, "c1", Decision.ALLOW_ALWAYS, "always")
    assert (s.pending[0].decision, s.pending[0].reason) == (Decision.ALLOW_ALWAYS, "always")
    assert s.standing_decisions == {"wipe": Decision.ALLOW_ALWAYS}
    with pytest.raises(UnknownApproval):
        parts.approvals.decide(s, "nope", Decision.ALLOW_ONCE, None)


@pytest.mark.asyncio
async def test_a_waiting_step_wakes_on_a_decision_made_here() -> None:
    parts, s = Parts(), session()
    parts.approvals.open(s, 0, [call("wipe", 1)])
    waiting = asyncio.create_task(parts.approvals.wait(s, Flight()))
    await asyncio.sleep(0.01)
    assert not waiting.done()
    parts.approvals.decide(s, "c1", Decision.REJECT_ONCE, None)
    await asyncio.wait_for(waiting, approvals_module.APPROVAL_POLL_SEC / 2)  # woken, not polled


@pytest.mark.asyncio
async def test_a_waiting_step_takes_up_a_decision_another_daemon_stored(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(approvals_module, "APPROVAL_POLL_SEC", 0.01)
    store = MemoryStore()
    parts, s = Parts(store=store), session()
    parts.approvals.open(s, 0, [call("wipe", 1)])
    store.save(s)
    theirs = copy.deepcopy(s)
    theirs.pending[0].decision = Decision.ALLOW_ONCE
    theirs.standing_decisions["echo"] = Decision.ALLOW_ALWAYS
    theirs.touch()
    store.save(theirs)  # the other daemon's agent/approve
    await asyncio.wait_for(parts.approvals.wait(s, Flight()), 5)
    assert s.pending[0].decision is Decision.ALLOW_ONCE
    assert s.standing_decisions == {"echo": Decision.ALLOW_ALWAYS}


@pytest.mark.asyncio
async def test_a_cancelled_flight_ends_the_wait_and_a_later_decision_wakes_nobody() -> None:
    parts, s, flight = Parts(), session(), Flight()
    parts.approvals.open(s, 0, [call("wipe", 1)])
    waiting = asyncio.create_task(parts.approvals.wait(s, flight))
    await asyncio.sleep(0.01)
    flight.cancel()
    with pytest.raises(StepCancelled):
        await waiting
    parts.approvals.decide(s, "c1", Decision.ALLOW_ONCE, None)  # recorded, with no step to wake
    assert s.pending[0].decision is Decision.ALLOW_ONCE


class Silent:
    """An approver whose person never answers: its prompt stays open until cancelled."""

    def __init__(self) -> None:
        self.cancelled = False

    async def request_permission(self, *args: Any) -> None:
        try:
            await asyncio.Event().wait()
        except asyncio.CancelledError:
            self.cancelled = True
            raise


@pytest.mark.asyncio
async def test_the_runtime_owns_an_open_prompt_and_cancels_it_when_closed() -> None:
    silent = Silent()
    runtime = AgentRuntime(ScriptedModel(action(call("wipe", 1))), Tools(RISKY), approver=silent)
    sid = runtime.start_session("t").session_id
    await runtime.step(sid)  # returns awaiting approval; the prompt outlives the step
    await asyncio.sleep(0)
    assert not silent.cancelled
    await runtime.aclose()
    assert silent.cancelled

