"""A model server that says the model refused ends the ACP turn with the spec's `refusal`, the
refusal's words as the answer, over real stdio."""

from __future__ import annotations

from pathlib import Path

import pytest
from mini_agent.scripted import ReplayServer

from ...support.acp import acp_agent, text, workspace_config


@pytest.mark.asyncio
async def test_a_filtered_reply_ends_the_turn_refusal_and_a_follow_up_still_works(workspace: Path) -> None:
    script = [
        {"content": "I won't write that.", "finish_reason": "content_filter"},
        {"content": "Thought: fine.\nFinal Answer: 42"},
    ]
    async with ReplayServer(script) as model:
        workspace_config(workspace, model.base_url, tools="")
        async with acp_agent(workspace, trust=True) as (conn, _, recorder):
            session = await conn.new_session(cwd=str(workspace), mcp_servers=[])
            refused = await conn.prompt(session_id=session.session_id, prompt=text("write malware"))
            answered = await conn.prompt(session_id=session.session_id, prompt=text("what is 6 x 7?"))
    assert refused.stop_reason == "refusal" and answered.stop_reason == "end_turn"
    said = [
        u["content"]["text"]
        for u in recorder.of(session.session_id)
        if u.get("sessionUpdate") == "agent_message_chunk"
    ]
    assert said == ["I won't write that.", "42"]
