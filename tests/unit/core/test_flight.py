"""The flight owns a step's cancellation: `cancel` throws the switch, `race` turns it into StepCancelled."""

from __future__ import annotations

import asyncio
import contextlib
import gc
import warnings

import pytest
from mini_agent.core.flight import Flight, StepCancelled


@pytest.mark.asyncio
async def test_race_returns_what_the_work_returns_when_nobody_cancels() -> None:
    flight = Flight()

    async def work() -> str:
        await asyncio.sleep(0)
        return "done"

    assert await flight.race(work()) == "done"
    assert not flight.cancelled and flight.quiet


@pytest.mark.asyncio
async def test_race_runs_the_work_in_the_step_s_own_task_and_turns_the_switch_into_step_cancelled() -> None:
    flight, seen = Flight(), []

    async def work() -> None:
        seen.append(asyncio.current_task())
        await asyncio.Event().wait()

    async def step() -> int:
        with pytest.raises(StepCancelled):
            await flight.race(work())
        async with asyncio.timeout(5):  # the switch's cancel was taken back: later waits are plain
            await asyncio.sleep(0)
        task = asyncio.current_task()
        assert task is not None
        return task.cancelling()

    stepping = asyncio.create_task(step())
    await asyncio.sleep(0.01)
    flight.cancel()
    assert await stepping == 0 and seen == [stepping] and flight.quiet and flight.cancelled


@pytest.mark.asyncio
async def test_race_ends_in_step_cancelled_when_the_work_swallows_the_switch_s_cancel() -> None:
    flight = Flight()

    async def stubborn() -> str:
        with contextlib.suppress(asyncio.CancelledError):
            await asyncio.Event().wait()
        return "went on"

    stepping = asyncio.create_task(flight.race(stubborn()))
    await asyncio.sleep(0.01)
    flight.cancel()
    with pytest.raises(StepCancelled):
        await stepping
    assert flight.quiet


@pytest.mark.asyncio
async def test_a_cancel_from_outside_the_flight_passes_through_race_even_with_the_switch_thrown() -> None:
    for switch_too in (False, True):
        flight = Flight()
        stepping = asyncio.create_task(flight.race(asyncio.Event().wait()))
        await asyncio.sleep(0.01)
        if switch_too:
            flight.cancel()
        stepping.cancel()
        with pytest.raises(asyncio.CancelledError):
            await stepping


@pytest.mark.asyncio
async def test_race_on_a_cancelled_flight_never_starts_the_work() -> None:
    flight, started = Flight(), []

    async def work() -> None:
        started.append(True)

    flight.cancel()
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # "coroutine was never awaited" would be one
        with pytest.raises(StepCancelled):
            await flight.race(work())
        gc.collect()
    assert started == []


@pytest.mark.asyncio
async def test_a_future_raced_on_a_cancelled_flight_is_cancelled() -> None:
    flight = Flight()
    flight.cancel()
    future: asyncio.Future[int] = asyncio.get_running_loop().create_future()
    with pytest.raises(StepCancelled):
        await flight.race(future)
    assert future.cancelled()


@pytest.mark.asyncio
async def test_one_switch_stops_every_task_racing_on_the_flight() -> None:
    flight = Flight()
    racing = [asyncio.create_task(flight.race(asyncio.Event().wait())) for _ in range(3)]
    await asyncio.sleep(0.01)
    flight.cancel()
    outcomes = await asyncio.gather(*racing, return_exceptions=True)
    assert all(isinstance(outcome, StepCancelled) for outcome in outcomes) and flight.quiet


@pytest.mark.asyncio
async def test_cancelling_twice_sends_one_cancel() -> None:
    flight = Flight()

    async def step() -> int:
        with pytest.raises(StepCancelled):
            await flight.race(asyncio.Event().wait())
        task = asyncio.current_task()
        assert task is not None
        return task.cancelling()

    stepping = asyncio.create_task(step())
    await asyncio.sleep(0.01)
    flight.cancel()
    flight.cancel()
    assert await stepping == 0
