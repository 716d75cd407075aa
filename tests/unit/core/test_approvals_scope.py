"""A call the approver says is asked every time (`Ask.EVERY_TIME`, e.g. a path outside the workspace):
no standing decision covers it, an `always` answer stands for it alone, and the flag survives a
restart through the runtime's store; the approver's word also says which calls need no asking."""

from __future__ import annotations

from collections.abc import Coroutine
from typing import Any

import pytest
from mini_agent.core.approvals import Approvals
from mini_agent.core.contracts import ToolCall, ToolSpec
from mini_agent.core.runtime import AgentRuntime
from mini_agent.core.session import AgentConfig, AgentSession, Ask, Decision

from ...support.fakes import ECHO, RISKY, Approver, MemoryStore, ScriptedModel, Tools, action, answer, call


class Policy(Approver):
    """An approver that decides how each call is asked: by the call's `where` argument."""

    def ask_for(self, session: AgentSession, call: ToolCall, spec: ToolSpec) -> Ask:
        where = call.arguments.get("where")
        if where == "outside":
            return Ask.EVERY_TIME
        if where == "quiet":
            return Ask.NEVER
        return Ask.UNLESS_STANDING if spec.requires_approval else Ask.NEVER


def parts(approver: Approver) -> tuple[Approvals, list[Coroutine[Any, Any, None]]]:
    spawned: list[Coroutine[Any, Any, None]] = []
    approvals = Approvals(
        Tools(ECHO, RISKY), None, approver, spawn=spawned.append, decided=lambda *answer: None
    )
    return approvals, spawned


def session() -> AgentSession:
    return AgentSession(session_id="sess_a", task="t", config=AgentConfig(), tools=[])


def test_a_standing_allow_does_not_cover_a_call_asked_every_time() -> None:
    approvals, spawned = parts(Policy(None))
    s = session()
    s.standing_decisions["wipe"] = Decision.ALLOW_ALWAYS
    assert approvals.open(s, 0, [call("wipe", 1, where="outside")]) is False
    assert [(p.decision, p.every_time) for p in s.pending] == [(None, True)]
    assert len(spawned) == 1
    for coroutine in spawned:
        coroutine.close()


def test_a_standing_reject_does_not_answer_a_call_asked_every_time_either() -> None:
    approvals, spawned = parts(Policy(None))
    s = session()
    s.standing_decisions["echo"] = Decision.REJECT_ALWAYS
    assert approvals.open(s, 0, [call("echo", 1, where="outside")]) is False
    assert s.pending[0].decision is None and len(spawned) == 1
    for coroutine in spawned:
        coroutine.close()


def test_an_always_answer_to_a_call_asked_every_time_stands_for_that_call_alone() -> None:
    approvals, spawned = parts(Policy(None))
    s = session()
    approvals.open(s, 0, [call("wipe", 1, where="outside")])
    approvals.decide(s, "c1", Decision.ALLOW_ALWAYS, None)
    assert s.pending[0].decision is Decision.ALLOW_ONCE and s.standing_decisions == {}
    approvals.open(s, 1, [call("wipe", 2, where="outside")])
    approvals.decide(s, "c2", Decision.REJECT_ALWAYS, "no")
    assert s.pending[1].decision is Decision.REJECT_ONCE and s.standing_decisions == {}
    for coroutine in spawned:
        coroutine.close()


def test_the_approvers_word_decides_which_calls_are_asked_at_all() -> None:
    approvals, spawned = parts(Policy(None))
    s = session()
    assert approvals.open(s, 0, [call("wipe", 1, where="quiet"), call("echo", 2)]) is True
    assert s.pending == [] and spawned == []


def test_an_approver_without_a_policy_leaves_it_to_the_tool() -> None:
    approvals, _ = parts(Approver(None))
    s = session()
    s.standing_decisions["wipe"] = Decision.ALLOW_ALWAYS
    assert approvals.open(s, 0, [call("wipe", 1, where="outside"), call("echo", 2)]) is True
    assert [(p.call.id, p.decision, p.every_time) for p in s.pending] == [
        ("c1", Decision.ALLOW_ALWAYS, False)
    ]


@pytest.mark.asyncio
async def test_a_call_asked_every_time_stays_so_when_a_stored_session_is_resumed() -> None:
    store = MemoryStore()
    model = ScriptedModel(action(call("wipe", 1, where="outside")), answer("done"))
    runtime = AgentRuntime(model, Tools(RISKY), store=store, approver=Policy(None))
    sid = runtime.start_session("t", standing={"wipe": Decision.ALLOW_ALWAYS}).session_id
    await runtime.step(sid)
    await runtime.aclose()
    later = AgentRuntime(ScriptedModel(answer("done")), Tools(RISKY), store=store)  # no policy here
    stored = later.get(sid)
    assert [(p.decision, p.every_time) for p in stored.pending] == [(None, True)]
    later.approve(sid, "c1", Decision.ALLOW_ALWAYS)
    assert later.get(sid).standing_decisions == {"wipe": Decision.ALLOW_ALWAYS}  # the one it started with
    assert later.get(sid).pending[0].decision is Decision.ALLOW_ONCE
