"""Images in the model requests: native mode sends a user turn's images as OpenAI image parts (the
words first), the text modes send a note in their place, and a server that refuses the parts gets the
request again with the note, and never the parts again for that model."""

from __future__ import annotations

import json
from typing import Any

import pytest
from mini_agent.core.contracts import Image, LLMConfig, Message, Role
from mini_agent.llm.client import OpenAICompatibleClient
from mini_agent.llm.fake import FakeReply, FakeTransport

BASE = "http://model.test/v1"
PICTURE = Image("image/png", "iVBORw==")
HISTORY = [Message(Role.SYSTEM, "Be brief."), Message(Role.USER, "What is this?", images=(PICTURE, PICTURE))]


def answer(text: str) -> FakeReply:
    body = {"choices": [{"message": {"content": text}, "finish_reason": "stop"}], "usage": {}}
    return FakeReply(200, json.dumps(body).encode())


def refusal(status: int, message: str) -> FakeReply:
    return FakeReply(status, json.dumps({"error": {"message": message}}).encode())


def settings(mode: str) -> LLMConfig:
    return LLMConfig(base_url=BASE, model="m", tool_mode=mode, stream=False, max_retries=0)


def user_content(transport: FakeTransport, index: int) -> Any:
    return transport.requests[index].json()["messages"][1]["content"]


@pytest.mark.asyncio
async def test_native_sends_the_words_then_each_image_as_a_data_url() -> None:
    transport = FakeTransport.replying(answer("Two squares."))
    llm = OpenAICompatibleClient(transport=transport)
    response = await llm.generate(HISTORY, [], settings("native"))
    assert response.final_answer == "Two squares."
    part = {"type": "image_url", "image_url": {"url": "data:image/png;base64,iVBORw=="}}
    assert user_content(transport, 0) == [{"type": "text", "text": "What is this?"}, part, part]


@pytest.mark.asyncio
@pytest.mark.parametrize("mode", ["react", "json"])
async def test_a_text_mode_sends_a_note_in_place_of_the_images(mode: str) -> None:
    reply = "Final Answer: I cannot see it." if mode == "react" else '{"thought": "t", "final_answer": "no"}'
    transport = FakeTransport.replying(answer(reply))
    await OpenAICompatibleClient(transport=transport).generate(HISTORY, [], settings(mode))
    content = user_content(transport, 0)
    assert isinstance(content, str) and content.startswith("What is this?\n\n[2 images attached to this")
    assert "data:image" not in json.dumps(transport.requests[0].json())


@pytest.mark.asyncio
@pytest.mark.parametrize(("status", "words"), [(400, "this model does not support image input"),
                                               (500, "Multimodal content is not enabled")])
async def test_a_server_that_refuses_the_images_is_asked_again_with_the_note_and_told_once(
    status: int, words: str
) -> None:
    transport = FakeTransport.replying(refusal(status, words), answer("Words only."), answer("Again."))
    llm = OpenAICompatibleClient(transport=transport)
    said: list[str] = []
    first = await llm.generate(HISTORY, [], settings("native"), on_retry=said.append)
    again = await llm.generate(HISTORY, [], settings("native"), on_retry=said.append)
    assert (first.final_answer, again.final_answer) == ("Words only.", "Again.")
    assert isinstance(user_content(transport, 0), list)  # the parts, refused
    assert "left out" in user_content(transport, 1) and "left out" in user_content(transport, 2)
    assert len(said) == 1 and "refused the images for model m" in said[0]


@pytest.mark.asyncio
async def test_a_refusal_that_is_not_about_images_stays_the_error_it_was() -> None:
    transport = FakeTransport.replying(refusal(400, "bad temperature"))
    with pytest.raises(Exception, match="bad temperature"):
        await OpenAICompatibleClient(transport=transport).generate(HISTORY, [], settings("native"))
    assert len(transport.requests) == 1
