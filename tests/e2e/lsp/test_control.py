"""Streaming, progress, cancellation, model failures and long sessions through the real daemon."""

from __future__ import annotations

import asyncio
import json
from collections.abc import Callable
from itertools import pairwise
from pathlib import Path
from typing import Any

import pytest
from lsprotocol import types
from mini_agent.scripted import ReplayServer

from ...support.scripted import action
from ...support.waiting import wait_for

SLOW_TOOL = '''
import time

def nap(seconds: float) -> str:
    """Sleep, then say so."""
    time.sleep(seconds)
    return "rested"
'''


@pytest.mark.asyncio
async def test_cancel_during_slow_model_and_during_slow_tool_then_step_again(
    workspace: Path, daemon_factory: Callable[..., Any]
) -> None:
    (workspace / "slow.py").write_text(SLOW_TOOL)
    script = [
        {"delay": 30, "content": "Final Answer: too late"},
        action("nap", {"seconds": 30}),
        {"content": "Final Answer: done"},
    ]
    async with ReplayServer(script) as model:
        client = await daemon_factory(
            {"llm": {"baseUrl": model.base_url, "toolMode": "react"}, "store": {"enabled": False}}
        )
        await client.request("agent/registerTool", {"path": "slow.py"})
        session_id = (await client.request("agent/startSession", {"task": "rest"}))["sessionId"]

        stepping = asyncio.ensure_future(client.request("agent/step", {"sessionId": session_id}))
        await wait_for(lambda: len(model.exchanges) == 1)
        busy = asyncio.ensure_future(client.request("agent/step", {"sessionId": session_id}))
        with pytest.raises(Exception) as refused:
            await busy
        assert getattr(refused.value, "code", None) == -32001
        assert (await client.request("agent/cancel", {"sessionId": session_id}))["cancelled"] is True
        cancelled = await asyncio.wait_for(stepping, 10)
        assert cancelled["stopReason"] == "cancelled" and cancelled["status"] == "ready"
        await wait_for(lambda: model.exchanges[0].aborted)

        # $/cancelRequest on a step whose tool is sleeping: the tool is killed, the step answers normally
        stepping = asyncio.ensure_future(
            client.lsp.protocol.send_request_async("agent/step", {"sessionId": session_id}, msg_id="step-2")
        )
        await wait_for(lambda: "tool_call_update" in client.kinds(session_id))
        client.lsp.cancel_request(types.CancelParams(id="step-2"))
        in_tool = await asyncio.wait_for(stepping, 10)
        assert in_tool.stopReason == "cancelled"
        assert in_tool.observations[0].isError and "Cancelled" in in_tool.observations[0].output

        final = await client.request("agent/step", {"sessionId": session_id})
        assert final["finalAnswer"] == "done" and final["stopReason"] == "end_turn"


@pytest.mark.asyncio
async def test_run_reports_standard_progress_for_a_work_done_token(
    workspace: Path, daemon_factory: Callable[..., Any]
) -> None:
    script = [action("list_python_files", {}), {"content": "Final Answer: listed"}]
    async with ReplayServer(script) as model:
        client = await daemon_factory({"llm": {"baseUrl": model.base_url}, "store": {"enabled": False}})
        await client.request("agent/registerTool", {"path": "tools.py"})
        session_id = (await client.request("agent/startSession", {"task": "list"}))["sessionId"]
        client.lsp.progress_reports["tok-1"] = []
        result = await client.request("agent/run", {"sessionId": session_id, "workDoneToken": "tok-1"})
        assert result["stopReason"] == "end_turn" and result["finalAnswer"] == "listed"
    reports = client.lsp.progress_reports["tok-1"]
    assert isinstance(reports[0], types.WorkDoneProgressBegin) and reports[0].title.startswith("mini-agent")
    messages = [r.message for r in reports[1:-1]]
    assert "step 1 · list_python_files …" in messages
    assert isinstance(reports[-1], types.WorkDoneProgressEnd) and reports[-1].message == "end_turn"


@pytest.mark.asyncio
async def test_model_server_down_ends_the_step_with_an_error_naming_it(
    workspace: Path, daemon_factory: Callable[..., Any]
) -> None:
    model = ReplayServer([])
    url = await model.start()
    await model.close()  # nothing listens there any more
    client = await daemon_factory({"llm": {"baseUrl": url, "maxRetries": 1}, "store": {"enabled": False}})
    session_id = (await client.request("agent/startSession", {"task": "hello"}))["sessionId"]
    failed = await client.request("agent/step", {"sessionId": session_id})
    assert failed["stopReason"] == "error" and failed["status"] == "ready"
    assert url in failed["error"]
    status = [u["update"] for u in client.updates if u["update"]["kind"] == "status"][-1]
    assert status["stopReason"] == "error" and url in status["message"]


@pytest.mark.asyncio
@pytest.mark.parametrize("mode", ["react", "native"])
async def test_twelve_step_history_is_a_byte_prefix_and_fully_cached(
    mode: str, workspace: Path, daemon_factory: Callable[..., Any]
) -> None:
    if mode == "react":
        turns = [action("count_file_lines", {"file_path": name}) for name in ("schema.py", "tools.py") * 6]
    else:
        turns = [
            {"tool_calls": [{"name": "count_file_lines", "arguments": {"file_path": name}}]}
            for name in ("schema.py", "tools.py") * 6
        ]
    async with ReplayServer([*turns, {"content": "Final Answer: counted"}]) as model:
        # the script repeats its calls: a repeat hidden from the model (llm.harness.hideRepeats) goes
        # back empty, so what the server wrote for it would no longer be cached; seen here as written
        llm = {"baseUrl": model.base_url, "toolMode": mode, "harness": {"hideRepeats": False}}
        client = await daemon_factory({"llm": llm, "store": {"enabled": False}, "maxSteps": 30})
        await client.request("agent/registerTool", {"path": "tools.py"})
        session_id = (await client.request("agent/startSession", {"task": "count"}))["sessionId"]
        result = await client.request("agent/run", {"sessionId": session_id})
        assert result["stopReason"] == "end_turn" and result["steps"] == 13
        requests = model.requests
        for earlier, later in pairwise(requests):
            shared = later["messages"][: len(earlier["messages"])]
            assert json.dumps(shared) == json.dumps(earlier["messages"])
        exchanges = model.exchanges
        for previous, current in pairwise(exchanges):
            # everything the previous request sent (and got back) is cached in the next one
            assert current.cached_tokens > previous.prompt_tokens
    assert result["usage"]["cachedTokens"] == sum(e.cached_tokens for e in exchanges)


STAMPED = '''
import time
from pathlib import Path

def stamp(label: str, pause: float = 1.0) -> str:
    """Record when this call started and ended."""
    start = time.monotonic()
    time.sleep(pause)
    Path(label + ".stamp").write_text(f"{start} {time.monotonic()}")
    return label
'''


@pytest.mark.asyncio
async def test_two_native_calls_in_one_reply_run_concurrently_and_keep_their_order(
    workspace: Path, daemon_factory: Callable[..., Any]
) -> None:
    (workspace / "stamped.py").write_text(STAMPED)
    calls = [{"name": "stamp", "arguments": {"label": label}} for label in ("first", "second")]
    async with ReplayServer([{"tool_calls": calls}, {"content": "both done"}]) as model:
        client = await daemon_factory(
            {"llm": {"baseUrl": model.base_url, "toolMode": "native"}, "store": {"enabled": False}}
        )
        await client.request("agent/registerTool", {"path": "stamped.py"})
        session_id = (await client.request("agent/startSession", {"task": "stamp twice"}))["sessionId"]
        step = await client.request("agent/step", {"sessionId": session_id})
        final = await client.request("agent/step", {"sessionId": session_id})
        tool_messages = [m for m in model.requests[1]["messages"] if m["role"] == "tool"]
    assert [o["output"] for o in step["observations"]] == ["first", "second"]
    assert [m["content"] for m in tool_messages] == ["first", "second"]
    assert [m["tool_call_id"] for m in tool_messages] == [c["id"] for c in step["toolCalls"]]
    first, second = (
        tuple(map(float, (workspace / f"{n}.stamp").read_text().split())) for n in ("first", "second")
    )
    assert first[0] < second[1] and second[0] < first[1]  # the two runs overlap in time
    assert final["finalAnswer"] == "both done"


@pytest.mark.asyncio
async def test_a_model_that_repeats_itself_gets_one_note_then_the_session_stops(
    workspace: Path, daemon_factory: Callable[..., Any]
) -> None:
    repeat = action("count_file_lines", {"file_path": "schema.py"}, "Let me count again.")
    async with ReplayServer({"turns": [repeat], "repeat_last": True}) as model:
        client = await daemon_factory({"llm": {"baseUrl": model.base_url}, "store": {"enabled": False}})
        await client.request("agent/registerTool", {"path": "tools.py"})
        session_id = (await client.request("agent/startSession", {"task": "count"}))["sessionId"]
        result = await client.request("agent/run", {"sessionId": session_id})
        session = await client.request("agent/getSession", {"sessionId": session_id})
    assert result["stopReason"] == "loop_detected" and result["status"] == "finished"
    outputs = [s["observations"][0] for s in session["steps"]]
    assert len(outputs) == 4
    assert not outputs[0]["isError"]
    # the second is answered from the first (llm.harness.knownResults), the third by the loop detector
    # (the repeat goes back to the model empty, llm.harness.hideRepeats, so the note names the call)
    asked_again = 'You asked again for count_file_lines with {"file_path": "schema.py"}. It was not run again'
    assert outputs[1]["isError"] and outputs[1]["output"].startswith(asked_again)
    assert f"It returned: {outputs[0]['output']}" in outputs[1]["output"]
    assert outputs[2]["isError"] and "3 times in a row" in outputs[2]["output"]
    assert len(model.requests) == 4
