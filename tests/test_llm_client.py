"""The model client against the scripted server over real HTTP on 127.0.0.1, plus its pure stream parts."""

from __future__ import annotations

import asyncio
import dataclasses
import itertools
import json
import socket
import subprocess
import sys
from collections.abc import AsyncIterator, Sequence
from pathlib import Path
from typing import Any

import pytest
import pytest_asyncio
from hypothesis import given
from hypothesis import strategies as st
from mini_agent.contracts import (
    LLMConfig,
    LLMError,
    LLMResponse,
    Message,
    Role,
    TokenUsage,
    ToolCall,
    ToolMode,
    ToolSpec,
)
from mini_agent.llm import react
from mini_agent.llm.client import OpenAICompatibleClient
from mini_agent.llm.stream import SSEDecoder, StopScanner, cut_at_stop
from mini_agent.replay import ReplayServer

STOPS = react.STOP_SEQUENCES
ADD = ToolSpec(
    name="add",
    description="Add two numbers.",
    input_schema={"type": "object", "properties": {"a": {"type": "number"}, "b": {"type": "number"}}},
)
HISTORY = (Message(Role.SYSTEM, "You are terse."), Message(Role.USER, "What is 2 + 3?"))
ACTION = 'Thought: I should add.\nAction: add\nAction Input: {"a": 2, "b": 3}'


@pytest_asyncio.fixture
async def client() -> AsyncIterator[OpenAICompatibleClient]:
    async with OpenAICompatibleClient(backoff_base=0.001, backoff_cap=0.01) as llm:
        yield llm


def config(server: ReplayServer, mode: ToolMode = "react", **changes: Any) -> LLMConfig:
    return LLMConfig(base_url=server.base_url, model="m", tool_mode=mode, **changes)


def without_call_ids(response: LLMResponse) -> LLMResponse:
    calls = tuple(dataclasses.replace(call, id="") for call in response.tool_calls)
    return dataclasses.replace(response, tool_calls=calls)


async def eventually(condition: Any, what: str) -> None:
    for _ in range(500):
        if condition():
            return
        await asyncio.sleep(0.01)
    raise AssertionError(f"never happened: {what}")


# --- stream.py -------------------------------------------------------------------------------------

SSE_BODY = (
    ": keep-alive\r\n"
    'data: {"t": "héllo 中文 🙂"}\r\n\r\n'
    "event: message\n"
    "data: line one\n"
    "data: line two\n\n"
    "data:no-space\r\r"
    "data: [DONE]\n\n"
).encode()
SSE_EVENTS = ['{"t": "héllo 中文 🙂"}', "line one\nline two", "no-space", "[DONE]"]


def decode_in_pieces(raw: bytes, cuts: Sequence[int]) -> list[str]:
    decoder = SSEDecoder()
    events: list[str] = []
    bounds = [0, *sorted(cuts), len(raw)]
    for start, end in itertools.pairwise(bounds):
        events += decoder.feed(raw[start:end])
    return events + decoder.close()


def test_sse_decoder_any_single_split_gives_the_same_events() -> None:
    """Every byte boundary, including the middle of multi-byte characters and of a CRLF."""
    for cut in range(len(SSE_BODY) + 1):
        assert decode_in_pieces(SSE_BODY, [cut]) == SSE_EVENTS, cut


def test_sse_decoder_byte_by_byte() -> None:
    assert decode_in_pieces(SSE_BODY, range(1, len(SSE_BODY))) == SSE_EVENTS


def test_sse_decoder_flushes_an_unterminated_event_at_close() -> None:
    decoder = SSEDecoder()
    assert decoder.feed(b"data: tail") == []
    assert decoder.close() == ["tail"]


def test_stop_string_split_across_two_chunks_is_cut() -> None:
    scanner = StopScanner(STOPS)
    assert scanner.feed("Action Input: {}\nObser") == "Action Input: {}"
    assert scanner.feed("vation: made up\nFinal Answer: no") == ""
    assert scanner.stopped
    assert scanner.finish() == ""


def test_held_back_text_is_released_when_it_is_not_a_stop() -> None:
    scanner = StopScanner(STOPS)
    assert scanner.feed("a\nObs") == "a"
    assert scanner.feed("cure") == "\nObscure"
    assert scanner.feed("\n") == ""
    assert scanner.finish() == "\n"
    assert not scanner.stopped


def test_earliest_stop_wins_and_full_width_colon_counts() -> None:
    assert cut_at_stop("x\nObservation：y Observation: z", STOPS) == ("x", True)
    assert cut_at_stop("inline Observation: z", STOPS) == ("inline ", True)
    assert cut_at_stop("nothing here", STOPS) == ("nothing here", False)


_PIECES = st.sampled_from(
    ["\n", "Obs", "ervation", ":", "：", "Observation:", "ab", " ", "é", "\nObservation"]
)


@given(st.lists(_PIECES, max_size=12), st.lists(st.integers(0, 200), max_size=6))
def test_stop_scanner_does_not_depend_on_where_the_stream_is_split(parts: list[str], cuts: list[int]) -> None:
    text = "".join(parts)
    scanner = StopScanner(STOPS)
    bounds = [0, *sorted(c % (len(text) + 1) for c in cuts), len(text)]
    emitted = [scanner.feed(text[a:b]) for a, b in itertools.pairwise(bounds)]
    emitted.append(scanner.finish())
    whole, stopped = cut_at_stop(text, STOPS)
    assert "".join(emitted) == whole
    assert scanner.stopped == stopped
    assert not any(stop in "".join(emitted) for stop in STOPS)


def test_importing_the_client_does_not_import_aiohttp() -> None:
    """The daemon imports the client at start-up and must answer `initialize` fast."""
    code = "import sys, mini_agent.llm.client; print('aiohttp' in sys.modules)"
    env = {"PYTHONPATH": str(Path(__file__).resolve().parents[1] / "server"), "PATH": "/usr/bin:/bin"}
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env, check=True)
    assert out.stdout.strip() == "False"


# --- react mode ------------------------------------------------------------------------------------


@pytest.mark.asyncio
async def test_react_round_trip(client: OpenAICompatibleClient) -> None:
    async with ReplayServer([{"content": ACTION + "\nObservation: 5"}]) as server:
        response = await client.generate(HISTORY, [ADD], config(server))
    call = response.tool_calls[0]
    assert call.id.startswith("call_")
    assert response == LLMResponse(
        content=ACTION,
        thought="I should add.",
        tool_calls=(ToolCall(call.id, "add", {"a": 2, "b": 3}, '{"a": 2, "b": 3}'),),
        usage=TokenUsage(server.exchanges[0].prompt_tokens, 25, 0),
        finish_reason="stop",
        tool_mode="react",
    )
    sent = server.requests[0]
    assert sent["messages"] == react.render_messages(HISTORY, [ADD])
    assert sent["stop"] == list(STOPS)
    assert "tools" not in sent
    assert sent["stream"] is True and sent["stream_options"] == {"include_usage": True}
    assert (sent["model"], sent["max_tokens"], sent["temperature"]) == ("m", 1024, 0.0)


@pytest.mark.asyncio
async def test_streamed_and_whole_replies_parse_the_same(client: OpenAICompatibleClient) -> None:
    turn = {"content": "Thought: easy\nFinal Answer: 5\nObservation: junk", "finish_reason": "stop"}
    async with ReplayServer({"turns": [turn], "repeat_last": True, "honour_stop": False}) as server:
        streamed = await client.generate(HISTORY, [ADD], config(server))
        whole = await client.generate(HISTORY, [ADD], config(server, stream=False))
    assert whole.final_answer == "5"
    assert whole.content == "Thought: easy\nFinal Answer: 5"
    assert dataclasses.replace(streamed, usage=whole.usage) == whole


@pytest.mark.asyncio
async def test_text_deltas_reach_the_sink_while_the_reply_is_still_streaming(
    client: OpenAICompatibleClient,
) -> None:
    chunks = ["Thought: one", " two", " three", "\nFinal Answer: done"]
    deltas: list[str] = []
    first = asyncio.Event()

    def sink(text: str) -> None:
        deltas.append(text)
        first.set()

    async with ReplayServer([{"chunks": chunks, "chunk_delay": 0.3}]) as server:
        task = asyncio.create_task(client.generate(HISTORY, [ADD], config(server), sink))
        await first.wait()
        assert not task.done()
        response = await task
    assert len(deltas) >= 3
    assert "".join(deltas) == response.content == "".join(chunks)
    assert (response.thought, response.final_answer) == ("one two three", "done")


@pytest.mark.asyncio
async def test_stop_split_across_sse_chunks_is_cut_and_the_stream_abandoned(
    client: OpenAICompatibleClient,
) -> None:
    """The server ignores `stop` and keeps talking; the client cuts and hangs up."""
    chunks = [ACTION + "\nObser", "vation: 5", "\nThought: now", " I know", "\nFinal Answer: 5"]
    script = {"turns": [{"chunks": chunks, "chunk_delay": 0.2}], "honour_stop": False}
    deltas: list[str] = []
    async with ReplayServer(script) as server:
        response = await client.generate(HISTORY, [ADD], config(server), deltas.append)
        await eventually(lambda: server.exchanges[0].aborted, "the server saw the client hang up")
    assert "".join(deltas) == response.content == ACTION
    assert response.finish_reason == "stop"
    assert response.tool_calls[0].arguments == {"a": 2, "b": 3}


@pytest.mark.asyncio
@pytest.mark.parametrize("stream", [True, False])
async def test_server_that_ignores_stop_is_cut_client_side(
    client: OpenAICompatibleClient, stream: bool
) -> None:
    content = ACTION + "\nObservation: 99\nThought: done\nFinal Answer: 99"
    async with ReplayServer({"turns": [{"content": content}], "honour_stop": False}) as server:
        response = await client.generate(HISTORY, [ADD], config(server, stream=stream))
    assert response.content == ACTION
    assert response.final_answer is None and response.tool_calls[0].name == "add"


@pytest.mark.asyncio
async def test_consecutive_calls_reuse_one_kept_alive_connection(client: OpenAICompatibleClient) -> None:
    script = {"turns": [{"content": "Final Answer: 5"}], "repeat_last": True}
    async with ReplayServer(script) as server:
        for stream in (True, True, False, True):
            await client.generate(HISTORY, [], config(server, stream=stream))
    assert len({e.peer for e in server.exchanges}) == 1


# --- native mode -----------------------------------------------------------------------------------

NATIVE_HISTORY = (
    *HISTORY,
    Message(
        Role.ASSISTANT,
        "Adding.",
        tool_calls=(ToolCall("call_1", "add", {"a": 2, "b": 3}, '{"a":2,  "b": 3}'),),
    ),
    Message(Role.TOOL, "5", tool_call_id="call_1", name="add"),
    Message(Role.TOOL, "a note from the runtime"),
)


@pytest.mark.asyncio
@pytest.mark.parametrize("stream", [True, False])
async def test_native_round_trip_with_two_streamed_calls(
    client: OpenAICompatibleClient, stream: bool
) -> None:
    calls = [
        {"name": "add", "arguments": {"a": 1, "b": 2}, "id": "call_a"},
        {"name": "add", "arguments": '{"a": 3,\n "b": "x"}'},
    ]
    async with ReplayServer([{"content": "Two sums.", "tool_calls": calls}]) as server:
        response = await client.generate(NATIVE_HISTORY, [ADD], config(server, "native", stream=stream))
    assert response == LLMResponse(
        content="Two sums.",
        thought="Two sums.",
        tool_calls=(
            ToolCall("call_a", "add", {"a": 1, "b": 2}, '{"a": 1, "b": 2}'),
            ToolCall("call_replay_1_1", "add", {"a": 3, "b": "x"}, '{"a": 3,\n "b": "x"}'),
        ),
        usage=response.usage,
        finish_reason="tool_calls",
        tool_mode="native",
    )
    assert response.usage.completion_tokens > 0
    sent = server.requests[0]
    assert sent["tools"] == [ADD.to_openai()]
    assert "stop" not in sent
    assert sent["messages"] == [
        {"role": "system", "content": "You are terse."},
        {"role": "user", "content": "What is 2 + 3?"},
        {
            "role": "assistant",
            "content": "Adding.",
            "tool_calls": [
                {
                    "id": "call_1",
                    "type": "function",
                    "function": {"name": "add", "arguments": '{"a":2,  "b": 3}'},
                }
            ],
        },
        {"role": "tool", "tool_call_id": "call_1", "content": "5"},
        {"role": "user", "content": "Observation: a note from the runtime"},
    ]


@pytest.mark.asyncio
async def test_native_text_is_the_final_answer_and_bad_arguments_are_reported(
    client: OpenAICompatibleClient,
) -> None:
    turns = [
        {"content": "It is 5."},
        {"content": ""},
        {"tool_calls": [{"name": "add", "arguments": '{"a": 2,'}, {"name": "add", "arguments": "[1, 2]"}]},
    ]
    async with ReplayServer(turns) as server:
        answer = await client.generate(HISTORY, [ADD], config(server, "native"))
        empty = await client.generate(HISTORY, [ADD], config(server, "native"))
        broken = await client.generate(HISTORY, [ADD], config(server, "native"))
    assert (answer.final_answer, answer.thought, answer.tool_calls) == ("It is 5.", "", ())
    assert empty.final_answer is None and empty.format_error and "empty" in empty.format_error
    first, second = broken.tool_calls
    assert (first.raw_arguments, first.arguments) == ('{"a": 2,', {})
    assert first.parse_error and "not valid JSON" in first.parse_error
    assert second.parse_error and "JSON object" in second.parse_error
    assert broken.content == "" and broken.final_answer is None


# --- auto mode -------------------------------------------------------------------------------------


@pytest.mark.asyncio
async def test_auto_falls_back_to_react_when_tools_are_rejected_and_remembers(
    client: OpenAICompatibleClient,
) -> None:
    turns = [{"content": ACTION}, {"content": "Thought: ok\nFinal Answer: 5"}]
    text_only = {"json_schema": 400, "json_object": 400}  # auto tries json mode between native and react
    async with ReplayServer({"turns": turns, "reject_tools": True, "refuse_formats": text_only}) as server:
        first = await client.generate(HISTORY, [ADD], config(server, "auto"))
        second = await client.generate(HISTORY, [ADD], config(server, "auto"))
    assert first.tool_mode == second.tool_mode == "react"
    assert first.tool_calls[0].name == "add" and second.final_answer == "5"
    assert [e.status for e in server.exchanges] == [400, 400, 400, 200, 200]
    assert ["tools" in body for body in server.requests] == [True, False, False, False, False]
    assert server.requests[3]["stop"] == list(STOPS)


@pytest.mark.asyncio
async def test_auto_uses_native_tools_when_the_server_takes_them(client: OpenAICompatibleClient) -> None:
    async with ReplayServer([{"tool_calls": [{"name": "add", "arguments": {"a": 1}}]}]) as server:
        response = await client.generate(HISTORY, [ADD], config(server, "auto"))
    assert response.tool_mode == "native"
    assert response.tool_calls[0].arguments == {"a": 1}
    assert len(server.requests) == 1


# --- failures and retries --------------------------------------------------------------------------


@pytest.mark.asyncio
async def test_429_retry_after_is_honoured_then_the_retry_succeeds(client: OpenAICompatibleClient) -> None:
    turns = [{"status": 429, "error": "slow down", "retry_after": 0.3}, {"content": "Final Answer: ok"}]
    async with ReplayServer(turns) as server:
        response = await client.generate(HISTORY, [], config(server))
    assert response.final_answer == "ok"
    busy, retried = server.exchanges
    assert busy.status == 429 and busy.answered is not None
    # The backoff alone would be at most 0.01 s: only Retry-After explains this gap (a lower bound).
    assert retried.arrived - busy.answered >= 0.25


@pytest.mark.asyncio
async def test_500_on_every_try_gives_an_llm_error_after_max_retries(client: OpenAICompatibleClient) -> None:
    script = {"turns": [{"status": 500, "error": "the model crashed"}], "repeat_last": True}
    async with ReplayServer(script) as server:
        with pytest.raises(LLMError) as caught:
            await client.generate(HISTORY, [], config(server, max_retries=2))
    assert caught.value.status == 500 and caught.value.url == server.base_url + "/chat/completions"
    assert str(caught.value).startswith(f"The model server at {server.base_url} could not be used: ")
    assert "HTTP 500: the model crashed (gave up after 3 tries)" in str(caught.value)
    assert len(server.requests) == 3


@pytest.mark.asyncio
async def test_a_client_error_is_not_retried(client: OpenAICompatibleClient) -> None:
    script = {"turns": [{"status": 401, "error": "bad key"}], "repeat_last": True}
    async with ReplayServer(script) as server:
        with pytest.raises(LLMError) as caught:
            await client.generate(HISTORY, [], config(server, api_key="sk-test"))
    assert caught.value.status == 401 and len(server.requests) == 1
    assert server.exchanges[0].headers["Authorization"] == "Bearer sk-test"


@pytest.mark.asyncio
async def test_refused_connection_on_loopback_is_reported_at_once_in_words(
    client: OpenAICompatibleClient,
) -> None:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    url = f"http://127.0.0.1:{port}/v1"
    with pytest.raises(LLMError) as caught:
        await client.generate(HISTORY, [], LLMConfig(base_url=url, max_retries=3))
    assert caught.value.status is None
    message = str(caught.value)
    assert message.startswith(f"The model server at {url} could not be used: the connection was refused")
    assert "tries" not in message  # nothing listens on this machine: no retries, no backoff
    assert "OPENAI_BASE_URL" in message and "--base-url" in message and "ClientConnectorError" not in message


@pytest.mark.asyncio
async def test_cut_stream_after_text_is_an_llm_error_without_a_retry(client: OpenAICompatibleClient) -> None:
    script = {"turns": [{"content": "Thought: I was say", "cut_stream": True}], "repeat_last": True}
    async with ReplayServer(script) as server:
        with pytest.raises(LLMError) as caught:
            await client.generate(HISTORY, [], config(server), lambda _: None)
    assert "closed the stream mid-reply" in str(caught.value)
    assert len(server.requests) == 1  # text already went out: a retry would show it twice


@pytest.mark.asyncio
@pytest.mark.parametrize("stream", [True, False])
async def test_a_reply_cut_before_any_text_is_retried(client: OpenAICompatibleClient, stream: bool) -> None:
    turns = [
        {"content": "" if stream else "Final Answer: lost", "cut_stream": True},
        {"content": "Final Answer: 5"},
    ]
    async with ReplayServer(turns) as server:
        response = await client.generate(HISTORY, [], config(server, stream=stream))
    assert response.final_answer == "5" and len(server.requests) == 2


@pytest.mark.asyncio
async def test_read_timeout_applies_between_chunks(client: OpenAICompatibleClient) -> None:
    turn = {"chunks": ["Thought: a", " b"], "chunk_delay": 3}
    async with ReplayServer([turn]) as server:
        with pytest.raises(LLMError) as caught:
            await client.generate(HISTORY, [], config(server, timeout_sec=0.2), lambda _: None)
    assert "no answer within 0.2 s" in str(caught.value)


@pytest.mark.asyncio
async def test_cancelling_the_caller_aborts_the_request(client: OpenAICompatibleClient) -> None:
    async with ReplayServer([{"content": "Final Answer: late", "delay": 30}]) as server:
        task = asyncio.create_task(client.generate(HISTORY, [], config(server)))
        await eventually(lambda: server.exchanges, "the request reached the server")
        task.cancel()
        with pytest.raises(asyncio.CancelledError):
            await task
        await eventually(lambda: server.exchanges[0].aborted, "the server saw the request dropped")


# --- history and usage -----------------------------------------------------------------------------


@pytest.mark.asyncio
@pytest.mark.parametrize("mode", ["react", "native"])
async def test_ten_turn_history_is_sent_append_only_and_the_cache_keeps_up(
    client: OpenAICompatibleClient, mode: ToolMode
) -> None:
    """Request k+1 begins with request k's messages, byte for byte, so the prefix cache hits it all."""
    if mode == "react":
        turns: list[dict[str, Any]] = [
            {"content": f'Thought: step {k}\nAction: add\nAction Input: {{"a": {k},  "b":1}}'}
            for k in range(9)
        ]
    else:
        turns = [
            {"content": f"step {k}", "tool_calls": [{"name": "add", "arguments": f'{{"a": {k},  "b":1}}'}]}
            for k in range(9)
        ]
    final = "{last_observation}" if mode == "native" else "Thought: done\nFinal Answer: {last_observation}"
    turns.append({"content": final})
    history = list(HISTORY)
    usages: list[TokenUsage] = []
    async with ReplayServer(turns) as server:
        for k in range(10):
            response = await client.generate(history, [ADD], config(server, mode))
            usages.append(response.usage)
            if response.final_answer is not None:
                break
            call = response.tool_calls[0]
            history.append(Message(Role.ASSISTANT, response.content, tool_calls=response.tool_calls))
            history.append(Message(Role.TOOL, f"result {k}: {call.arguments['a'] + 1}", tool_call_id=call.id))
    assert len(server.requests) == 10
    assert response.final_answer == "result 8: 9"
    for k in range(9):
        before = [json.dumps(m, ensure_ascii=False) for m in server.requests[k]["messages"]]
        after = [json.dumps(m, ensure_ascii=False) for m in server.requests[k + 1]["messages"]]
        assert after[: len(before)] == before and len(after) == len(before) + 2
        # Cached: all of the previous prompt and of the completion the model generated for it.
        assert usages[k + 1].cached_tokens == usages[k].prompt_tokens + usages[k].completion_tokens
    assert all(u.cached_tokens < u.prompt_tokens for u in usages)
    assert usages[0].cached_tokens == 0
