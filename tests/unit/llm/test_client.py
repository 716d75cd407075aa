"""The model client over the fake transport (`mini_agent.llm.fake`): what it sends, what it makes of
streamed and whole replies, and how it retries, falls back between tool modes and words its errors,
with no socket at all. What only a wire shows stays in tests/integration/llm/test_llm_client.py."""

from __future__ import annotations

import asyncio
import dataclasses
import json
import time
from collections.abc import AsyncIterator
from typing import Any

import pytest
from mini_agent.core.contracts import (
    Harness,
    LLMConfig,
    LLMError,
    LLMResponse,
    Message,
    Role,
    TokenUsage,
    ToolCall,
    ToolSpec,
)
from mini_agent.llm import react, reactprompt
from mini_agent.llm.client import OpenAICompatibleClient
from mini_agent.llm.fake import FakeReply, FakeTransport

from ...support.completions import events, sse, whole

BASE = "http://model.invalid/v1"
HISTORY = (Message(Role.SYSTEM, "Be terse."), Message(Role.USER, "2 + 3?"))
ADD = ToolSpec("add", "Add.", {"type": "object", "properties": {"a": {"type": "number"}}})
ACTION = 'Thought: I should add.\nAction: add\nAction Input: {"a": 2, "b": 3}'


def error(status: int, message: str, retry_after: str | None = None) -> FakeReply:
    headers = {"Retry-After": retry_after} if retry_after is not None else {}
    return FakeReply(status, json.dumps({"error": {"message": message}}).encode(), headers=headers)


def settings(**changes: Any) -> LLMConfig:
    return LLMConfig(**{"base_url": BASE, "model": "m", "api_key": "k", **changes})


def client(transport: FakeTransport) -> OpenAICompatibleClient:
    return OpenAICompatibleClient(backoff_base=0.0, backoff_cap=0.0, transport=transport)


def sent(transport: FakeTransport) -> list[dict[str, Any]]:
    return [request.json() for request in transport.requests]


# --- what is sent, what is made of the reply -------------------------------------------------------


@pytest.mark.asyncio
async def test_a_streamed_answer_arrives_whole_and_as_deltas() -> None:
    transport = FakeTransport.replying(sse("Thought: easy.\nFinal ", "Answer: 5"))
    seen: list[str] = []
    response = await client(transport).generate(HISTORY, [], settings(), seen.append)
    assert response.final_answer == "5" and "".join(seen) == response.content
    assert response.usage == TokenUsage(7, 3, 0)
    request = transport.requests[0]
    assert request.url == BASE + "/chat/completions" and request.headers["Authorization"] == "Bearer k"
    payload = request.json()
    assert payload["stream"] is True and payload["messages"][1]["content"] == "2 + 3?"


@pytest.mark.asyncio
async def test_react_mode_sends_the_rendered_history_and_the_stop_strings() -> None:
    transport = FakeTransport.replying(sse(ACTION))
    response = await client(transport).generate(HISTORY, [ADD], settings(tool_mode="react"))
    call = response.tool_calls[0]
    assert call.id.startswith("call_")
    assert response == LLMResponse(
        content=ACTION,
        thought="I should add.",
        tool_calls=(ToolCall(call.id, "add", {"a": 2, "b": 3}, '{"a": 2, "b": 3}'),),
        usage=TokenUsage(7, 3, 0),
        finish_reason="stop",
        tool_mode="react",
    )
    (payload,) = sent(transport)
    assert payload["messages"] == reactprompt.render_messages(HISTORY, [ADD])
    assert payload["stop"] == list(react.STOP_SEQUENCES) and "tools" not in payload
    assert payload["stream"] is True and payload["stream_options"] == {"include_usage": True}
    assert (payload["model"], payload["max_tokens"], payload["temperature"]) == ("m", 1024, 0.0)


@pytest.mark.asyncio
@pytest.mark.parametrize("stream", [True, False])
async def test_a_server_that_ignores_stop_is_cut_client_side(stream: bool) -> None:
    content = ACTION + "\nObservation: 99\nThought: done\nFinal Answer: 99"
    reply = sse(content[:30], content[30:]) if stream else whole(content)
    response = await client(FakeTransport.replying(reply)).generate(
        HISTORY, [ADD], settings(tool_mode="react", stream=stream)
    )
    assert response.content == ACTION
    assert response.final_answer is None and response.tool_calls[0].name == "add"
    assert reply.closed == stream  # a stream running past the stop is hung up on


@pytest.mark.asyncio
async def test_streamed_and_whole_replies_parse_the_same() -> None:
    text = "Thought: easy\nFinal Answer: 5\nObservation: junk"
    transport = FakeTransport.replying(sse(text[:9], text[9:]), whole(text))
    llm = client(transport)
    streamed = await llm.generate(HISTORY, [ADD], settings(tool_mode="react"))
    whole_reply = await llm.generate(HISTORY, [ADD], settings(tool_mode="react", stream=False))
    assert whole_reply.final_answer == "5" and whole_reply.content == "Thought: easy\nFinal Answer: 5"
    assert dataclasses.replace(streamed, usage=whole_reply.usage) == whole_reply


@pytest.mark.asyncio
async def test_native_calls_streamed_in_pieces_are_joined_and_the_history_is_sent_as_openai_wants() -> None:
    history = (
        *HISTORY,
        Message(Role.ASSISTANT, "Adding.", tool_calls=(ToolCall("call_1", "add", {"a": 2}, '{"a":2}'),)),
        Message(Role.TOOL, "5", tool_call_id="call_1", name="add"),
        Message(Role.TOOL, "a note from the runtime"),
    )
    pieces = events(
        {"content": "Two sums."},
        {"tool_calls": [{"index": 0, "id": "call_a", "function": {"name": "add", "arguments": '{"a": '}}]},
        {"tool_calls": [{"index": 0, "function": {"arguments": "1}"}}]},
        {"tool_calls": [{"index": 1, "function": {"name": "add", "arguments": '{"a": "x"}'}}]},
        finish="tool_calls",
    )
    transport = FakeTransport.replying(FakeReply(200, pieces, content_type="text/event-stream"))
    response = await client(transport).generate(history, [ADD], settings(tool_mode="native"))
    first, second = response.tool_calls
    assert (response.content, response.thought) == ("Two sums.", "Two sums.")
    assert response.finish_reason == "tool_calls"
    assert first == ToolCall("call_a", "add", {"a": 1}, '{"a": 1}')
    assert (second.name, second.arguments) == ("add", {"a": "x"}) and second.id.startswith("call_")
    (payload,) = sent(transport)
    assert payload["tools"] == [ADD.to_openai()] and "stop" not in payload
    assert payload["messages"][2:] == [
        {"role": "assistant", "content": "Adding.", "tool_calls": [
            {"id": "call_1", "type": "function", "function": {"name": "add", "arguments": '{"a":2}'}}
        ]},
        {"role": "tool", "tool_call_id": "call_1", "content": "5"},
        {"role": "user", "content": "Observation: a note from the runtime"},
    ]


@pytest.mark.asyncio
async def test_native_text_is_the_final_answer_and_bad_arguments_are_reported() -> None:
    calls = [
        {"function": {"name": "add", "arguments": '{"a": 2,'}},
        {"function": {"name": "add", "arguments": "[1]"}},
    ]
    transport = FakeTransport.replying(whole("It is 5."), whole(""), whole("", calls, "tool_calls"))
    llm, config = client(transport), settings(tool_mode="native", stream=False)
    answer = await llm.generate(HISTORY, [ADD], config)
    empty = await llm.generate(HISTORY, [ADD], config)
    broken = await llm.generate(HISTORY, [ADD], config)
    assert (answer.final_answer, answer.thought, answer.tool_calls) == ("It is 5.", "", ())
    assert empty.final_answer is None and empty.format_error and "empty" in empty.format_error
    first, second = broken.tool_calls
    assert (first.raw_arguments, first.arguments) == ('{"a": 2,', {})
    assert first.parse_error and "not valid JSON" in first.parse_error
    assert second.parse_error and "JSON object" in second.parse_error


@pytest.mark.asyncio
async def test_a_body_that_is_no_completion_is_an_error_at_once() -> None:
    transport = FakeTransport.replying(FakeReply(200, b"<html>proxy</html>", content_type="text/html"))
    with pytest.raises(LLMError, match="not a chat completion"):
        await client(transport).generate(HISTORY, [], settings(), None)
    assert len(transport.requests) == 1


# --- auto mode and json mode: falling back, and remembering ------------------------------------------


@pytest.mark.asyncio
async def test_auto_mode_moves_on_when_the_server_refuses_tools_then_response_format() -> None:
    transport = FakeTransport.replying(
        error(400, "tools are not supported"),
        error(400, "response_format json_schema is not supported"),
        error(400, "response_format json_object is not supported"),
        sse("Final Answer: 5"),
    )
    response = await client(transport).generate(HISTORY, [ADD], settings(tool_mode="auto"), None)
    assert response.final_answer == "5" and response.tool_mode == "react"
    native, schema, json_object, react_mode = sent(transport)
    assert "tools" in native and schema["response_format"]["type"] == "json_schema"
    assert json_object["response_format"]["type"] == "json_object"
    assert "tools" not in react_mode and "response_format" not in react_mode
    assert react_mode["stop"] == list(react.STOP_SEQUENCES)


@pytest.mark.asyncio
async def test_auto_mode_remembers_the_mode_that_worked() -> None:
    transport = FakeTransport.replying(
        error(400, "tools are not supported"),
        error(400, "json_schema is not supported"),
        error(400, "json_object is not supported"),
        sse(ACTION),
        sse("Thought: ok\nFinal Answer: 5"),
    )
    llm = client(transport)
    first = await llm.generate(HISTORY, [ADD], settings(tool_mode="auto"))
    second = await llm.generate(HISTORY, [ADD], settings(tool_mode="auto"))
    assert first.tool_mode == second.tool_mode == "react"
    assert first.tool_calls[0].name == "add" and second.final_answer == "5"
    assert ["tools" in body for body in sent(transport)] == [True, False, False, False, False]


@pytest.mark.asyncio
async def test_auto_uses_native_tools_when_the_server_takes_them() -> None:
    calls = [{"id": "c1", "function": {"name": "add", "arguments": '{"a": 1}'}}]
    transport = FakeTransport.replying(whole("", calls, "tool_calls"))
    response = await client(transport).generate(HISTORY, [ADD], settings(tool_mode="auto", stream=False))
    assert response.tool_mode == "native" and response.tool_calls[0].arguments == {"a": 1}
    assert len(transport.requests) == 1


@pytest.mark.asyncio
async def test_auto_asks_again_in_react_when_the_server_ignored_tools_and_stays_there() -> None:
    written = '```json\n{"name": "add", "arguments": {"a": 2}}\n```'
    react_call = 'Thought: add them\nAction: add\nAction Input: {"a": 2}'
    transport = FakeTransport.replying(sse(written), sse(react_call), sse("Thought: done\nFinal Answer: 5"))
    llm, notices = client(transport), []
    first = await llm.generate(HISTORY, [ADD], settings(tool_mode="auto"), on_retry=notices.append)
    second = await llm.generate(HISTORY, [ADD], settings(tool_mode="auto"))
    assert first.tool_mode == "react"
    assert [(c.name, c.arguments) for c in first.tool_calls] == [("add", {"a": 2})]
    assert second.tool_mode == "react" and second.final_answer == "5"
    # no json request: a server that ignores `tools` is asked in ReAct text, with its stop strings
    assert ["tools" in body for body in sent(transport)] == [True, False, False]
    assert ["response_format" in body for body in sent(transport)] == [False, False, False]
    assert sent(transport)[1]["stop"] == list(react.STOP_SEQUENCES)
    assert len(notices) == 1 and "ignored `tools`" in notices[0] and "ReAct text" in notices[0]


@pytest.mark.asyncio
async def test_native_mode_runs_a_call_written_as_text() -> None:
    written = 'I will add.\n<tool_call>\n{"name": "add", "arguments": {"a": 2}}\n</tool_call>'
    transport = FakeTransport.replying(sse(written))
    response = await client(transport).generate(HISTORY, [ADD], settings(tool_mode="native"))
    assert response.tool_mode == "native" and response.final_answer is None and response.content == written
    assert [(c.name, c.arguments) for c in response.tool_calls] == [("add", {"a": 2})]


@pytest.mark.asyncio
async def test_once_the_model_has_results_a_written_call_with_prose_after_it_is_an_example() -> None:
    shown = 'It is 5. Check it with:\n```json\n{"name": "add", "arguments": {"a": 2}}\n```\nThat adds.'
    done = Message(Role.ASSISTANT, "", tool_calls=(ToolCall("c1", "add", {"a": 2}, '{"a": 2}'),))
    answered = (*HISTORY, done, Message(Role.TOOL, "5", tool_call_id="c1"))
    transport = FakeTransport.replying(sse(shown), sse(shown), sse(shown), sse("Final Answer: 5"))
    llm = client(transport)
    after = await llm.generate(answered, [ADD], settings(tool_mode="native"))
    planned = await llm.generate(HISTORY, [ADD], settings(tool_mode="native"))  # no result yet: a plan
    assert after.final_answer == shown and after.tool_calls == ()
    assert [c.name for c in planned.tool_calls] == ["add"]
    noticed = await llm.generate(answered, [ADD], settings(tool_mode="auto"))  # auto: tools were ignored
    assert noticed.tool_mode == "react" and noticed.final_answer == "5"


@pytest.mark.asyncio
async def test_a_written_call_of_an_unlisted_tool_or_broken_json_is_no_answer() -> None:
    unlisted = '```json\n{"name": "Inventory", "arguments": {"path": "shop"}}\n```'
    broken = '{"name": "add", "arguments": {"a": count("x")}}'
    react_call = 'Thought: add\nAction: add\nAction Input: {"a": 2}'
    transport = FakeTransport.replying(sse(unlisted), sse(broken), sse(unlisted), sse(react_call))
    llm = client(transport)
    named = await llm.generate(HISTORY, [ADD], settings(tool_mode="native"))
    decoded = await llm.generate(HISTORY, [ADD], settings(tool_mode="native"))
    assert named.final_answer is None and named.tool_calls == () and named.format_error is not None
    assert "'Inventory', which is not a listed tool (the tools: add)" in named.format_error
    assert decoded.format_error is not None and "not one valid JSON object" in decoded.format_error
    # auto takes the attempt as a sign the server ignored `tools`, as it takes a written call
    asked_again = await llm.generate(HISTORY, [ADD], settings(tool_mode="auto"))
    assert asked_again.tool_mode == "react" and [c.name for c in asked_again.tool_calls] == ["add"]


@pytest.mark.asyncio
async def test_auto_keeps_a_turn_in_the_mode_it_began_in_and_starts_the_next_in_the_learned_one() -> None:
    transport = FakeTransport.replying(
        error(400, "tools are not supported"),
        sse('{"thought": "t", "action": {"final_answer": "5"}}'),
        whole("", [{"id": "c1", "function": {"name": "add", "arguments": '{"a": 1}'}}], "tool_calls"),
    )
    llm = client(transport)
    learned = await llm.generate(HISTORY, [ADD], settings(tool_mode="auto"))
    whole_reply = settings(tool_mode="auto", stream=False)
    same_turn = await llm.generate(HISTORY, [ADD], whole_reply, turn_mode="native")
    assert learned.tool_mode == "json" and same_turn.tool_mode == "native"
    assert ["tools" in body for body in sent(transport)] == [True, False, True]


@pytest.mark.asyncio
async def test_with_text_calls_off_a_written_call_stays_the_answer() -> None:
    written = '{"name": "add", "arguments": {"a": 2}}'
    transport = FakeTransport.replying(sse(written))
    config = settings(tool_mode="native", harness=Harness(text_calls=False))
    response = await client(transport).generate(HISTORY, [ADD], config)
    assert response.final_answer == written and response.tool_calls == ()


@pytest.mark.asyncio
async def test_json_mode_cannot_repeat_a_call_whose_result_is_in_hand_and_sends_the_seed() -> None:
    now = ToolSpec("now", "The time.", {"type": "object", "properties": {}})
    done = ToolCall("c1", "now", {}, "{}")
    result = Message(Role.TOOL, "12:00", tool_call_id="c1")
    history = (*HISTORY, Message(Role.ASSISTANT, "x", tool_calls=(done,)), result)
    transport = FakeTransport.replying(*(sse('{"thought": "t", "action": {"final_answer": "12:00"}}'),) * 2)
    llm = client(transport)
    await llm.generate(history, [now, ADD], settings(tool_mode="json", seed=7))
    await llm.generate(history, [now, ADD], settings(tool_mode="json", harness=Harness(prune_repeats=False)))
    pruned, kept = (body["response_format"]["json_schema"]["schema"] for body in sent(transport))
    branches = pruned["properties"]["action"]["anyOf"]
    offered = [branch["properties"].get("tool", {}).get("const") for branch in branches]
    assert offered == ["add", None]  # `now` left out; the answer stays
    assert len(kept["properties"]["action"]["anyOf"]) == 3
    assert sent(transport)[0]["seed"] == 7 and "seed" not in sent(transport)[1]
    assert "### now" in sent(transport)[0]["messages"][0]["content"]  # the prompt still lists it


@pytest.mark.asyncio
async def test_an_answer_only_turn_offers_json_no_tool_and_native_tool_choice_none() -> None:
    transport = FakeTransport.replying(
        sse('{"thought": "t", "action": {"final_answer": "5"}}'), whole("5"), whole("5")
    )
    llm = client(transport)
    await llm.generate(HISTORY, [ADD], settings(tool_mode="json"), answer_only=True)
    await llm.generate(HISTORY, [ADD], settings(tool_mode="native"), answer_only=True)
    await llm.generate(HISTORY, [ADD], settings(tool_mode="native"))
    as_json, last, other = sent(transport)
    branches = as_json["response_format"]["json_schema"]["schema"]["properties"]["action"]["anyOf"]
    assert [sorted(branch["properties"]) for branch in branches] == [["final_answer"]]
    assert "### add" in as_json["messages"][0]["content"]  # the prompt still lists the tool
    assert last["tool_choice"] == "none" and last["tools"] == other["tools"]  # kept, for the cache
    assert "tool_choice" not in other


# --- failures and retries --------------------------------------------------------------------------


@pytest.mark.asyncio
async def test_retry_after_and_a_broken_connection_are_retried() -> None:
    transport = FakeTransport.replying(
        error(503, "busy", retry_after="0"), ConnectionResetError(), whole("Final Answer: ok")
    )
    response = await client(transport).generate(HISTORY, [], settings(stream=False), None)
    assert response.final_answer == "ok" and len(transport.requests) == 3


@pytest.mark.asyncio
async def test_retry_after_is_honoured_over_the_backoff() -> None:
    arrived: list[float] = []

    def model(request: Any) -> FakeReply:
        arrived.append(time.monotonic())
        return error(429, "slow down", retry_after="0.3") if len(arrived) == 1 else whole("Final Answer: ok")

    response = await client(FakeTransport(model)).generate(HISTORY, [], settings(stream=False))
    assert response.final_answer == "ok"
    assert arrived[1] - arrived[0] >= 0.25  # the backoff alone is 0 s here


@pytest.mark.asyncio
async def test_retries_end_with_an_error_that_names_the_url_and_the_tries() -> None:
    transport = FakeTransport.replying(*(error(500, "the model crashed") for _ in range(3)))
    with pytest.raises(LLMError) as caught:
        await client(transport).generate(HISTORY, [], settings(max_retries=2), None)
    assert caught.value.status == 500 and caught.value.url == BASE + "/chat/completions"
    assert str(caught.value).startswith(f"The model server at {BASE} could not be used: ")
    assert "HTTP 500: the model crashed (gave up after 3 tries)" in str(caught.value)
    assert len(transport.requests) == 3


@pytest.mark.asyncio
async def test_a_client_error_is_not_retried() -> None:
    transport = FakeTransport.replying(error(401, "bad key"), whole("never"))
    with pytest.raises(LLMError) as caught:
        await client(transport).generate(HISTORY, [], settings(api_key="sk-test"), None)
    assert caught.value.status == 401 and len(transport.requests) == 1
    assert "check the API key" in str(caught.value)
    assert transport.requests[0].headers["Authorization"] == "Bearer sk-test"


@pytest.mark.asyncio
async def test_a_refused_connection_nearby_is_reported_at_once_in_words() -> None:
    url = "http://127.0.0.1:8000/v1"
    transport = FakeTransport.replying(*(ConnectionRefusedError() for _ in range(4)))
    with pytest.raises(LLMError) as caught:
        await client(transport).generate(HISTORY, [], settings(base_url=url, max_retries=3))
    message = str(caught.value)
    assert caught.value.status is None and len(transport.requests) == 1  # no retries, no backoff
    assert message.startswith(
        f"The model server at {url} could not be used: the connection was refused: nothing is listening on "
        "127.0.0.1:8000."
    )
    assert "OPENAI_BASE_URL" in message and "--base-url" in message and "tries" not in message


@pytest.mark.asyncio
async def test_an_api_key_with_a_line_break_is_refused_in_words() -> None:
    transport = FakeTransport.replying(whole("never"))
    with pytest.raises(LLMError) as caught:
        await client(transport).generate(HISTORY, [], settings(api_key="sk\r\nX-Evil: 1", max_retries=0))
    assert "the header 'Authorization' holds a line break or NUL; it was not sent" in str(caught.value)
    assert transport.requests == []


@pytest.mark.asyncio
async def test_a_stream_cut_after_text_is_an_llm_error_without_a_retry() -> None:
    transport = FakeTransport.replying(sse("Thought: I was say", finish=None), sse("Final Answer: 5"))
    with pytest.raises(LLMError) as caught:
        await client(transport).generate(HISTORY, [], settings(), lambda _: None)
    assert "closed the stream mid-reply" in str(caught.value)
    assert len(transport.requests) == 1  # text already went out: a retry would show it twice


@pytest.mark.asyncio
@pytest.mark.parametrize("stream", [True, False])
async def test_a_reply_cut_before_any_text_is_retried(stream: bool) -> None:
    if stream:
        cut = FakeReply(200, events(finish=None), content_type="text/event-stream", cut=True)
    else:
        body = b'{"choices": [{"message": {"content": "Final Answer: lost"}}]}'
        cut = FakeReply(200, [body[:20]], content_length=len(body))
    transport = FakeTransport.replying(cut, sse("Final Answer: 5") if stream else whole("Final Answer: 5"))
    response = await client(transport).generate(HISTORY, [], settings(stream=stream))
    assert response.final_answer == "5" and len(transport.requests) == 2


@pytest.mark.asyncio
async def test_the_read_timeout_applies_between_pieces() -> None:
    async def stalls() -> AsyncIterator[bytes]:
        yield b'data: {"choices": [{"index": 0, "delta": {"content": "Thought: a"}}]}\n\n'
        await asyncio.sleep(3)

    transport = FakeTransport.replying(FakeReply(200, stalls(), content_type="text/event-stream"))
    with pytest.raises(LLMError) as caught:
        await client(transport).generate(HISTORY, [], settings(timeout_sec=0.2), lambda _: None)
    assert "no answer within 0.2 s while reading" in str(caught.value)


@pytest.mark.asyncio
async def test_the_overall_deadline_ends_a_stream_of_keep_alives() -> None:
    async def pings() -> AsyncIterator[bytes]:
        while True:
            yield b": ping\n\n"
            await asyncio.sleep(0.05)

    transport = FakeTransport.replying(FakeReply(200, pings(), content_type="text/event-stream"))
    with pytest.raises(LLMError) as caught:
        await client(transport).generate(HISTORY, [], settings(request_timeout_sec=0.3))
    assert "took more than 0.3 s in all" in str(caught.value)


@pytest.mark.asyncio
@pytest.mark.parametrize("tool_mode", ["react", "native", "json"])
@pytest.mark.parametrize("stream", [True, False])
async def test_a_refusal_is_the_final_answer_in_its_own_words(tool_mode: str, stream: bool) -> None:
    words = "I can't help with that."
    if stream:
        reply = FakeReply(200, events({"refusal": "I can't "}, {"refusal": "help with that."}),
                          content_type="text/event-stream")
    else:
        body = {"choices": [{"message": {"content": None, "refusal": words}, "finish_reason": "stop"}]}
        reply = FakeReply(200, json.dumps(body).encode())
    response = await client(FakeTransport.replying(reply)).generate(
        HISTORY, [ADD], settings(tool_mode=tool_mode, stream=stream), lambda _: None
    )
    assert (response.refusal, response.final_answer, response.tool_calls) == (words, words, ())
    assert response.format_error is None


@pytest.mark.asyncio
async def test_a_filtered_reply_is_a_refusal_that_says_so() -> None:
    transport = FakeTransport.replying(whole("", finish="content_filter"))
    response = await client(transport).generate(HISTORY, [], settings(stream=False), lambda _: None)
    assert response.refusal == response.final_answer and "content_filter" in (response.refusal or "")
