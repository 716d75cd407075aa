"""`/trust` on the LSP door asks before it trusts: typed as a prompt (`agent/prompt` or a new session's
task), it first puts the client's own prompt (`window/showMessageRequest` with the actions "Trust for
this session", "Always trust this folder", "Don't trust"), trusts only on one of the first two and
remembers only on "Always". A command is a command only when it is the whole text: `/trust this repo?
…` is a prompt for the model. The real daemon over stdio (pytest-lsp), the scripted model server."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest
from lsprotocol import types
from mini_agent.app import trust
from mini_agent.scripted import ReplayServer

FIRST = {"turns": [{"content": "Final Answer: ok"}], "repeat_last": True}
ONCE, ALWAYS, REJECT = "Trust for this session", "Always trust this folder", "Don't trust"


async def slash_trust(
    daemon_factory: Callable[..., Any], choice: str | None, text: str = "/trust"
) -> tuple[list[dict[str, Any]], dict[str, Any], dict[str, Any]]:
    """A folder not trusted, a session, `text` as a follow-up answered with `choice` (an action's
    title; None: the prompt dismissed), then `/trust` again: the questions asked, and the two answers."""
    asked: list[dict[str, Any]] = []
    async with ReplayServer(FIRST) as model:
        client = await daemon_factory({"llm": {"baseUrl": model.base_url}, "workspaceTrusted": False})

        @client.lsp.feature(types.WINDOW_SHOW_MESSAGE_REQUEST)
        async def show_message_request(params: Any) -> Any:
            asked.append({"message": params.message, "actions": [a.title for a in params.actions or []]})
            return None if choice is None else types.MessageActionItem(title=choice)

        sid = (await client.request("agent/startSession", {"task": "hello"}))["sessionId"]
        answer = await client.request("agent/prompt", {"sessionId": sid, "text": text})
        again = await client.request("agent/prompt", {"sessionId": sid, "text": "/trust"})
    return asked, answer, again


@pytest.mark.parametrize("choice", [None, REJECT], ids=["dismissed", "refused"])
@pytest.mark.asyncio
async def test_slash_trust_asks_first_and_a_question_not_allowed_trusts_nothing(
    daemon_factory: Callable[..., Any], choice: str | None
) -> None:
    asked, answer, again = await slash_trust(daemon_factory, choice)
    question, _asked_again = asked
    assert question["actions"] == [ONCE, ALWAYS, REJECT]
    assert question["message"].startswith("mini-agent: trust ") and "?" in question["message"]
    assert answer["command"] == "trust" and answer["ok"] is False
    assert answer["commandOutput"].startswith("Not trusted")
    assert again["ok"] is False  # still not trusted: asked again
    assert trust.load_store() == {}


@pytest.mark.asyncio
async def test_slash_trust_for_this_session_trusts_the_daemon_and_remembers_nothing(
    daemon_factory: Callable[..., Any],
) -> None:
    asked, answer, again = await slash_trust(daemon_factory, ONCE)
    assert len(asked) == 1
    assert answer["ok"] and answer["commandOutput"].startswith("Trusted")
    assert "trusted already" in again["commandOutput"]
    assert trust.load_store() == {}


@pytest.mark.asyncio
async def test_slash_trust_always_trusts_and_remembers_the_folder(
    daemon_factory: Callable[..., Any], workspace: Any
) -> None:
    asked, answer, _again = await slash_trust(daemon_factory, ALWAYS)
    assert len(asked) == 1
    assert answer["ok"] and answer["commandOutput"].startswith("Trusted")
    assert trust.real(workspace) in trust.load_store()


@pytest.mark.asyncio
async def test_slash_trust_followed_by_words_is_a_prompt_for_the_model_not_a_command(
    daemon_factory: Callable[..., Any],
) -> None:
    asked, answer, _again = await slash_trust(daemon_factory, REJECT, "/trust this repo? it looks fine")
    assert "command" not in answer and answer["status"] == "ready"  # a follow-up turn for the model
    assert len(asked) == 1  # only the real /trust after it asked
    assert trust.load_store() == {}
