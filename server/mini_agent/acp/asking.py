"""A tool source's question or link, put before the person through ACP.

A question goes out as `elicitation/create`, session-scoped: form mode (the requested schema) to a
client that advertises `elicitation.form`, URL mode (the link and its elicitation id) to one that
advertises `elicitation.url`; any other client, a schema ACP cannot carry, or an answer that is not
one of ACP's, is a decline. A link to open (a login) goes out as URL-mode `elicitation/create` where
the client advertises it, else as a `session/request_permission` prompt whose title says why and shows
the link, with "I opened it" and "Cancel" options.
"""

from __future__ import annotations

import logging
import uuid
from typing import Any

from acp.connection import Connection
from acp.schema import (
    ClientCapabilities,
    ContentToolCallContent,
    CreateFormSessionElicitationRequest,
    CreateUrlSessionElicitationRequest,
    ElicitationSchema,
    PermissionOption,
    RequestPermissionRequest,
    RequestPermissionResponse,
    TextContentBlock,
    ToolCallUpdate,
)
from pydantic import BaseModel

from mini_agent.acp import editor_fs
from mini_agent.core.asking import ElicitAction, ElicitAnswer, Elicitation

log = logging.getLogger(__name__)

OPENED, CANCEL = "opened", "cancel"
LINK_OPTIONS = [
    PermissionOption(option_id=OPENED, name="I opened it", kind="allow_once"),
    PermissionOption(option_id=CANCEL, name="Cancel", kind="reject_once"),
]


async def elicit(
    conn: Connection, capabilities: ClientCapabilities | None, request: Elicitation
) -> ElicitAnswer:
    """The person's answer; a decline where the client cannot ask."""
    if not _supports(capabilities, "url" if request.is_url else "form"):
        return ElicitAnswer.declined()
    try:
        create = _create(request)
    except ValueError as exc:  # a schema ACP's model does not carry
        log.warning("a question from MCP server '%s' cannot go through ACP: %s", request.server, exc)
        return ElicitAnswer.declined()
    try:
        return _answer(await editor_fs.send(conn, "elicitation/create", create))
    except Exception as exc:  # an unusable answer is nobody's answer
        log.warning("elicitation/create got no usable answer: %s", exc)
        return ElicitAnswer.declined()


async def open_url(
    conn: Connection, capabilities: ClientCapabilities | None, session_id: str, url: str, purpose: str
) -> bool:
    """Whether the person said they opened the link."""
    if _supports(capabilities, "url"):
        link = Elicitation(session_id, "", purpose, url=url, elicitation_id=uuid.uuid4().hex)
        return (await elicit(conn, capabilities, link)).action is ElicitAction.ACCEPT
    body = TextContentBlock(type="text", text=f"{purpose}. Open this link in your browser:\n{url}")
    call = ToolCallUpdate(
        tool_call_id=f"link-{uuid.uuid4().hex[:12]}",
        title=f"{purpose}: {url}",
        kind="fetch",
        status="pending",
        content=[ContentToolCallContent(type="content", content=body)],
    )
    prompt = RequestPermissionRequest(session_id=session_id, tool_call=call, options=LINK_OPTIONS)
    try:
        outcome = RequestPermissionResponse.model_validate(
            await editor_fs.send(conn, "session/request_permission", prompt)
        ).outcome
    except Exception as exc:
        log.warning("the prompt to open a link got no answer: %s", exc)
        return False
    return outcome.outcome == "selected" and outcome.option_id == OPENED


def _supports(capabilities: ClientCapabilities | None, mode: str) -> bool:
    elicitation = capabilities.elicitation if capabilities is not None else None
    return elicitation is not None and getattr(elicitation, mode) is not None


def _create(request: Elicitation) -> BaseModel:
    if request.is_url:
        assert request.url is not None and request.elicitation_id is not None  # URL mode
        return CreateUrlSessionElicitationRequest(
            session_id=request.session_id,
            message=request.message,
            mode="url",
            url=request.url,  # type: ignore[arg-type]  # pydantic makes the AnyUrl
            elicitation_id=request.elicitation_id,
        )
    schema = ElicitationSchema.model_validate(request.schema or {"type": "object", "properties": {}})
    return CreateFormSessionElicitationRequest(
        session_id=request.session_id, message=request.message, mode="form", requested_schema=schema
    )


def _answer(raw: Any) -> ElicitAnswer:
    """The person's answer from the client's response (`{action, content?}`)."""
    if not isinstance(raw, dict):
        raise TypeError(f"the response is {type(raw).__name__}, not an object")
    action = ElicitAction(str(raw.get("action")))
    content = raw.get("content") or {}
    if not isinstance(content, dict):
        raise TypeError(f"content is {type(content).__name__}, not an object")
    return ElicitAnswer(action, content if action is ElicitAction.ACCEPT else {})
