"""Image prompts on the ACP door: in native mode the image reaches the model server as an OpenAI image
part; in react mode the model is told it was left out and the person sees a status message; a
session/load replays it; an image past a bound is refused by name and the agent goes on."""

from __future__ import annotations

import base64
from pathlib import Path

import pytest
from acp import RequestError, image_block, text_block
from mini_agent.scripted import ReplayServer

from ...support.acp import acp_agent, said

PNG = base64.b64encode(b"\x89PNG\r\n\x1a\n" + b"\x00" * 64).decode()


def config(root: Path, base_url: str, mode: str) -> None:
    (root / "pyproject.toml").write_text(
        f'[tool.mini-agent]\n[tool.mini-agent.llm]\nbase_url = "{base_url}"\nmodel = "replay"\n'
        f'tool_mode = "{mode}"\n',
        encoding="utf-8",
    )


@pytest.mark.asyncio
async def test_an_image_reaches_the_model_as_an_image_part_and_is_replayed(workspace: Path) -> None:
    async with ReplayServer([{"content": "A red square."}]) as model:
        config(workspace, model.base_url, "native")
        async with acp_agent(workspace, trust=True) as (conn, _, recorder):
            sid = (await conn.new_session(cwd=str(workspace), mcp_servers=[])).session_id
            prompt = [text_block("What is in this picture?"), image_block(PNG, "image/png")]
            answer = await conn.prompt(session_id=sid, prompt=prompt)
        user = next(m for m in model.exchanges[0].body["messages"] if m["role"] == "user")
        async with acp_agent(workspace, trust=True) as (conn, _, replayed):
            await conn.load_session(cwd=str(workspace), session_id=sid, mcp_servers=[])
    assert answer.stop_reason == "end_turn" and said(recorder.of(sid)) == "A red square."
    assert user["content"] == [
        {"type": "text", "text": "What is in this picture?"},
        {"type": "image_url", "image_url": {"url": f"data:image/png;base64,{PNG}"}},
    ]
    chunks = [u["content"] for u in replayed.of(sid) if u["sessionUpdate"] == "user_message_chunk"]
    assert chunks == [{"type": "text", "text": "What is in this picture?"},
                      {"type": "image", "data": PNG, "mimeType": "image/png"}]


@pytest.mark.asyncio
async def test_a_text_only_mode_tells_the_model_and_the_person_what_it_left_out(workspace: Path) -> None:
    async with ReplayServer([{"content": "Final Answer: I cannot see it."}]) as model:
        config(workspace, model.base_url, "react")
        async with acp_agent(workspace, trust=True) as (conn, _, recorder):
            sid = (await conn.new_session(cwd=str(workspace), mcp_servers=[])).session_id
            prompt = [text_block("What is this?"), image_block(PNG, "image/png")]
            await conn.prompt(session_id=sid, prompt=prompt)
    user = next(m for m in model.exchanges[0].body["messages"] if m["role"] == "user")
    words = user["content"]
    assert isinstance(words, str) and words.startswith("What is this?\n\n[1 image attached")
    assert "left out: this tool mode sends the model text only" in words
    updates = recorder.of(sid)
    statuses = [u["title"] for u in updates if u["sessionUpdate"] == "tool_call" and u["kind"] == "other"]
    told = "The 1 image attached was not sent to the model: tool mode react"
    assert any(told in status for status in statuses), statuses


@pytest.mark.asyncio
@pytest.mark.parametrize(
    ("blocks", "words"),
    [
        ([image_block(base64.b64encode(b"\x00" * (5 * 1024 * 1024 + 1)).decode(), "image/png")],
         "larger than 5242880 bytes"),
        ([image_block(PNG, "image/png")] * 5, "5 images, more than the 4"),
        ([image_block(PNG, "image/tiff")], "mimeType 'image/tiff' is not one of"),
        ([image_block("not base64!", "image/png")], "data is not base64"),
    ],
)
async def test_an_image_past_a_bound_is_refused_by_name_and_the_session_goes_on(
    workspace: Path, blocks: list[object], words: str
) -> None:
    async with ReplayServer([{"content": "Final Answer: fine"}]) as model:
        config(workspace, model.base_url, "native")
        async with acp_agent(workspace, trust=True) as (conn, _, _recorder):
            sid = (await conn.new_session(cwd=str(workspace), mcp_servers=[])).session_id
            with pytest.raises(RequestError) as refused:
                await conn.prompt(session_id=sid, prompt=[text_block("look"), *blocks])
            after = await conn.prompt(session_id=sid, prompt=[text_block("then just answer")])
    assert refused.value.code == -32602 and words in str(refused.value)
    assert refused.value.data and refused.value.data["reason"] == "image_refused"
    assert after.stop_reason == "end_turn" and len(model.exchanges) == 1
