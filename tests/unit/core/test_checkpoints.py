"""Checkpoints own the writes to the store: one save per turn of the loop for every session that asked
in it, and each asker is told how its own save went (a result, not a shared mark)."""

from __future__ import annotations

import asyncio

import pytest
from mini_agent.core.checkpoints import Checkpoints
from mini_agent.core.session import AgentConfig, AgentSession, StepRecord, StoreUnavailable

from ...support.fakes import BrokenStore, PickyStore


def session(sid: str) -> AgentSession:
    return AgentSession(session_id=sid, task="t", config=AgentConfig(), tools=[])


class Counted(PickyStore):
    """Records each save's group of session ids."""

    def __init__(self) -> None:
        super().__init__()
        self.saves: list[list[str]] = []

    def save(self, *sessions: AgentSession) -> None:
        self.saves.append([s.session_id for s in sessions])
        super().save(*sessions)


def test_without_a_store_every_checkpoint_is_a_success() -> None:
    checkpoints = Checkpoints(None, stepping=lambda: 3)
    assert checkpoints.now(session("a")) is None and checkpoints.failure("a") is None
    assert not checkpoints.newer_here("a")


def test_now_writes_at_once_and_reports_success() -> None:
    store = Counted()
    checkpoints = Checkpoints(store, stepping=lambda: 0)
    assert checkpoints.now(session("a")) is None
    assert store.saves == [["a"]] and "a" in store.saved and not checkpoints.newer_here("a")


def test_a_store_that_cannot_write_is_the_result_and_the_next_save_that_works_clears_it() -> None:
    store = Counted()
    store.bad = "a"
    checkpoints = Checkpoints(store, stepping=lambda: 0)
    a = session("a")
    failure = checkpoints.now(a)
    assert isinstance(failure, StoreUnavailable) and checkpoints.failure("a") is failure
    assert checkpoints.newer_here("a") and "a" not in store.saved
    store.bad = ""
    assert checkpoints.now(a) is None and checkpoints.failure("a") is None and "a" in store.saved


def test_a_failure_of_one_session_is_not_another_s() -> None:
    store = Counted()
    store.bad = "a"
    checkpoints = Checkpoints(store, stepping=lambda: 0)
    checkpoints.now(session("a"))
    assert checkpoints.now(session("b")) is None and checkpoints.failure("b") is None


@pytest.mark.asyncio
async def test_commits_in_one_turn_of_the_loop_land_in_one_save() -> None:
    store = Counted()
    checkpoints = Checkpoints(store, stepping=lambda: 3)
    results = await asyncio.gather(*(checkpoints.commit(session(sid)) for sid in "abc"))
    assert results == [None, None, None] and store.saves == [["a", "b", "c"]]


@pytest.mark.asyncio
async def test_a_commit_with_no_other_session_stepping_is_saved_before_it_yields() -> None:
    store = Counted()
    checkpoints = Checkpoints(store, stepping=lambda: 1)
    commit = checkpoints.commit(session("a"))
    assert await commit is None and store.saves == [["a"]]
    ran_between = []
    loop = asyncio.get_running_loop()
    loop.call_soon(ran_between.append, True)
    await checkpoints.commit(session("b"))  # no turn of the loop: the callback has not run yet
    assert ran_between == [] and store.saves[-1] == ["b"]


@pytest.mark.asyncio
async def test_a_session_the_store_refuses_costs_only_itself_in_a_group() -> None:
    store = Counted()
    store.bad = "b"
    checkpoints = Checkpoints(store, stepping=lambda: 3)
    a, b, c = await asyncio.gather(*(checkpoints.commit(session(sid)) for sid in "abc"))
    assert a is None and c is None and isinstance(b, StoreUnavailable)
    assert store.saves == [["a", "b", "c"], ["a"], ["b"], ["c"]]
    assert sorted(store.saved) == ["a", "c"] and checkpoints.newer_here("b")


@pytest.mark.asyncio
async def test_a_store_that_breaks_raises_to_every_commit_of_the_group() -> None:
    store = BrokenStore()
    checkpoints = Checkpoints(store, stepping=lambda: 2)
    broken = [session("a"), session("b")]
    for each in broken:
        each.steps.append(StepRecord(0))  # BrokenStore breaks on a session with a step
    outcomes = await asyncio.gather(*(checkpoints.commit(s) for s in broken), return_exceptions=True)
    assert [type(o) for o in outcomes] == [RuntimeError, RuntimeError]


@pytest.mark.asyncio
async def test_soon_lands_at_the_next_turn_with_the_commits_of_that_turn() -> None:
    store = Counted()
    checkpoints = Checkpoints(store, stepping=lambda: 2)
    checkpoints.soon(session("a"))
    assert store.saves == [] and checkpoints.newer_here("a")
    assert await checkpoints.commit(session("b")) is None
    assert store.saves == [["a", "b"]] and not checkpoints.newer_here("a")


@pytest.mark.asyncio
async def test_soon_alone_is_written_by_the_loop() -> None:
    store = Counted()
    checkpoints = Checkpoints(store, stepping=lambda: 0)
    checkpoints.soon(session("a"))
    checkpoints.soon(session("a"))  # asked twice in one turn: written once
    await asyncio.sleep(0)
    assert store.saves == [["a"]]


@pytest.mark.asyncio
async def test_a_commit_cancelled_while_it_waits_is_still_saved() -> None:
    store = Counted()
    checkpoints = Checkpoints(store, stepping=lambda: 2)
    waiting = asyncio.ensure_future(checkpoints.commit(session("a")))
    await asyncio.sleep(0)  # the commit now waits for the loop's next turn
    waiting.cancel()
    with pytest.raises(asyncio.CancelledError):
        await waiting
    assert store.saves == [["a"]]


def test_a_forgotten_session_is_no_longer_due_or_failed() -> None:
    store = Counted()
    store.bad = "a"
    checkpoints = Checkpoints(store, stepping=lambda: 0)
    checkpoints.now(session("a"))
    checkpoints.drop("a")
    assert checkpoints.failure("a") is None and not checkpoints.newer_here("a")

