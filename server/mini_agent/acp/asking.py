"""A tool source's question or link, put before the person through ACP.

A question goes out as `elicitation/create`, session-scoped: form mode (the requested schema) to a
client that advertises `elicitation.form`, URL mode (the link and its elicitation id) to one that
advertises `elicitation.url`; any other client, a schema ACP cannot carry, or an answer that is not
one of ACP's, is a decline. A link to open (a login) goes out as URL-mode `elicitation/create` where
the client advertises it, else as a `session/request_permission` prompt whose title says why and shows
the link, with "I opened it" and "Cancel" options.

A question the agent stops waiting for (the call it was asked for ended: cancelled, timed out,
answered, the session closed, the agent exiting) is withdrawn from the client with ACP's
`$/cancel_request` (`send`), so the client can close what it shows; an answer that comes after is
dropped and logged, and the server that asked is told `cancel` (`tools.mcp.asking`).
"""

from __future__ import annotations

import asyncio
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
CANCEL_REQUEST = "$/cancel_request"  # ACP's request cancellation (protocol/v1/cancellation)


async def send(conn: Connection, method: str, request: BaseModel) -> Any:
    """`editor_fs.send`, withdrawn with `$/cancel_request` when the caller stops waiting; the answer
    that still comes is dropped, and logged."""
    ids: list[int] = []

    async def sending() -> Any:
        # the id the SDK's send_request takes next, read in the same turn of the loop that sends it
        # (the SDK offers no way to learn an outgoing request's id, nor to cancel one)
        next_id = getattr(conn, "_next_request_id", None)
        if isinstance(next_id, int):
            ids.append(next_id)
        return await editor_fs.send(conn, method, request)

    sent = asyncio.ensure_future(sending())
    try:
        return await asyncio.shield(sent)
    except asyncio.CancelledError:
        _withdraw(conn, method, ids[0] if ids else None, sent)
        raise


def _withdraw(conn: Connection, method: str, request_id: int | None, sent: asyncio.Future[Any]) -> None:
    def late(done: asyncio.Future[Any]) -> None:
        if done.cancelled() or done.exception() is not None:
            return
        log.info("a late answer to the withdrawn %s (request %s) was dropped", method, request_id)

    sent.add_done_callback(late)
    if request_id is None:
        log.warning("%s could not be withdrawn from the client: its request id is unknown", method)
        return
    log.info("%s (request %s) withdrawn from the client", method, request_id)
    notice = asyncio.ensure_future(conn.send_notification(CANCEL_REQUEST, {"requestId": request_id}))
    _notices.add(notice)
    notice.add_done_callback(_sent_notice)


_notices: set[asyncio.Future[None]] = set()  # withdrawals being written


def _sent_notice(notice: asyncio.Future[None]) -> None:
    _notices.discard(notice)
    if not notice.cancelled() and (exc := notice.exception()) is not None:
        log.debug("$/cancel_request not sent: %s", exc)


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
        return _answer(await send(conn, "elicitation/create", create))
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
            await send(conn, "session/request_permission", prompt)
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
