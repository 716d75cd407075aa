"""Model servers that never stop, or reply too much, or are not there: each step ends with one
error a person can act on, through the real daemon over stdio."""

from __future__ import annotations

import asyncio
import socket
from collections.abc import Callable
from typing import Any

import pytest
from mini_agent.scripted import ReplayServer

from ...support.hostile import Behaviour, HostileServer

HANG_GUARD_S = 120  # a step that never ends fails the test instead of hanging the suite


async def failed_step(daemon_factory: Callable[..., Any], llm: dict[str, Any]) -> tuple[dict[str, Any], Any]:
    client = await daemon_factory({"llm": {"maxRetries": 0, **llm}, "store": {"enabled": False}})
    session_id = (await client.request("agent/startSession", {"task": "hello"}))["sessionId"]
    async with asyncio.timeout(HANG_GUARD_S):
        result = await client.request("agent/step", {"sessionId": session_id})
    assert result["stopReason"] == "error" and result["status"] == "ready", result
    return result, client


@pytest.mark.asyncio
@pytest.mark.parametrize(
    ("behaviour", "llm", "named"),
    [
        ("tokens", {"maxTokens": 50}, "llm.maxTokens"),
        ("pings", {"requestTimeoutSec": 1.5}, "llm.requestTimeoutSec"),
        ("endless_line", {"maxReplyBytes": 1 << 20}, "llm.maxReplyBytes"),
        ("huge", {"maxReplyBytes": 1 << 20, "stream": False}, "llm.maxReplyBytes"),
    ],
)
async def test_an_unbounded_reply_ends_the_step_with_an_error_naming_the_setting(
    behaviour: Behaviour, llm: dict[str, Any], named: str, daemon_factory: Callable[..., Any]
) -> None:
    async with HostileServer(behaviour) as model:
        result, client = await failed_step(daemon_factory, {"baseUrl": model.base_url, **llm})
    assert model.base_url in result["error"] and named in result["error"], result["error"]
    assert model.requests == 1
    streamed = sum(len(u["update"].get("text", "")) for u in client.updates)
    assert streamed <= llm.get("maxReplyBytes", 1 << 20)  # what reached the client is bounded too


@pytest.mark.asyncio
async def test_a_refused_connection_is_one_message_in_words_without_retries(
    daemon_factory: Callable[..., Any],
) -> None:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        url = f"http://127.0.0.1:{probe.getsockname()[1]}/v1"
    result, client = await failed_step(daemon_factory, {"baseUrl": url, "maxRetries": 3})
    error = result["error"]
    assert error.startswith(f"The model server at {url} could not be used: the connection was refused")
    assert "OPENAI_BASE_URL" in error and "--base-url" in error and "miniAgent.baseUrl" in error
    assert "ClientConnectorError" not in error and "tries" not in error
    status = [u["update"] for u in client.updates if u["update"]["kind"] == "status"][-1]
    assert status["message"] == error


@pytest.mark.asyncio
async def test_an_http_error_carries_the_servers_own_message(daemon_factory: Callable[..., Any]) -> None:
    script = {"turns": [{"status": 404, "error": "The model 'gpt-9' does not exist"}], "repeat_last": True}
    async with ReplayServer(script) as model:
        result, _ = await failed_step(daemon_factory, {"baseUrl": model.base_url})
    assert result["error"].startswith(f"The model server at {model.base_url} could not be used: ")
    assert "HTTP 404: The model 'gpt-9' does not exist" in result["error"]
    assert "check the base URL" in result["error"]


@pytest.mark.asyncio
async def test_a_retry_is_announced_before_it_waits(daemon_factory: Callable[..., Any]) -> None:
    """A person sees why nothing happens while the daemon waits to ask an overloaded server again."""
    script = {"turns": [{"status": 503, "error": "the model is still loading", "retry_after": 0.2},
                        {"content": "Thought: done\nFinal Answer: ready"}]}
    async with ReplayServer(script) as model:
        client = await daemon_factory({"llm": {"baseUrl": model.base_url, "maxRetries": 2},
                                       "store": {"enabled": False}})
        session_id = (await client.request("agent/startSession", {"task": "hello"}))["sessionId"]
        async with asyncio.timeout(HANG_GUARD_S):
            result = await client.request("agent/step", {"sessionId": session_id})
    assert result["finalAnswer"] == "ready"
    notices = [u["update"]["message"] for u in client.updates
               if u["update"]["kind"] == "status" and u["update"].get("message")]
    assert notices == [
        f"The model server at {model.base_url} could not be used: it answered HTTP 503: the model is still "
        "loading; "
        "trying again in 0.2 s (try 2 of 3)."
    ]
