"""The context budget through the real daemon, against the scripted model server with a context limit
(it refuses, as vLLM does, a request whose prompt and `max_tokens` pass its window)."""

from __future__ import annotations

import re
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from mini_agent.core.budget import SUMMARY_PROMPT
from mini_agent.scripted import ReplayServer

from ...support.scripted import action

BIG = '''
def big(size: int) -> str:
    """A numbered log of `size` characters."""
    lines, total, n = [], 0, 0
    while total < size:
        n += 1
        line = f"{n:06d} worker finished the batch and wrote the report to disk\\n"
        lines.append(line)
        total += len(line)
    return "".join(lines)[:size]


def note(i: int) -> str:
    """About 500 bytes of ordinary text about step i."""
    return (f"Step {i}: " + "the build ran, the tests passed and the cache was warm; " * 9)[:500]
'''
MI_B = 1024 * 1024
MARKER = re.compile(r'\{"call_id": "([^"]+)", "offset": (\d+), "length": (\d+)\}')


def big_text(size: int) -> str:
    namespace: dict[str, Any] = {}
    exec(BIG, namespace)
    text: str = namespace["big"](size)
    return text


def last_content(body: dict[str, Any]) -> str:
    return str(body["messages"][-1]["content"])


def compaction_steps(updates: list[dict[str, Any]], session_id: str) -> list[int]:
    return [
        u["step"]
        for u in updates
        if u["sessionId"] == session_id
        and u["update"]["kind"] == "status"
        and "Context compacted" in u["update"].get("message", "")
    ]


def answer(body: dict[str, Any]) -> dict[str, Any]:
    return {"content": "Final Answer: ok"}


def is_summary(body: dict[str, Any]) -> bool:
    return str(body["messages"][0]["content"]).startswith(SUMMARY_PROMPT)


@pytest.mark.asyncio
async def test_a_200_kb_result_in_a_2048_token_window_is_cut_paged_and_kept_whole(
    workspace: Path, daemon_factory: Callable[..., Any]
) -> None:
    (workspace / "big.py").write_text(BIG)
    pages: list[tuple[str, int, int]] = []

    def model(body: dict[str, Any]) -> dict[str, Any]:
        said = last_content(body)
        if body["messages"][-1]["role"] == "user" and "Observation:" not in said:
            return action("big", {"size": 200_000})
        found = MARKER.search(said)
        if found is not None and len(pages) < 2:
            call_id, offset, length = found.group(1), int(found.group(2)), int(found.group(3))
            pages.append((call_id, offset, length))
            return action("read_observation", {"call_id": call_id, "offset": offset, "length": length})
        return {"content": "Final Answer: read it"}

    async with ReplayServer({"context_limit": 2048}, responder=model) as server:
        client = await daemon_factory(
            {
                "llm": {"baseUrl": server.base_url, "contextWindow": 2048},
                "tools": {"maxOutputBytes": MI_B},
            }
        )
        await client.request("agent/registerTool", {"path": "big.py", "function": "big"})
        session_id = (await client.request("agent/startSession", {"task": "Read the whole log."}))[
            "sessionId"
        ]
        run = await client.request("agent/run", {"sessionId": session_id, "maxSteps": 6})
        full = await client.request(
            "agent/getObservation", {"sessionId": session_id, "toolCallId": pages[0][0]}
        )
        session = await client.request("agent/getSession", {"sessionId": session_id})
    whole = big_text(200_000)
    assert run["stopReason"] == "end_turn", run
    assert [e.status for e in server.exchanges] == [200] * 4  # no request refused
    assert all(e.prompt_tokens + 512 <= 2048 for e in server.exchanges)
    # the model's view: the head of the text and the marker, well within the window
    seen = last_content(server.requests[1])
    assert "cut to fit the model's context window" in seen and len(seen) < 4000
    shown = seen.removeprefix("Observation: ").split("\n[cut to fit")[0]
    assert whole.startswith(shown) and len(shown) > 200
    # read_observation pages on from where the view stopped, then from where that page stopped
    assert pages[0][1] == len(shown)
    for (_, offset, _), body in zip(pages, server.requests[2:4], strict=True):
        page = last_content(body).split("]\n", 1)[1]
        assert page and whole[offset : offset + len(page)] == page
    assert pages[1][1] > pages[0][1]
    # clients see the cut and its full length, and get the whole text on request
    cut = next(
        u["update"]
        for u in client.updates
        if u["update"]["kind"] == "tool_call_update" and u["update"].get("status") == "completed"
    )
    assert cut["observation"]["truncated"] is True and cut["observation"]["fullLength"] == 200_000
    assert full["output"] == whole and full["fullLength"] == 200_000
    assert session["steps"][0]["observations"][0]["fullLength"] == 200_000
    usage = [u["update"] for u in client.updates if u["update"]["kind"] == "usage_update"]
    assert usage and all(u["size"] == 2048 and 0 < u["used"] <= 2048 for u in usage)


@pytest.mark.asyncio
async def test_a_100_step_session_in_a_4096_token_window_runs_to_its_end(
    workspace: Path, daemon_factory: Callable[..., Any]
) -> None:
    (workspace / "big.py").write_text(BIG)
    turns = 0

    def model(body: dict[str, Any]) -> dict[str, Any]:
        nonlocal turns
        if is_summary(body):
            return {"content": "Notes were taken at every step so far; all builds passed."}
        turns += 1
        if turns < 100:
            return action("note", {"i": turns})
        return {"content": "Final Answer: all 99 notes taken"}

    # no contextWindow: the daemon asks the server (max_model_len in /v1/models, as vLLM says it)
    async with ReplayServer({"context_limit": 4096}, responder=model) as server:
        client = await daemon_factory({"llm": {"baseUrl": server.base_url}, "maxSteps": 100})
        await client.request("agent/registerTool", {"path": "big.py", "function": "note"})
        session_id = (await client.request("agent/startSession", {"task": "Take 99 notes."}))["sessionId"]
        run = await client.request("agent/run", {"sessionId": session_id})
        session = await client.request("agent/getSession", {"sessionId": session_id})
    assert run["stopReason"] == "end_turn" and run["steps"] == 100, run
    assert all(e.status == 200 for e in server.exchanges)  # no request refused
    compacted = compaction_steps(client.updates, session_id)
    assert 1 <= len(compacted) <= 10
    # the summary requests count in the session's tokens
    assert run["usage"]["promptTokens"] == sum(e.prompt_tokens for e in server.exchanges)
    main = [body for body in server.requests if not is_summary(body)]
    assert len(main) == 100
    # between compactions each request extends the one before it and its reply, byte for byte
    for step in range(1, 100):
        if step in compacted:
            continue
        before, after = main[step - 1]["messages"], main[step]["messages"]
        assert after[: len(before)] == before, f"step {step} re-rendered its history"
        assert after[len(before)]["role"] == "assistant"
    # the stored session keeps every observation whole
    outputs = [s["observations"][0]["output"] for s in session["steps"][:99]]
    assert all(len(text) == 500 for text in outputs)
    assert all("truncated" not in s["observations"][0] for s in session["steps"][:99])


@pytest.mark.asyncio
async def test_a_length_refusal_gets_one_compaction_and_one_retry(
    workspace: Path, daemon_factory: Callable[..., Any]
) -> None:
    """The option claims a larger window than the server has: the refusal names the real one."""
    (workspace / "big.py").write_text(BIG)
    turns = 0

    def model(body: dict[str, Any]) -> dict[str, Any]:
        nonlocal turns
        if is_summary(body):
            return {"content": "Notes taken so far."}
        turns += 1
        return action("note", {"i": turns}) if turns < 20 else {"content": "Final Answer: done"}

    async with ReplayServer({"context_limit": 2048}, responder=model) as server:
        client = await daemon_factory(
            {"llm": {"baseUrl": server.base_url, "contextWindow": 16384, "maxTokens": 256}}
        )
        await client.request("agent/registerTool", {"path": "big.py", "function": "note"})
        session_id = (await client.request("agent/startSession", {"task": "Take notes."}))["sessionId"]
        run = await client.request("agent/run", {"sessionId": session_id})
    assert run["stopReason"] == "end_turn", run
    refused = [e for e in server.exchanges if e.status == 400]
    assert len(refused) == 1
    after = server.exchanges[server.exchanges.index(refused[0]) + 1 :]
    assert after and all(e.status == 200 for e in after)
    assert compaction_steps(client.updates, session_id)


@pytest.mark.asyncio
async def test_a_task_longer_than_the_window_ends_the_step_with_max_tokens_and_stays_resumable(
    workspace: Path, daemon_factory: Callable[..., Any]
) -> None:
    task = "Summarise this: " + "many words of a long pasted document " * 150
    async with ReplayServer(
        {"context_limit": 1024}, responder=lambda body: {"content": "Final Answer: ok"}
    ) as small:
        client = await daemon_factory({"llm": {"baseUrl": small.base_url}})
        session_id = (await client.request("agent/startSession", {"task": task}))["sessionId"]
        step = await client.request("agent/step", {"sessionId": session_id})
    assert step["stopReason"] == "max_tokens" and step["status"] == "ready", step
    assert "1024-token window" in step["error"] and "tokens of prompt" in step["error"]
    assert [e.status for e in small.exchanges] == [400, 400]  # one retry, no more
    async with ReplayServer(
        {"context_limit": 8192}, responder=lambda body: {"content": "Final Answer: ok"}
    ) as large:
        await client.request(
            "agent/resumeSession",
            {"sessionId": session_id, "llm": {"baseUrl": large.base_url, "contextWindow": 8192}},
        )
        again = await client.request("agent/step", {"sessionId": session_id})
    assert again["stopReason"] == "end_turn" and again["finalAnswer"] == "ok"


@pytest.mark.asyncio
async def test_get_observation_names_an_unknown_call(daemon_factory: Callable[..., Any]) -> None:
    async with ReplayServer([{"content": "Final Answer: ok"}]) as server:
        client = await daemon_factory({"llm": {"baseUrl": server.base_url}})
        session_id = (await client.request("agent/startSession", {"task": "hi"}))["sessionId"]
        with pytest.raises(Exception, match="no result for tool call 'call_nope'"):
            await client.request("agent/getObservation", {"sessionId": session_id, "toolCallId": "call_nope"})
