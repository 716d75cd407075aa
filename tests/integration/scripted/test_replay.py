"""The scripted model server, seen from a plain HTTP client (and from a shell, for the command line)."""

from __future__ import annotations

import asyncio
import json
import subprocess
import sys
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import aiohttp
import pytest
import pytest_asyncio
from mini_agent.scripted import ReplayServer, Turn

ROOT = Path(__file__).resolve().parents[3]
USER = {"role": "user", "content": "What is in notes.txt?"}


@pytest_asyncio.fixture
async def http() -> AsyncIterator[aiohttp.ClientSession]:
    async with aiohttp.ClientSession() as session:
        yield session


def request(*messages: dict[str, Any], **fields: Any) -> dict[str, Any]:
    return {"model": "m", "messages": list(messages or [USER]), **fields}


async def post(http: aiohttp.ClientSession, server: ReplayServer, body: dict[str, Any]) -> tuple[int, Any]:
    async with http.post(server.base_url + "/chat/completions", json=body) as resp:
        return resp.status, await resp.json()


async def stream(http: aiohttp.ClientSession, server: ReplayServer, body: dict[str, Any]) -> list[Any]:
    """The parsed events of a streamed answer; '[DONE]' stays a string."""
    async with http.post(server.base_url + "/chat/completions", json={**body, "stream": True}) as resp:
        assert resp.content_type == "text/event-stream"
        text = (await resp.read()).decode()
    events = [block.removeprefix("data: ") for block in text.split("\n\n") if block]
    return [event if event == "[DONE]" else json.loads(event) for event in events]


def contents(events: list[Any]) -> list[str]:
    return [
        e["choices"][0]["delta"]["content"]
        for e in events
        if e != "[DONE]" and e["choices"] and e["choices"][0]["delta"].get("content")
    ]


@pytest.mark.asyncio
async def test_models_endpoint_and_base_url(http: aiohttp.ClientSession) -> None:
    async with ReplayServer({"model": "tiny"}) as server:
        assert server.base_url.startswith("http://127.0.0.1:") and server.base_url.endswith("/v1")
        async with http.get(server.base_url + "/models") as resp:
            listing = await resp.json()
    assert [m["id"] for m in listing["data"]] == ["tiny"]


@pytest.mark.asyncio
async def test_whole_reply_shape_and_recorded_request(http: aiohttp.ClientSession) -> None:
    async with ReplayServer([{"content": "Hello there."}]) as server:
        status, reply = await post(http, server, request())
    assert status == 200
    assert reply["object"] == "chat.completion"
    assert reply["choices"] == [
        {"index": 0, "message": {"role": "assistant", "content": "Hello there."}, "finish_reason": "stop"}
    ]
    usage = reply["usage"]
    assert usage["completion_tokens"] == 3  # "Hello", " there", "."
    assert usage["total_tokens"] == usage["prompt_tokens"] + 3
    assert usage["prompt_tokens_details"] == {"cached_tokens": 0}
    (exchange,) = server.exchanges
    assert exchange.body == request() and json.loads(exchange.raw) == request()
    assert exchange.answered is not None and exchange.answered >= exchange.arrived
    assert (exchange.status, exchange.aborted, exchange.number) == (200, False, 1)


@pytest.mark.asyncio
async def test_streamed_reply_has_chunks_finish_usage_and_done(http: aiohttp.ClientSession) -> None:
    chunks = ["Thought: hm", "m\nFinal", " Answer: 4"]
    async with ReplayServer([{"chunks": chunks}]) as server:
        events = await stream(http, server, request())
    assert contents(events) == chunks
    assert events[0]["choices"][0]["delta"]["role"] == "assistant"
    assert [e["choices"][0]["finish_reason"] for e in events[1:-2]] == [None, None, None, "stop"]
    assert events[-2]["choices"] == [] and events[-2]["usage"]["completion_tokens"] > 0
    assert events[-1] == "[DONE]"


@pytest.mark.asyncio
async def test_tool_calls_whole_and_streamed(http: aiohttp.ClientSession) -> None:
    calls = [
        {"name": "read", "arguments": {"path": "notes.txt"}},
        {"name": "ls", "arguments": "{ }", "id": "x"},
    ]
    script = {"turns": [{"tool_calls": calls}], "repeat_last": True}
    async with ReplayServer(script) as server:
        _, reply = await post(http, server, request())
        events = await stream(http, server, request())
    message = reply["choices"][0]["message"]
    assert message["content"] is None and reply["choices"][0]["finish_reason"] == "tool_calls"
    assert message["tool_calls"] == [
        {
            "id": "call_replay_1_0",
            "type": "function",
            "function": {"name": "read", "arguments": '{"path": "notes.txt"}'},
        },
        {"id": "x", "type": "function", "function": {"name": "ls", "arguments": "{ }"}},
    ]
    pieces = [
        e["choices"][0]["delta"]["tool_calls"][0]
        for e in events
        if e != "[DONE]" and e["choices"] and "tool_calls" in e["choices"][0]["delta"]
    ]
    assert [p["index"] for p in pieces] == [0, 0, 0, 1, 1, 1]
    assert "".join(p["function"]["arguments"] for p in pieces if p["index"] == 0) == '{"path": "notes.txt"}'
    assert pieces[3]["id"] == "x" and pieces[3]["function"]["name"] == "ls"


@pytest.mark.asyncio
async def test_placeholders_quote_the_request(http: aiohttp.ClientSession) -> None:
    turn = {"content": "You asked: {last_user} / saw: {last_observation}"}
    react_history = [
        USER,
        {"role": "assistant", "content": "Action: read"},
        {"role": "user", "content": "Observation: 42 lines"},
    ]
    native_history = [
        USER,
        {"role": "assistant", "content": ""},
        {"role": "tool", "tool_call_id": "c", "content": "ok"},
    ]
    async with ReplayServer({"turns": [turn], "repeat_last": True}) as server:
        _, react_reply = await post(http, server, request(*react_history))
        _, native_reply = await post(http, server, request(*native_history))
    assert (
        react_reply["choices"][0]["message"]["content"] == "You asked: Observation: 42 lines / saw: 42 lines"
    )
    assert native_reply["choices"][0]["message"]["content"] == "You asked: What is in notes.txt? / saw: ok"


@pytest.mark.asyncio
async def test_stop_strings_honoured_or_ignored(http: aiohttp.ClientSession) -> None:
    turn = {"chunks": ["Action: x\nObser", "vation: invented"]}
    body = request(stop=["\nObservation:", "Observation:"])
    async with ReplayServer([turn, turn]) as honouring:
        _, whole = await post(http, honouring, body)
        streamed = await stream(http, honouring, body)
    async with ReplayServer({"turns": [turn], "honour_stop": False}) as ignoring:
        ignored = await stream(http, ignoring, body)
    assert whole["choices"][0]["message"]["content"] == "Action: x"
    assert "".join(contents(streamed)) == "Action: x"
    assert contents(ignored) == turn["chunks"]


@pytest.mark.asyncio
async def test_max_tokens_cuts_with_finish_reason_length(http: aiohttp.ClientSession) -> None:
    async with ReplayServer([{"content": "one two three four"}]) as server:
        _, reply = await post(http, server, request(max_tokens=2))
    assert reply["choices"][0]["message"]["content"] == "one two"
    assert reply["choices"][0]["finish_reason"] == "length"
    assert reply["usage"]["completion_tokens"] == 2


@pytest.mark.asyncio
async def test_error_turns_retry_after_and_exhaustion(http: aiohttp.ClientSession) -> None:
    turns = [{"status": 429, "error": "busy", "retry_after": 2}, {"status": 500}, {"content": "fine"}]
    async with ReplayServer(turns) as server:
        async with http.post(server.base_url + "/chat/completions", json=request()) as resp:
            assert (resp.status, resp.headers["Retry-After"]) == (429, "2")
            assert (await resp.json())["error"]["message"] == "busy"
        assert (await post(http, server, request()))[0] == 500
        assert (await post(http, server, request()))[0] == 200
        status, error = await post(http, server, request())
    assert status == 410 and "no turn for request 4" in error["error"]["message"]


@pytest.mark.asyncio
async def test_repeat_last_and_reject_tools(http: aiohttp.ClientSession) -> None:
    script = {"turns": [{"content": "a"}, {"content": "b"}], "repeat_last": True, "reject_tools": True}
    tools = [{"type": "function", "function": {"name": "f", "parameters": {"type": "object"}}}]
    async with ReplayServer(script) as server:
        status, error = await post(http, server, request(tools=tools))
        answers = [
            (await post(http, server, request()))[1]["choices"][0]["message"]["content"] for _ in range(3)
        ]
    assert status == 400 and "tools" in error["error"]["message"]
    assert answers == ["a", "b", "b"]  # the rejected request consumed no turn


@pytest.mark.asyncio
async def test_cut_stream_ends_without_finish_reason_or_done(http: aiohttp.ClientSession) -> None:
    async with ReplayServer([{"content": "partial text", "cut_stream": True}]) as server:
        events = await stream(http, server, request())
    assert "".join(contents(events)) == "partial text"
    assert "[DONE]" not in events
    assert all(e["choices"][0]["finish_reason"] is None for e in events)


@pytest.mark.asyncio
async def test_cut_whole_reply_breaks_the_body(http: aiohttp.ClientSession) -> None:
    async with ReplayServer([{"content": "partial text", "cut_stream": True}]) as server:
        with pytest.raises(aiohttp.ClientPayloadError):
            await post(http, server, request())


@pytest.mark.asyncio
async def test_responder_answers_concurrent_requests_by_their_content(http: aiohttp.ClientSession) -> None:
    """Two sessions in flight at once, each answered from its own task; the stamps show the overlap."""
    both_arrived = asyncio.Event()
    seen: list[str] = []

    async def responder(body: dict[str, Any]) -> dict[str, Any]:
        task = body["messages"][-1]["content"]
        seen.append(task)
        if len(seen) == 2:
            both_arrived.set()
        await both_arrived.wait()
        return {"content": f"answer to {task}"}

    async with ReplayServer(responder=responder) as server:
        replies = await asyncio.gather(
            post(http, server, request({"role": "user", "content": "alpha"})),
            post(http, server, request({"role": "user", "content": "beta"})),
        )
    assert [r[1]["choices"][0]["message"]["content"] for r in replies] == [
        "answer to alpha",
        "answer to beta",
    ]
    first, second = server.exchanges
    assert first.answered is not None and second.arrived < first.answered


@pytest.mark.asyncio
async def test_plain_responder_may_return_a_turn(http: aiohttp.ClientSession) -> None:
    async with ReplayServer(responder=lambda body: Turn(content=str(len(body["messages"])))) as server:
        _, reply = await post(http, server, request(USER, USER, USER))
    assert reply["choices"][0]["message"]["content"] == "3"


@pytest.mark.asyncio
async def test_cached_tokens_follow_the_longest_shared_prefix(http: aiohttp.ClientSession) -> None:
    system = {"role": "system", "content": "You are a careful assistant."}
    async with ReplayServer({"turns": [{"content": "It says hello."}], "repeat_last": True}) as server:
        _, first = await post(http, server, request(system, USER))
        _, same = await post(http, server, request(system, USER))
        follow_up = [
            system,
            USER,
            {"role": "assistant", "content": "It says hello."},
            {"role": "user", "content": "Thanks"},
        ]
        _, longer = await post(http, server, request(*follow_up))
        edited = [{"role": "system", "content": "You are a  careful assistant."}, *follow_up[1:]]
        _, changed = await post(http, server, request(*edited))
    cached = [r["usage"]["prompt_tokens_details"]["cached_tokens"] for r in (first, same, longer, changed)]
    prompt = [r["usage"]["prompt_tokens"] for r in (first, same, longer, changed)]
    assert cached[0] == 0
    assert cached[1] == prompt[1] == prompt[0]
    # The follow-up reuses the first prompt and the completion generated after it.
    assert cached[2] == prompt[0] + first["usage"]["completion_tokens"]
    # One extra space in the system prompt: only the marker and "You are a" still match.
    assert cached[3] == 4


def run_cli(*args: str) -> subprocess.Popen[str]:
    env = {"PYTHONPATH": str(ROOT / "server"), "PATH": "/usr/bin:/bin"}
    return subprocess.Popen(
        [sys.executable, "-m", "mini_agent.scripted", *args],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        stdin=subprocess.DEVNULL,
        text=True,
        env=env,
    )


def test_command_line_prints_the_url_and_serves_until_killed(tmp_path: Path) -> None:
    script = tmp_path / "script.json"
    script.write_text(json.dumps([{"content": "Final Answer: from the shell"}]))
    proc = run_cli("--script", str(script))
    try:
        assert proc.stdout is not None
        base_url = proc.stdout.readline().strip()
        assert base_url.startswith("http://127.0.0.1:") and base_url.endswith("/v1")

        async def ask() -> Any:
            async with (
                aiohttp.ClientSession() as session,
                session.post(base_url + "/chat/completions", json=request()) as resp,
            ):
                return await resp.json()

        reply = asyncio.run(ask())
        assert reply["choices"][0]["message"]["content"] == "Final Answer: from the shell"
    finally:
        proc.terminate()
        proc.communicate(timeout=20)
    assert proc.returncode == 0


def test_command_line_rejects_a_bad_script(tmp_path: Path) -> None:
    script = tmp_path / "bad.json"
    script.write_text('[{"contnet": 1}]')
    proc = run_cli("--script", str(script))
    _, err = proc.communicate(timeout=20)
    assert proc.returncode == 2 and "contnet" in err
