"""`acp.requests.InFlight` in one process: a request known by the id its line carried is cancelled by
`$/cancel_request` into the error -32800, a prompt is ended through the session instead, and anything
else (an unknown id, bad params, a request already answered) is left alone."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest
from acp import RequestError
from mini_agent.acp.requests import InFlight
from mini_agent.acp.transport import REQUEST_ID


async def handled(in_flight: InFlight, request_id: Any, method: str, params: Any, work: Any) -> Any:
    """Run `work` as the SDK runs a handler: in its own task, started where the line's id was set."""
    REQUEST_ID.set(request_id)

    async def handler() -> Any:
        with in_flight.handling(method, params):
            return await work

    return await asyncio.create_task(handler())


@pytest.mark.asyncio
async def test_a_running_request_is_cancelled_into_minus_32800_and_the_handler_stops() -> None:
    in_flight = InFlight(lambda sid: asyncio.sleep(0))
    task = asyncio.ensure_future(handled(in_flight, 7, "session/load", {"sessionId": "s"}, asyncio.sleep(30)))
    await asyncio.sleep(0.01)
    await in_flight.cancel({"requestId": 7})
    with pytest.raises(RequestError) as caught:
        await task
    assert caught.value.code == -32800 and "session/load" in str(caught.value)
    assert caught.value.data == {"requestId": 7}


@pytest.mark.asyncio
async def test_a_prompt_is_ended_through_its_session_not_by_cancelling_its_task() -> None:
    cancelled: list[str] = []

    async def cancel_prompt(session_id: str) -> None:
        cancelled.append(session_id)

    in_flight = InFlight(cancel_prompt)
    work = asyncio.sleep(0.05, "done")
    answer = asyncio.ensure_future(handled(in_flight, "p1", "session/prompt", {"sessionId": "s1"}, work))
    await asyncio.sleep(0.01)
    await in_flight.cancel({"requestId": "p1"})
    assert await answer == "done" and cancelled == ["s1"]


@pytest.mark.asyncio
@pytest.mark.parametrize("params", [{"requestId": 99}, {"id": 7}, {"requestId": True}, "7", None])
async def test_an_unknown_id_or_bad_params_change_nothing(params: Any) -> None:
    in_flight = InFlight(lambda sid: asyncio.sleep(0))
    task = asyncio.ensure_future(handled(in_flight, 7, "session/new", {}, asyncio.sleep(0.05, "made")))
    await asyncio.sleep(0.01)
    await in_flight.cancel(params)
    assert await task == "made"
    await in_flight.cancel({"requestId": 7})  # answered already: nothing to do
