"""The model client against the scripted server over real HTTP on 127.0.0.1: what only a wire shows
(text streamed as it arrives, a hang-up the server sees, kept-alive connections, the scripted server's
own replies and cache accounting). The client's logic is tested over the fake in tests/unit/llm/."""

from __future__ import annotations

import asyncio
import json
import subprocess
import sys
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest
import pytest_asyncio
from mini_agent.core.contracts import (
    LLMConfig,
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
from mini_agent.scripted import ReplayServer

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


async def eventually(condition: Any, what: str) -> None:
    for _ in range(500):
        if condition():
            return
        await asyncio.sleep(0.01)
    raise AssertionError(f"never happened: {what}")


def test_importing_the_client_does_not_import_aiohttp() -> None:
    """The daemon imports the client at start-up and must answer `initialize` fast."""
    code = "import sys, mini_agent.llm.client; print('aiohttp' in sys.modules)"
    env = {"PYTHONPATH": str(Path(__file__).resolve().parents[3] / "server"), "PATH": "/usr/bin:/bin"}
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env, check=True)
    assert out.stdout.strip() == "False"


# --- react mode ------------------------------------------------------------------------------------


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


# --- cancelling ------------------------------------------------------------------------------------


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
