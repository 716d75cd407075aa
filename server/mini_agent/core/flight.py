"""A flight: one session being stepped right now, with the switch that cancels it.

The flight owns both sides of cancellation: `cancel` throws the switch, and `race` awaits a step's
work unless the switch is thrown first, turning it into `StepCancelled`. The raced work runs in the
step's own task (no task of its own, no extra turn of the event loop); the switch cancels that task
while it races, and `race` takes the cancel back, so a cancel from anyone else still passes through.
"""

from __future__ import annotations

import asyncio
import inspect
from collections.abc import Awaitable
from typing import Any, TypeVar

T = TypeVar("T")


class StepCancelled(Exception):
    """Raised inside a step when its session's flight is cancelled."""


class Flight:
    __slots__ = ("_cancelled", "_racing", "_struck")

    def __init__(self) -> None:
        self._cancelled = False
        self._racing: set[asyncio.Task[Any]] = set()  # tasks awaiting work in `race`
        self._struck: set[asyncio.Task[Any]] = set()  # those the switch has cancelled

    @property
    def cancelled(self) -> bool:
        return self._cancelled

    @property
    def quiet(self) -> bool:
        """True when no task races here and no cancel of the switch is left to take back."""
        return not self._racing and not self._struck

    def cancel(self) -> None:
        """Throw the switch: work racing now is stopped, and work raced later never starts."""
        self._cancelled = True
        for task in self._racing - self._struck:
            self._struck.add(task)
            task.cancel()

    async def race(self, work: Awaitable[T]) -> T:
        """Await `work` unless the flight is cancelled first; then stop it and raise StepCancelled."""
        task = asyncio.current_task()
        assert task is not None, "race runs in a task"
        if self._cancelled:
            _drop(work)
            raise StepCancelled
        self._racing.add(task)
        try:
            result = await work
        except asyncio.CancelledError:
            if self._stood_down(task):
                raise StepCancelled from None
            raise
        finally:
            self._racing.discard(task)
        if self._stood_down(task):  # the work swallowed the cancel
            raise StepCancelled
        return result

    def _stood_down(self, task: asyncio.Task[Any]) -> bool:
        """Take back the cancel the switch sent `task`; True when no other cancel is pending on it."""
        if task not in self._struck:
            return False
        self._struck.discard(task)
        return task.uncancel() == 0


def _drop(work: Awaitable[Any]) -> None:
    if inspect.iscoroutine(work):
        work.close()
    elif isinstance(work, asyncio.Future):
        work.cancel()
