"""Live output over ACP through the real agent (the SDK's client over stdio): what a running workspace
tool prints reaches the client as the call's content while it is `in_progress`, before its result."""

from __future__ import annotations

from pathlib import Path

import pytest
from mini_agent.scripted import ReplayServer

from ...support.acp import acp_agent, calls, text, workspace_config
from ...support.scripted import action
from ...support.tools import TICKER, write


def content_text(update: dict[str, object]) -> str:
    blocks = update.get("content") or []
    assert isinstance(blocks, list)
    return "\n".join(block["content"]["text"] for block in blocks)


@pytest.mark.asyncio
async def test_printed_lines_reach_the_acp_client_while_the_call_runs(workspace: Path) -> None:
    write(workspace, "ticker.py", TICKER)
    script = [action("tick", {}), {"content": "Final Answer: {last_observation}"}]
    async with ReplayServer(script) as model:
        workspace_config(workspace, model.base_url, tools='tools = ["ticker.py"]')
        async with acp_agent(workspace, trust=True) as (conn, _, recorder):
            session = await conn.new_session(cwd=str(workspace), mcp_servers=[])
            answer = await conn.prompt(session_id=session.session_id, prompt=text("tick"))
        model_saw = model.exchanges[1].body["messages"][-1]["content"]
    assert answer.stop_reason == "end_turn"
    (call,) = calls(recorder.of(session.session_id)).values()
    statuses = [u.get("status") for u in call]
    done = statuses.index("completed")
    first_line = next(i for i, u in enumerate(call) if "tick 0\n" in content_text(u))
    assert statuses[first_line] == "in_progress" and first_line < done
    last_live = content_text(call[done - 1])
    assert last_live.startswith("".join(f"tick {index}\n" for index in range(10)))  # all of it so far
    assert last_live.endswith("tick 9 100%")  # then the latest progress report
    assert content_text(call[done]) == "ticked"
    assert "tick 0" not in model_saw and "ticked" in model_saw
