"""An MCP server's question on its way to the person: what MCP allows in a form, the defaults filled
in, the answer checked, and a decline where nobody can be asked."""

from __future__ import annotations

import asyncio
from typing import Any

import mcp_types as types
import pytest
from mini_agent.core.asking import ElicitAction, ElicitAnswer, Elicitation, Nobody
from mini_agent.tools.mcp import elicit, elicit_schema
from mini_agent.tools.mcp.asking import Asking

NAME = {  # what the MCP SDK's server sends for a pydantic model with a required and a defaulted field
    "type": "object",
    "title": "Name",
    "properties": {
        "name": {"type": "string", "title": "Name", "description": "Your name"},
        "greeting": {"type": "string", "title": "Greeting", "default": "hello"},
    },
    "required": ["name"],
}


class Answering:
    """A person who answers every question with `reply`, remembering what was asked."""

    def __init__(self, reply: ElicitAnswer | None) -> None:
        self.reply = reply
        self.asked: list[Elicitation] = []

    async def elicit(self, request: Elicitation) -> ElicitAnswer:
        self.asked.append(request)
        if self.reply is None:
            await asyncio.Event().wait()  # never answers
        assert self.reply is not None
        return self.reply

    async def open_url(self, session_id: str, url: str, purpose: str) -> bool:
        return False


def form(schema: dict[str, Any] = NAME, message: str = "What is your name?") -> types.ElicitRequestParams:
    return types.ElicitRequestFormParams(message=message, requested_schema=schema)


async def ask(person: Any, params: types.ElicitRequestParams, *, calling: bool = True) -> types.ElicitResult:
    asking = Asking(person, "eliciting")
    if not calling:
        return await elicit.answer(asking, params)
    with asking.calling("s1"):
        return await elicit.answer(asking, params)


@pytest.mark.parametrize(
    "field",
    [
        {"type": "string", "format": "email"},
        {"type": "string", "enum": ["a", "b"]},
        {"type": "string", "oneOf": [{"const": "a", "title": "A"}]},
        {"type": "integer", "minimum": 1, "maximum": 9, "default": 3},
        {"type": "number"},
        {"type": "boolean", "default": False},
        {"type": "array", "items": {"type": "string", "enum": ["x", "y"]}, "maxItems": 2},
        {"type": "array", "items": {"anyOf": [{"const": "x", "title": "X"}]}},
    ],
)
def test_the_fields_mcp_allows_are_accepted(field: dict[str, Any]) -> None:
    elicit_schema.check_schema({"type": "object", "properties": {"f": field}})


@pytest.mark.parametrize(
    ("schema", "why"),
    [
        ({"type": "array"}, "type must be 'object'"),
        ({"type": "object", "properties": {"f": {"type": "object", "properties": {}}}}, "f.type"),
        ({"type": "object", "properties": {"f": {"type": "string", "$ref": "#/x"}}}, "flat"),
        ({"type": "object", "properties": {"f": {"type": "array", "items": {"type": "integer"}}}}, "choices"),
        ({"type": "object", "properties": {"f": {"type": "string"}}, "required": ["g"]}, "required"),
        ({"type": "object", "properties": {f"f{i}": {"type": "string"} for i in range(33)}}, "MAX_FIELDS"),
        (
            {"type": "object", "properties": {"f": {"type": "string", "enum": list(map(str, range(300)))}}},
            "MAX_CHOICES",
        ),
        (
            {"type": "object", "properties": {"f": {"type": "string", "description": "x" * 40_000}}},
            "MAX_SCHEMA_CHARS",
        ),
        (
            {"type": "object", "properties": {"f": {"type": "string", "minLength": "two"}}},
            "valid JSON Schema",
        ),
    ],
)
def test_a_schema_mcp_does_not_allow_is_refused_with_the_reason(schema: dict[str, Any], why: str) -> None:
    with pytest.raises(elicit_schema.SchemaRefused, match=why.replace("$", r"\$")):
        elicit_schema.check_schema(schema)


def test_defaults_fill_the_fields_left_out_and_unknown_fields_are_dropped() -> None:
    filled = elicit_schema.with_defaults(NAME, {"name": "Ada", "extra": 1})
    assert filled == {"name": "Ada", "greeting": "hello"}
    assert elicit_schema.with_defaults(NAME, {"name": "Ada", "greeting": "hi"})["greeting"] == "hi"


@pytest.mark.asyncio
async def test_an_accepted_answer_reaches_the_server_with_the_defaults_applied() -> None:
    person = Answering(ElicitAnswer(ElicitAction.ACCEPT, {"name": "Ada"}))
    result = await ask(person, form())
    assert result.action == "accept" and result.content == {"name": "Ada", "greeting": "hello"}
    [asked] = person.asked
    assert (asked.session_id, asked.server, asked.schema) == ("s1", "eliciting", NAME)


@pytest.mark.parametrize("content", [{"name": 7}, {"greeting": "hi"}, {"name": "Ada", "greeting": ["x"]}])
@pytest.mark.asyncio
async def test_an_answer_that_does_not_fit_the_form_is_declined(content: dict[str, Any]) -> None:
    result = await ask(Answering(ElicitAnswer(ElicitAction.ACCEPT, content)), form())
    assert result.action == "decline" and result.content is None


@pytest.mark.parametrize("action", [ElicitAction.DECLINE, ElicitAction.CANCEL])
@pytest.mark.asyncio
async def test_decline_and_cancel_reach_the_server_without_content(action: ElicitAction) -> None:
    result = await ask(Answering(ElicitAnswer(action, {"name": "x"})), form())
    assert result.action == action.value and result.content is None


@pytest.mark.asyncio
async def test_with_nobody_to_ask_the_question_is_declined_and_the_call_marked() -> None:
    asking = Asking(Nobody(), "eliciting")
    with asking.calling("s1"):
        result = await elicit.answer(asking, form())
    assert result.action == "decline"
    note = elicit.unasked(asking, "s1")
    assert note is not None and "'eliciting'" in note and "declined" in note
    assert elicit.unasked(asking, "s1") is None  # told once


@pytest.mark.asyncio
async def test_a_person_who_declines_does_not_mark_the_call() -> None:
    asking = Asking(Answering(ElicitAnswer(ElicitAction.DECLINE)), "eliciting")
    with asking.calling("s1"):
        await elicit.answer(asking, form())
    assert elicit.unasked(asking, "s1") is None


@pytest.mark.asyncio
async def test_with_no_session_calling_nobody_is_asked() -> None:
    person = Answering(ElicitAnswer(ElicitAction.ACCEPT, {"name": "Ada"}))
    assert (await ask(person, form(), calling=False)).action == "decline"
    assert person.asked == []


@pytest.mark.parametrize(
    "params",
    [
        form({"type": "object", "properties": {"f": {"type": "object"}}}),
        form(message="?" * (elicit_schema.MAX_MESSAGE_CHARS + 1)),
        types.ElicitRequestURLParams(message="open", url="javascript:alert(1)", elicitation_id="e"),
        types.ElicitRequestURLParams(message="open", url="https://x/" + "a" * 3000, elicitation_id="e"),
    ],
)
@pytest.mark.asyncio
async def test_a_question_past_a_bound_is_declined_unseen(params: types.ElicitRequestParams) -> None:
    person = Answering(ElicitAnswer(ElicitAction.ACCEPT, {"f": {}}))
    assert (await ask(person, params)).action == "decline"
    assert person.asked == []


@pytest.mark.asyncio
async def test_a_link_is_put_to_the_person_and_accepting_it_has_no_content() -> None:
    person = Answering(ElicitAnswer(ElicitAction.ACCEPT, {"ignored": 1}))
    params = types.ElicitRequestURLParams(message="Sign", url="https://example.com/f", elicitation_id="e1")
    result = await ask(person, params)
    assert result.action == "accept" and result.content is None
    [asked] = person.asked
    assert (asked.url, asked.elicitation_id, asked.schema) == ("https://example.com/f", "e1", None)


@pytest.mark.asyncio
async def test_a_question_nobody_answers_is_cancelled_at_the_bound(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(elicit, "ANSWER_WAIT_SEC", 0.05)
    assert (await ask(Answering(None), form())).action == "cancel"


@pytest.mark.asyncio
async def test_an_empty_accept_gets_every_default_of_each_field_type() -> None:
    """SEP-1034 as the conformance suite's `elicitation-sep1034-client-defaults` server asks it."""
    fields = {
        "name": {"type": "string", "default": "John Doe"},
        "age": {"type": "integer", "default": 30},
        "score": {"type": "number", "default": 95.5},
        "status": {"type": "string", "enum": ["active", "inactive", "pending"], "default": "active"},
        "verified": {"type": "boolean", "default": True},
    }
    schema = {"type": "object", "properties": fields, "required": []}
    result = await ask(Answering(ElicitAnswer(ElicitAction.ACCEPT, {})), form(schema))
    assert result.action == "accept"
    assert result.content == {
        "name": "John Doe",
        "age": 30,
        "score": 95.5,
        "status": "active",
        "verified": True,
    }
