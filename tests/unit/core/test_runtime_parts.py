"""The runtime's parts through their ports: the session book (leases, staleness, heartbeat), the
stepper (resume after each checkpoint, approvals, interrupted tools, cancellation), loop detection and
replay as pure functions, and the rule that keeps the core free of wire keys.

The fakes (tests/support/fakes.py) stand in for the ports; the one test about two daemons uses real
SQLite.
"""

from __future__ import annotations

import asyncio
import json
import re
from pathlib import Path
from typing import Any

import pytest
from mini_agent.core.contracts import Observation, SessionStatus, StopReason, TokenUsage, ToolCall, ToolSpec
from mini_agent.core.errors import (
    AgentError,
    SessionBusy,
    SessionFinished,
    UnknownApproval,
    UnknownSession,
    UnknownTool,
)
from mini_agent.core.events import (
    AgentEvent,
    AnswerChunk,
    StatusChanged,
    ThoughtChunk,
    ToolCallFinished,
    ToolCallPending,
    ToolCallStarted,
    UsageReported,
    UserTurn,
)
from mini_agent.core.loops import canonical, streaks
from mini_agent.core.runtime import AgentRuntime
from mini_agent.core.session import AgentConfig, AgentSession, Decision
from mini_agent.core.stepper import INTERRUPTED
from mini_agent.core.trajectory import replay
from mini_agent.lsp import wire
from mini_agent.store.sqlite import SqliteStore

from ...support.fakes import (
    ECHO,
    RISKY,
    Approver,
    BrokenStore,
    MemoryStore,
    PickyStore,
    ScriptedModel,
    Tools,
    action,
    answer,
    call,
)

ROOT = Path(__file__).resolve().parents[3]
CORE = ROOT / "server" / "mini_agent"
SLOW = ToolSpec("slow", "Takes its time.", {"type": "object", "properties": {}})
LOOKUP = ToolSpec("lookup", "Reads only.", {"type": "object", "properties": {}}, idempotent=True)


def runtime_with(
    model: ScriptedModel,
    tools: Tools,
    store: MemoryStore | None = None,
    approver: Approver | None = None,
    **options: Any,
) -> tuple[AgentRuntime, list[AgentEvent]]:
    events: list[AgentEvent] = []
    defaults = AgentConfig(**options)
    runtime = AgentRuntime(
        model, tools, defaults=defaults, store=store, events=events.append, approver=approver
    )
    return runtime, events


def lasting(events: list[AgentEvent]) -> list[AgentEvent]:
    """A live stream without what only mattered while it ran, thought deltas joined per step, and
    each step's usage moved to the step's end (where a replay reports it)."""
    out: list[AgentEvent] = []
    usage: UsageReported | None = None
    for event in events:
        if isinstance(event, ToolCallStarted | StatusChanged):
            continue
        if usage is not None and event.step != usage.step:
            out.append(usage)
            usage = None
        last = out[-1] if out else None
        if isinstance(event, UsageReported):
            usage = event
        elif isinstance(event, ThoughtChunk) and isinstance(last, ThoughtChunk) and last.step == event.step:
            out[-1] = ThoughtChunk(event.session_id, event.step, last.text + event.text)
        else:
            out.append(event)
    if usage is not None:
        out.append(usage)
    final = [event for event in events if isinstance(event, StatusChanged)][-1]
    return [*out, StatusChanged(final.session_id, final.step + 1, final.status, final.stop_reason)]


# -- layering --------------------------------------------------------------------------------------


def test_no_core_module_spells_a_wire_key() -> None:
    core = sorted((CORE / "core").rglob("*.py"))
    core += sorted((CORE / "llm").rglob("*.py")) + sorted((CORE / "tools").rglob("*.py"))
    spelled = {
        path.name: hits
        for path in core
        if (hits := re.findall(r"toolCallId|stopReason|sessionUpdate", path.read_text(encoding="utf-8")))
    }
    assert spelled == {}


def test_the_application_layer_names_no_method_of_either_door() -> None:
    """`app` reaches the client through its port: no `agent/*`, `session/*` or `fs/*` string, no
    door's wire key."""
    wire = r"toolCallId|stopReason|sessionUpdate|sessionId|[\"'](?:agent|session|fs)/"
    spelled = {
        path.name: hits
        for path in sorted((CORE / "app").rglob("*.py"))
        if (hits := re.findall(wire, path.read_text(encoding="utf-8")))
    }
    assert spelled == {}


def test_no_module_of_the_daemon_is_longer_than_500_lines() -> None:
    lengths = {
        str(path.relative_to(CORE)): len(path.read_text(encoding="utf-8").splitlines())
        for path in CORE.rglob("*.py")
    }
    assert {name: n for name, n in lengths.items() if n > 500} == {}


# -- loop detection --------------------------------------------------------------------------------


def test_distinct_calls_each_have_a_streak_of_one() -> None:
    assert streaks([], [call("echo", 1, text="a"), call("echo", 2, text="b")]) == [1, 1]


def test_a_streak_runs_across_earlier_steps_and_within_a_step() -> None:
    same = [call("echo", n, text="a") for n in range(4)]
    assert streaks([same[:1], same[1:2]], same[2:]) == [3, 4]


def test_another_call_in_between_breaks_the_streak() -> None:
    earlier = [[call("echo", 1, text="a")], [call("echo", 2, text="b")]]
    assert streaks(earlier, [call("echo", 3, text="a")]) == [1]


def test_a_step_that_repeats_the_previous_steps_calls_side_by_side_is_a_repeat_of_each() -> None:
    pair = [call("count", 1, path="a.py"), call("list", 2)]
    again = [call("list", 3), call("count", 4, path="a.py")]
    assert streaks([pair, pair], again) == [3, 3]
    assert streaks([pair, [call("other", 5)]], again) == [1, 1]


def test_argument_order_does_not_make_a_call_different() -> None:
    first = ToolCall("c1", "echo", {"a": 1, "b": 2})
    second = ToolCall("c2", "echo", {"b": 2, "a": 1})
    assert canonical(first) == canonical(second) and streaks([[first]], [second]) == [2]


@pytest.mark.asyncio
async def test_repeats_with_other_arguments_never_trip_the_loop_guard() -> None:
    model = ScriptedModel(*(action(call("echo", n, text=str(n))) for n in range(5)), answer("ok"))
    runtime, _ = runtime_with(model, Tools(ECHO))
    summary = await runtime.run(runtime.start_session("t").session_id)
    assert summary.stop_reason is StopReason.END_TURN and summary.steps_run == 6


# -- the session book --------------------------------------------------------------------------------


@pytest.mark.asyncio
async def test_a_lease_held_by_another_daemon_refuses_the_step() -> None:
    store = MemoryStore()
    runtime, _ = runtime_with(ScriptedModel(answer("x")), Tools(), store)
    session = runtime.start_session("t")
    store.leases[session.session_id] = "someone else"
    with pytest.raises(SessionBusy, match="another daemon"):
        await runtime.step(session.session_id)


@pytest.mark.asyncio
async def test_the_lease_is_released_after_a_step_and_after_a_failed_one() -> None:
    store = MemoryStore()
    runtime, _ = runtime_with(ScriptedModel(RuntimeError("boom"), answer("x")), Tools(), store)
    session = runtime.start_session("t")
    with pytest.raises(RuntimeError):
        await runtime.step(session.session_id)
    assert store.leases == {}
    await runtime.step(session.session_id)
    assert store.leases == {}


@pytest.mark.asyncio
async def test_a_daemon_takes_over_a_released_session_and_sees_its_latest_state() -> None:
    store = MemoryStore()
    first, _ = runtime_with(ScriptedModel(action(call("echo", 1, text="a"))), Tools(ECHO), store)
    session = first.start_session("t")
    second, _ = runtime_with(ScriptedModel(answer("done")), Tools(ECHO), store)
    assert second.get(session.session_id).steps == []
    await first.step(session.session_id)
    record = await second.step(session.session_id)
    assert record.index == 1 and record.final_answer == "done"
    assert first.get(session.session_id).finished  # stale copy re-read from the store


def test_an_unknown_session_is_refused_before_any_lease_is_taken() -> None:
    store = MemoryStore()
    runtime, _ = runtime_with(ScriptedModel(), Tools(), store)
    with pytest.raises(UnknownSession):
        runtime.resume("sess_missing")
    assert store.leases == {}


@pytest.mark.asyncio
async def test_a_finished_session_refuses_a_step_and_keeps_no_lease() -> None:
    store = MemoryStore()
    runtime, _ = runtime_with(ScriptedModel(answer("x")), Tools(), store)
    session = runtime.start_session("t")
    await runtime.step(session.session_id)
    with pytest.raises(SessionFinished):
        await runtime.step(session.session_id)
    assert store.leases == {}


@pytest.mark.asyncio
async def test_the_heartbeat_runs_while_a_step_outlasts_the_stale_time() -> None:
    store = MemoryStore(lease_stale_after=0.03)
    runtime, _ = runtime_with(ScriptedModel(answer("x"), delay=0.2), Tools(), store)
    await runtime.step(runtime.start_session("t").session_id)
    assert store.heartbeats >= 2
    beats = store.heartbeats
    await asyncio.sleep(0.1)
    assert store.heartbeats == beats  # and it stops with the step


@pytest.mark.asyncio
async def test_a_long_step_on_one_host_is_not_taken_over_from_another(tmp_path: Path) -> None:
    """Two daemons on different hosts share the file: only the heartbeat tells the lease is alive."""
    path = tmp_path / "sessions.db"
    here = SqliteStore(path, lease_stale_after=0.3)
    there = SqliteStore(path, lease_stale_after=0.3)
    there._host = "another-host"  # the lease check compares hosts: this is a second machine
    slow = ScriptedModel(action(call("echo", 1, text="a")), delay=1.0)
    runtime = AgentRuntime(slow, Tools(ECHO), store=here)
    other = AgentRuntime(ScriptedModel(answer("stolen")), Tools(ECHO), store=there)
    try:
        session = runtime.start_session("t")
        stepping = asyncio.create_task(runtime.step(session.session_id))
        await asyncio.sleep(0.7)  # more than twice the stale-after time into the model call
        with pytest.raises(SessionBusy):
            await other.step(session.session_id)
        assert (await stepping).observations[0].output == '{"text": "a"}'
    finally:
        here.close()
        there.close()


@pytest.mark.asyncio
async def test_a_finished_session_is_let_go_and_read_back_from_the_store(tmp_path: Path) -> None:
    """A daemon that runs thousands of sessions must not hold them all: with a store, a finished one
    leaves memory (the store's marks included) and comes back whole when asked for."""
    store = SqliteStore(tmp_path / "sessions.db")
    model = ScriptedModel(action(call("echo", 1, text="a")), answer("done"), answer("still here"))
    runtime = AgentRuntime(model, Tools(ECHO), store=store)
    try:
        done = runtime.start_session("t").session_id
        waiting = runtime.start_session("u").session_id
        summary = await runtime.run(done)
        assert [s.session_id for s in runtime.sessions()] == [waiting]  # the idle, unfinished one stays
        assert done not in store._written
        again = runtime.get(done)
        assert again is not summary.session
        assert wire.session_full(again) == wire.session_full(summary.session)
        assert [s.session_id for s in runtime.sessions()] == [waiting]  # reading it back does not keep it
        with pytest.raises(SessionFinished):
            await runtime.step(done)
        assert (await runtime.run(waiting)).session.final_answer == "still here"
    finally:
        store.close()


# -- resume after each checkpoint ------------------------------------------------------------------


async def _checkpoints_of_an_approved_tool_run() -> list[AgentSession]:
    store = MemoryStore()
    tools = Tools(ECHO, RISKY)
    model = ScriptedModel(action(call("wipe", 1)), action(call("echo", 2, text="b")), answer("done"))
    runtime, _ = runtime_with(model, tools, store, approver=Approver((Decision.ALLOW_ONCE, None)))
    await runtime.run(runtime.start_session("t").session_id)
    return store.checkpoints


@pytest.mark.asyncio
@pytest.mark.parametrize("at", range(7))  # the eighth is the finished session
async def test_a_new_daemon_resumes_from_each_checkpoint_without_rerunning_a_started_tool(at: int) -> None:
    checkpoints = await _checkpoints_of_an_approved_tool_run()
    assert len(checkpoints) == 8
    snapshot = checkpoints[at]
    store = MemoryStore()
    store.save(snapshot)
    tools = Tools(ECHO, RISKY)
    replies = [action(call("wipe", 1)), action(call("echo", 2, text="b")), answer("done")]
    model = ScriptedModel(*replies[len(snapshot.steps) :])
    runtime, _ = runtime_with(model, tools, store, Approver((Decision.ALLOW_ONCE, None)))
    session = runtime.resume(snapshot.session_id)
    for pending in session.pending:  # asked before the crash: the answer comes by agent/approve
        if pending.decision is None:
            runtime.approve(session.session_id, pending.call.id, Decision.ALLOW_ONCE)
    summary = await runtime.run(snapshot.session_id)
    assert summary.stop_reason is StopReason.END_TURN and summary.session.final_answer == "done"
    started_before = {cid for step in snapshot.steps for cid in step.started}
    assert not started_before & {ran.id for ran in tools.ran}
    outcomes = {obs.call_id: obs.output for step in summary.session.steps for obs in step.observations}
    interrupted = {cid for cid, output in outcomes.items() if output == INTERRUPTED}
    observed_before = {obs.call_id for step in snapshot.steps for obs in step.observations}
    assert interrupted == started_before - observed_before
    assert sorted(outcomes) == ["c1", "c2"]


@pytest.mark.asyncio
async def test_a_session_the_store_refuses_costs_only_itself_in_a_group_commit() -> None:
    store = PickyStore()
    replies = [action(call("echo", n, text="hi")) for n in range(4)] + [answer("done")] * 4
    tools = Tools(ECHO)
    runtime, _ = runtime_with(ScriptedModel(*replies), tools, store)
    sessions = [runtime.start_session(f"t{n}").session_id for n in range(4)]
    store.bad = sessions[0]
    summaries = await asyncio.gather(*(runtime.run(sid) for sid in sessions))
    assert max(store.groups) > 1  # the checkpoints were grouped
    refused, *others = summaries
    assert refused.stop_reason is StopReason.ERROR and "no tool was run" in (refused.last.error or "")
    assert runtime.is_unsaved(sessions[0]) and len(tools.ran) == 3
    for summary in others:
        sid = summary.session.session_id
        assert summary.stop_reason is StopReason.END_TURN and not runtime.is_unsaved(sid)
        assert store.saved[sid].status is SessionStatus.FINISHED


@pytest.mark.asyncio
async def test_a_store_that_breaks_unexpectedly_fails_the_step_instead_of_hanging_it() -> None:
    runtime, _ = runtime_with(ScriptedModel(action(call("echo", 1, text="hi"))), Tools(ECHO), BrokenStore())
    session = runtime.start_session("t")
    with pytest.raises(RuntimeError, match="the store broke"):
        await asyncio.wait_for(runtime.run(session.session_id), 30)


@pytest.mark.asyncio
async def test_every_step_of_a_group_whose_save_breaks_fails_with_it() -> None:
    tools = Tools(ECHO)
    runtime, _ = runtime_with(ScriptedModel(*[action(call("echo", n, text="hi")) for n in range(3)]), tools,
                              BrokenStore())
    sessions = [runtime.start_session(f"t{n}").session_id for n in range(3)]
    runs = asyncio.gather(*(runtime.run(sid) for sid in sessions), return_exceptions=True)
    outcomes = await asyncio.wait_for(runs, 30)
    assert all(isinstance(outcome, RuntimeError) for outcome in outcomes), outcomes
    assert tools.ran == []  # none went on to its tool as if saved


# -- approvals and interrupted tools ---------------------------------------------------------------


@pytest.mark.asyncio
async def test_allow_always_stands_for_later_calls_of_the_same_tool() -> None:
    tools = Tools(RISKY)
    model = ScriptedModel(action(call("wipe", 1)), action(call("wipe", 2, count=2)), answer("wiped"))
    approver = Approver((Decision.ALLOW_ALWAYS, None))
    runtime, _ = runtime_with(model, tools, approver=approver)
    summary = await runtime.run(runtime.start_session("t").session_id)
    assert [c.id for c in tools.ran] == ["c1", "c2"] and approver.asked == ["wipe"]
    assert summary.session.standing_decisions == {"wipe": Decision.ALLOW_ALWAYS}


@pytest.mark.asyncio
async def test_a_decision_for_an_unknown_call_is_its_own_error() -> None:
    runtime, _ = runtime_with(ScriptedModel(action(call("wipe", 1))), Tools(RISKY), approver=Approver(None))
    session = runtime.start_session("t")
    await runtime.step(session.session_id)
    with pytest.raises(UnknownApproval) as caught:
        runtime.approve(session.session_id, "nope", Decision.ALLOW_ONCE)
    assert caught.value.reason == "unknown_approval" and caught.value.details["tool_call_id"] == "nope"
    runtime.approve(session.session_id, "c1", Decision.ALLOW_ONCE)  # the real one still waits


def test_an_unknown_tool_name_is_its_own_error() -> None:
    runtime, _ = runtime_with(ScriptedModel(), Tools(ECHO))
    with pytest.raises(UnknownTool) as caught:
        runtime.start_session("t", tool_names=["echo", "ghost"])
    assert caught.value.reason == "unknown_tool" and "ghost" in str(caught.value)


def _interrupted(spec: ToolSpec) -> tuple[MemoryStore, str]:
    """A session whose daemon died while `spec`'s tool ran: the call is started, with no outcome."""
    store = MemoryStore()
    runtime, _ = runtime_with(ScriptedModel(), Tools(spec), store)
    session = runtime.start_session("t")
    record = action(ToolCall("c1", spec.name, {}))
    from mini_agent.core.session import StepRecord

    session.steps.append(StepRecord(0, completion=record.content, tool_calls=list(record.tool_calls)))
    session.steps[0].started.add("c1")
    session.status = SessionStatus.RUNNING
    session.touch()
    store.save(session)
    return store, session.session_id


@pytest.mark.asyncio
async def test_a_tool_cut_off_mid_run_is_reported_as_interrupted_not_rerun() -> None:
    store, session_id = _interrupted(SLOW)
    tools = Tools(SLOW)
    runtime, _ = runtime_with(ScriptedModel(answer("ok")), tools, store)
    runtime.resume(session_id)
    record = await runtime.step(session_id)
    assert record.index == 0 and record.observations[0].output == INTERRUPTED and tools.ran == []


@pytest.mark.asyncio
async def test_an_idempotent_tool_cut_off_mid_run_is_simply_run_again() -> None:
    store, session_id = _interrupted(LOOKUP)
    tools = Tools(LOOKUP)
    runtime, _ = runtime_with(ScriptedModel(answer("ok")), tools, store)
    record = await runtime.step(session_id)
    assert [c.id for c in tools.ran] == ["c1"] and not record.observations[0].is_error


# -- cancellation at each phase --------------------------------------------------------------------


def test_cancel_with_nothing_running_says_so() -> None:
    runtime, _ = runtime_with(ScriptedModel(), Tools())
    assert runtime.cancel(runtime.start_session("t").session_id) is False


@pytest.mark.asyncio
async def test_cancel_while_waiting_for_approval_leaves_the_session_ready_and_the_call_pending() -> None:
    runtime, events = runtime_with(
        ScriptedModel(action(call("wipe", 1))), Tools(RISKY), approver=Approver(None)
    )
    session = runtime.start_session("t")
    running = asyncio.create_task(runtime.run(session.session_id))
    while session.status is not SessionStatus.AWAITING_APPROVAL:
        await asyncio.sleep(0.005)
    runtime.cancel(session.session_id)
    summary = await running
    assert summary.stop_reason is StopReason.CANCELLED and session.status is SessionStatus.READY
    assert [p.call.id for p in session.pending] == ["c1"]
    assert isinstance(events[-1], StatusChanged) and events[-1].stop_reason is StopReason.CANCELLED


@pytest.mark.asyncio
async def test_cancel_during_a_tool_emits_a_cancelled_outcome_for_it() -> None:
    tools = Tools(ECHO, delay=5)
    runtime, events = runtime_with(ScriptedModel(action(call("echo", 1, text="a"))), tools)
    session = runtime.start_session("t")
    stepping = asyncio.create_task(runtime.step(session.session_id))
    while not tools.ran:
        await asyncio.sleep(0.005)
    runtime.cancel(session.session_id)
    await stepping
    finished = [e for e in events if isinstance(e, ToolCallFinished)]
    assert len(finished) == 1 and "Cancelled" in finished[0].observation.output


@pytest.mark.asyncio
async def test_cancel_during_the_model_turn_emits_no_usage_and_records_no_step() -> None:
    runtime, events = runtime_with(ScriptedModel(answer("x"), delay=5), Tools())
    session = runtime.start_session("t")
    stepping = asyncio.create_task(runtime.step(session.session_id))
    await asyncio.sleep(0.01)
    runtime.cancel(session.session_id)
    assert (await stepping).stop_reason is StopReason.CANCELLED and session.steps == []
    assert not any(isinstance(e, UsageReported) for e in events)


# -- replay equals the live run --------------------------------------------------------------------


async def _live(*replies: Any, **options: Any) -> tuple[AgentRuntime, AgentSession, list[AgentEvent]]:
    runtime, events = runtime_with(ScriptedModel(*replies), Tools(ECHO, RISKY), **options)
    session = runtime.start_session("t")
    await runtime.run(session.session_id)
    return runtime, session, events


@pytest.mark.asyncio
async def test_replay_is_the_lasting_part_of_the_live_events() -> None:
    _, session, events = await _live(action(call("echo", 1, text="a")), answer("done"))
    assert replay(session) == lasting(events)


@pytest.mark.asyncio
async def test_replay_frames_equal_the_live_frames() -> None:
    _, session, events = await _live(action(call("echo", 1, text="a")), answer("done"))
    assert [wire.update_params(e) for e in replay(session)] == [
        wire.update_params(e) for e in lasting(events)
    ]


@pytest.mark.asyncio
async def test_replay_of_a_loop_stopped_session_equals_the_live_run() -> None:
    replies = [action(call("echo", n, text="x")) for n in range(4)]
    _, session, events = await _live(*replies)
    assert session.stop_reason is StopReason.LOOP_DETECTED
    assert replay(session) == lasting(events)


@pytest.mark.asyncio
async def test_replay_of_a_declined_call_equals_the_live_run() -> None:
    replies = [action(call("wipe", 1)), answer("left alone")]
    _, session, events = await _live(*replies, approver=Approver((Decision.REJECT_ONCE, "no")))
    assert replay(session) == lasting(events)


@pytest.mark.asyncio
async def test_replay_holds_a_follow_up_where_the_live_run_sent_it() -> None:
    runtime, session, events = await _live(action(call("echo", 1, text="a")), answer("done"), answer("again"))
    runtime.prompt(session.session_id, "once more")
    await runtime.run(session.session_id)
    turns = [e for e in replay(session) if isinstance(e, UserTurn)]
    assert turns == [UserTurn(session.session_id, 2, "once more")]
    assert replay(session) == lasting(events)
    assert replay(session, task=True)[0] == UserTurn(session.session_id, 0, "t")


@pytest.mark.asyncio
async def test_replayed_usage_is_the_running_total_a_live_run_reported() -> None:
    _, session, _ = await _live(action(call("echo", 1, text="a")), answer("done"))
    totals = [e.total for e in replay(session) if isinstance(e, UsageReported)]
    assert totals == [TokenUsage(10, 2, 5), TokenUsage(20, 4, 10)]


# -- the edge mapping and errors ---------------------------------------------------------------------


def test_each_event_maps_to_its_update_kind() -> None:
    obs = Observation("c1", "echo", "out")
    events: list[AgentEvent] = [
        UserTurn("s", 0, "go on"),
        ThoughtChunk("s", 0, "hm"),
        ToolCallPending("s", 0, call("echo", 1, text="a")),
        ToolCallStarted("s", 0, "c1"),
        ToolCallFinished("s", 0, obs),
        AnswerChunk("s", 0, "done"),
        UsageReported("s", 0, TokenUsage(1, 2, 3), TokenUsage(1, 2, 3)),
        StatusChanged("s", 1, SessionStatus.FINISHED, StopReason.END_TURN),
    ]
    bodies = [wire.update_body(e) for e in events]
    assert [b["kind"] for b in bodies] == [
        "user_message_chunk",
        "agent_thought_chunk",
        "tool_call",
        "tool_call_update",
        "tool_call_update",
        "agent_message_chunk",
        "usage_update",
        "status",
    ]
    assert bodies[0] == {"kind": "user_message_chunk", "text": "go on"}
    assert bodies[3]["status"] == "in_progress" and bodies[4]["status"] == "completed"
    assert bodies[7] == {"kind": "status", "status": "finished", "stopReason": "end_turn"}
    assert json.loads(json.dumps(bodies)) == bodies


def test_every_domain_error_carries_its_code_and_reason() -> None:
    errors: list[AgentError] = [
        UnknownSession("s"),
        SessionBusy("s"),
        SessionFinished("s", "end_turn"),
        UnknownTool(["x"], []),
        UnknownApproval("s", "c"),
    ]
    assert [(e.code, e.reason) for e in errors] == [
        (-32602, "unknown_session"),
        (-32001, "session_busy"),
        (-32602, "session_finished"),
        (-32602, "unknown_tool"),
        (-32602, "unknown_approval"),
    ]
