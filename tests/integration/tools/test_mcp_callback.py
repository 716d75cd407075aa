"""The loopback listener an OAuth sign-in comes back to, over real HTTP on 127.0.0.1."""

from __future__ import annotations

import asyncio

import httpx2
import pytest
from mini_agent.core.asking import ElicitAnswer, Elicitation
from mini_agent.tools.mcp import callback
from mini_agent.tools.mcp.asking import Asking
from mini_agent.tools.mcp.auth import Login


async def _get(port: int, target: str) -> httpx2.Response:
    async with httpx2.AsyncClient(timeout=10) as browser:
        return await browser.get(f"http://127.0.0.1:{port}{target}")


@pytest.mark.asyncio
async def test_only_the_redirect_with_this_sign_ins_state_is_taken() -> None:
    listener = callback.Listener(callback.free_port())
    await listener.start("state-1")
    waiting = asyncio.create_task(listener.result())
    assert (await _get(listener.port, "/callback?code=forged&state=other")).status_code == 400
    assert (await _get(listener.port, "/elsewhere?code=c&state=state-1")).status_code == 400
    page = await _get(listener.port, "/callback?code=the-code&state=state-1")
    assert page.status_code == 200 and "Signed in" in page.text
    result = await waiting
    assert (result.code, result.state) == ("the-code", "state-1")
    with pytest.raises(httpx2.ConnectError):  # stopped once the sign-in is over
        await _get(listener.port, "/callback?code=again&state=state-1")


@pytest.mark.asyncio
async def test_a_refused_sign_in_ends_the_wait_with_the_reason() -> None:
    listener = callback.Listener(callback.free_port())
    await listener.start("s")
    waiting = asyncio.create_task(listener.result())
    await _get(listener.port, "/callback?error=access_denied&state=s")
    with pytest.raises(callback.LoginFailed, match="the sign-in was refused: access_denied"):
        await waiting


@pytest.mark.asyncio
async def test_the_wait_is_bounded() -> None:
    listener = callback.Listener(callback.free_port())
    await listener.start("s")
    with pytest.raises(callback.LoginFailed, match=r"no sign-in within 0\.2 s"):
        await listener.result(wait=0.2)


@pytest.mark.asyncio
async def test_an_oversized_request_is_refused() -> None:
    listener = callback.Listener(callback.free_port())
    await listener.start("s")
    try:
        huge = "x" * (callback.MAX_REQUEST_BYTES + 1)
        assert (await _get(listener.port, f"/callback?state=s&pad={huge}")).status_code == 400
    finally:
        await listener.stop()


@pytest.mark.asyncio
async def test_a_silent_connection_is_closed_when_the_sign_in_is_over() -> None:
    listener = callback.Listener(callback.free_port())
    await listener.start("s")
    silent_reader, silent_writer = await asyncio.open_connection(callback.HOST, listener.port)
    waiting = asyncio.create_task(listener.result())
    await _get(listener.port, "/callback?code=c&state=s")
    assert (await asyncio.wait_for(waiting, 30)).code == "c"
    assert await asyncio.wait_for(silent_reader.read(), 30) == b""  # the listener's stop closed it
    silent_writer.close()


class _Away:
    """A person whose client never answers the request to open the page."""

    async def elicit(self, request: Elicitation) -> ElicitAnswer:
        return ElicitAnswer.declined()

    async def open_url(self, session_id: str, url: str, purpose: str) -> bool:
        await asyncio.Event().wait()
        return False


@pytest.mark.asyncio
async def test_a_client_that_never_answers_the_request_to_open_the_page_ends_the_sign_in() -> None:
    asking = Asking(_Away(), "remote")
    listener = callback.Listener(callback.free_port())
    login = Login("remote", asking, listener, None, wait=0.2)
    with asking.starting("session-1"), pytest.raises(callback.LoginFailed, match=r"no sign-in within 0\.2 s"):
        await asyncio.wait_for(login.open("http://127.0.0.1:1/authorize?state=s"), 30)
    with pytest.raises(httpx2.ConnectError):  # the listener stopped with it
        await _get(listener.port, "/callback?code=c&state=s")
