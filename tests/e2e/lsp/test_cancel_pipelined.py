"""agent/cancel written in the same write as the agent/run or agent/step it stops (a user pressing
stop at once): the cancel reaches the step even though it has not started yet."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path
from typing import Any

import pytest
from mini_agent.scripted import ReplayServer

from ...support.raw import RawDaemon

SLOW = {"delay": 60, "content": "Final Answer: too late"}


def frame(msg_id: int, method: str, params: Any) -> bytes:
    body = json.dumps({"jsonrpc": "2.0", "id": msg_id, "method": method, "params": params}).encode()
    return b"Content-Length: %d\r\n\r\n" % len(body) + body


def answers(raw: RawDaemon, *ids: int) -> dict[int, dict[str, Any]]:
    """The answers to `ids`, answering the daemon's own requests (progress tokens) on the way."""
    found: dict[int, dict[str, Any]] = {}
    while len(found) < len(ids):
        message = raw.read()
        if "method" in message and "id" in message:  # window/workDoneProgress/create
            raw.send_bytes(json.dumps({"jsonrpc": "2.0", "id": message["id"], "result": None}).encode())
        elif "method" not in message and message.get("id") in ids:
            found[message["id"]] = message
    return found


@pytest.mark.asyncio
async def test_a_cancel_sent_with_the_run_or_step_stops_it(workspace: Path) -> None:
    async with ReplayServer([SLOW, SLOW]) as model:
        raw = RawDaemon(workspace)
        try:
            options = {"llm": {"baseUrl": model.base_url, "toolMode": "react"}, "store": {"enabled": False}}
            raw.request(
                "initialize",
                {
                    "processId": None,
                    "rootUri": workspace.as_uri(),
                    "capabilities": {"window": {"workDoneProgress": True}},  # agent/run asks for a token
                    "initializationOptions": options,
                },
            )
            raw.send_bytes(b'{"jsonrpc": "2.0", "method": "initialized", "params": {}}')
            session_id = raw.request("agent/startSession", {"task": "wait"})["result"]["sessionId"]
            for method in ("agent/run", "agent/step"):
                assert raw.process.stdin is not None
                raw.process.stdin.write(
                    frame(101, method, {"sessionId": session_id})
                    + frame(102, "agent/cancel", {"sessionId": session_id})
                )
                raw.process.stdin.flush()
                got = await asyncio.wait_for(asyncio.to_thread(answers, raw, 101, 102), 30)
                assert got[102]["result"] == {"sessionId": session_id, "cancelled": True}, method
                assert got[101]["result"]["stopReason"] == "cancelled", (method, got[101])
            raw.close()
        finally:
            if raw.process.poll() is None:
                raw.process.kill()
                raw.process.wait()
