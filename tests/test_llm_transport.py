"""The model client over a fake transport: what it makes of streamed and whole replies, HTTP errors,
broken connections and servers that ignore `stop`, with no socket at all (sockets are refused here)."""

from __future__ import annotations

import contextlib
import json
import socket
from collections.abc import AsyncIterator, Iterator, Mapping
from dataclasses import dataclass, field
from typing import Any

import pytest
from mini_agent.contracts import LLMConfig, LLMError, Message, Role, TokenUsage, ToolSpec
from mini_agent.llm.client import OpenAICompatibleClient
from mini_agent.llm.transport import TransportError

HISTORY = (Message(Role.SYSTEM, "Be terse."), Message(Role.USER, "2 + 3?"))
ADD = ToolSpec("add", "Add.", {"type": "object", "properties": {"a": {"type": "number"}}})


@dataclass
class FakeReply:
    body: list[bytes]
    status: int = 200
    content_type: str = "text/event-stream"
    content_length: int | None = None
    headers: Mapping[str, str] = field(default_factory=dict)
    closed: bool = False

    async def read(self) -> bytes:
        return b"".join(self.body)

    async def chunks(self) -> AsyncIterator[bytes]:
        for piece in self.body:
            yield piece

    def close(self) -> None:
        self.closed = True


class FakeTransport:
    def __init__(self, *replies: FakeReply | Exception) -> None:
        self.replies = list(replies)
        self.requests: list[tuple[str, dict[str, Any], dict[str, str]]] = []

    @contextlib.asynccontextmanager
    async def post(
        self, url: str, body: bytes, headers: Mapping[str, str], timeout_sec: float
    ) -> AsyncIterator[FakeReply]:
        self.requests.append((url, json.loads(body), dict(headers)))
        reply = self.replies.pop(0)
        if isinstance(reply, Exception):
            raise reply
        yield reply

    async def aclose(self) -> None:
        pass


def sse(*texts: str, usage: tuple[int, int] = (7, 3)) -> list[bytes]:
    """A streamed completion, one event per text, then usage and [DONE], cut into odd network pieces."""
    events = [{"choices": [{"index": 0, "delta": {"content": t}, "finish_reason": None}]} for t in texts]
    events.append({"choices": [{"index": 0, "delta": {}, "finish_reason": "stop"}]})
    events.append({"choices": [], "usage": {"prompt_tokens": usage[0], "completion_tokens": usage[1]}})
    stream = "".join(f"data: {json.dumps(event)}\n\n" for event in events) + "data: [DONE]\n\n"
    raw = stream.encode()
    return [raw[i : i + 37] for i in range(0, len(raw), 37)]


def whole(content: str) -> FakeReply:
    body = {"choices": [{"message": {"content": content}, "finish_reason": "stop"}], "usage": {}}
    return FakeReply([json.dumps(body).encode()], content_type="application/json")


def error(status: int, message: str, retry_after: str | None = None) -> FakeReply:
    headers = {"Retry-After": retry_after} if retry_after is not None else {}
    body = json.dumps({"error": {"message": message}}).encode()
    return FakeReply([body], status=status, content_type="application/json", headers=headers)


def settings(**changes: Any) -> LLMConfig:
    return LLMConfig(base_url="http://model.invalid/v1", model="m", api_key="k", **changes)


@pytest.fixture(autouse=True)
def no_sockets(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    def refuse(*args: Any, **kwargs: Any) -> None:
        raise AssertionError("a socket was opened")

    monkeypatch.setattr(socket.socket, "connect", refuse)
    monkeypatch.setattr(socket, "getaddrinfo", refuse)
    yield


def client(transport: FakeTransport) -> OpenAICompatibleClient:
    return OpenAICompatibleClient(backoff_base=0.0, backoff_cap=0.0, transport=transport)


@pytest.mark.asyncio
async def test_a_streamed_answer_arrives_whole_and_as_deltas() -> None:
    transport = FakeTransport(FakeReply(sse("Thought: easy.\nFinal ", "Answer: 5")))
    seen: list[str] = []
    response = await client(transport).generate(HISTORY, [], settings(), seen.append)
    assert response.final_answer == "5" and "".join(seen) == response.content
    assert response.usage == TokenUsage(7, 3, 0)
    url, payload, headers = transport.requests[0]
    assert url == "http://model.invalid/v1/chat/completions" and headers["Authorization"] == "Bearer k"
    assert payload["stream"] is True and payload["messages"][1]["content"] == "2 + 3?"


@pytest.mark.asyncio
async def test_a_stream_that_ignores_stop_is_cut_and_hung_up_on() -> None:
    runaway = FakeReply(sse('Action: add\nAction Input: {"a": 1}\nObservation: 99', " and more"))
    response = await client(FakeTransport(runaway)).generate(HISTORY, [ADD], settings(), None)
    assert "Observation" not in response.content and response.tool_calls[0].arguments == {"a": 1}
    assert runaway.closed


@pytest.mark.asyncio
async def test_retry_after_and_a_broken_connection_are_retried() -> None:
    transport = FakeTransport(
        error(503, "busy", retry_after="0"), TransportError("reset"), whole("Final Answer: ok")
    )
    response = await client(transport).generate(HISTORY, [], settings(stream=False), None)
    assert response.final_answer == "ok" and len(transport.requests) == 3


@pytest.mark.asyncio
async def test_retries_end_with_an_error_that_names_the_url_and_the_tries() -> None:
    transport = FakeTransport(*(TransportError("reset") for _ in range(3)))
    with pytest.raises(LLMError) as caught:
        await client(transport).generate(HISTORY, [], settings(max_retries=2), None)
    assert "model.invalid" in str(caught.value) and "after 3 tries" in str(caught.value)


@pytest.mark.asyncio
async def test_a_client_error_is_not_retried() -> None:
    transport = FakeTransport(error(401, "bad key"), whole("never"))
    with pytest.raises(LLMError) as caught:
        await client(transport).generate(HISTORY, [], settings(), None)
    assert caught.value.status == 401 and len(transport.requests) == 1


@pytest.mark.asyncio
async def test_auto_mode_moves_on_when_the_server_refuses_tools_then_response_format() -> None:
    transport = FakeTransport(
        error(400, "tools are not supported"),
        error(400, "response_format json_schema is not supported"),
        error(400, "response_format json_object is not supported"),
        FakeReply(sse("Final Answer: 5")),
    )
    response = await client(transport).generate(HISTORY, [ADD], settings(tool_mode="auto"), None)
    assert response.final_answer == "5" and response.tool_mode == "react"
    native, schema, json_object, react = (request[1] for request in transport.requests)
    assert "tools" in native and schema["response_format"]["type"] == "json_schema"
    assert json_object["response_format"]["type"] == "json_object"
    assert "tools" not in react and "response_format" not in react


@pytest.mark.asyncio
async def test_a_body_that_is_no_completion_is_an_error_at_once() -> None:
    transport = FakeTransport(FakeReply([b"<html>proxy</html>"], content_type="text/html"), whole("x"))
    with pytest.raises(LLMError, match="not a chat completion"):
        await client(transport).generate(HISTORY, [], settings(), None)
    assert len(transport.requests) == 1
