"""An MCP server's `elicitation/create`, put before the person of the session it is for (`asking`).

A form question is checked against what MCP allows (`elicit_schema`) before it is shown; an accepted
answer gets the schema's defaults for the fields it leaves out and must fit the schema, or the server
is told `decline`. A URL question is a link to open (http or https only). With nobody to ask (no
session calling or starting the server, or a client that cannot ask) the answer is `decline`, and the
call that was in flight is marked (see `unasked`) so the model is told the question went unanswered.

The wait for the person is part of the tool call: when the call ends — its timeout, its cancellation,
the end of the turn, the session or the daemon — the question is withdrawn from the person (`asking`),
whether or not the server withdraws it too (`notifications/cancelled`), and the server is told
`cancel`: an answer the person gives after that never reaches it. `ANSWER_WAIT_SEC` bounds the wait
besides.
"""

from __future__ import annotations

import asyncio
import logging
from typing import TYPE_CHECKING, Any
from urllib.parse import urlsplit

from mini_agent.core.asking import ElicitAction, ElicitAnswer, Elicitation
from mini_agent.tools.mcp import elicit_schema
from mini_agent.tools.mcp.asking import Asking

if TYPE_CHECKING:
    import mcp_types as types
    from mcp.client.session import ClientRequestContext, ElicitationFnT

log = logging.getLogger("mini_agent.mcp")

# A question unanswered this long is withdrawn and the server told `cancel` (a call's own timeout
# normally ends the wait first).
ANSWER_WAIT_SEC = 900.0
MAX_URL_CHARS = 2_048  # a longer link is declined unseen


def callback(asking: Asking) -> ElicitationFnT | None:
    """The SDK session's elicitation callback for one server."""

    async def elicit(context: ClientRequestContext, params: types.ElicitRequestParams) -> types.ElicitResult:
        return await answer(asking, params)

    return elicit


def unasked(asking: Asking, session_id: str) -> str | None:
    """What to tell the model when a question from `asking`'s server to `session_id` was declined for
    want of someone to ask since this was last asked (the mark is cleared); None when none was."""
    if session_id not in asking.unasked:
        return None
    asking.unasked.discard(session_id)
    return (
        f"MCP server '{asking.server}' asked the user a question, and it was declined unseen: "
        "this client cannot put questions to the user (elicitation)."
    )


async def answer(asking: Asking, params: types.ElicitRequestParams) -> types.ElicitResult:
    """The result for the server: the person's answer, or `decline`."""
    import mcp_types as types

    session_id = asking.session()
    try:
        request = _request(asking.server, session_id or "", params)
    except elicit_schema.SchemaRefused as exc:
        log.warning("MCP server '%s' asked a question that was declined unseen: %s", asking.server, exc)
        return types.ElicitResult(action="decline")
    if session_id is None:
        log.info("MCP server '%s' asked a question with no session to ask: declined", asking.server)
        return types.ElicitResult(action="decline")
    try:
        async with asyncio.timeout(ANSWER_WAIT_SEC):
            reply = await asking.ask(session_id, request)
    except TimeoutError:
        log.info(
            "a question from MCP server '%s' went unanswered for %g s: cancelled",
            asking.server,
            ANSWER_WAIT_SEC,
        )
        return types.ElicitResult(action="cancel")
    if reply is None:
        log.info(
            "a question from MCP server '%s' was withdrawn: the call it was asked for ended; "
            "the server is told cancel",
            asking.server,
        )
        return types.ElicitResult(action="cancel")
    if reply.unasked:
        asking.unasked.add(session_id)
    return types.ElicitResult(**_result(asking.server, request, reply))


def _request(server: str, session_id: str, params: types.ElicitRequestParams) -> Elicitation:
    import mcp_types as types

    elicit_schema.check_message(params.message)
    if isinstance(params, types.ElicitRequestURLParams):
        url = str(params.url)
        if len(url) > MAX_URL_CHARS:
            raise elicit_schema.SchemaRefused(
                f"url is {len(url)} characters, over MAX_URL_CHARS={MAX_URL_CHARS}"
            )
        if urlsplit(url).scheme not in ("http", "https"):
            raise elicit_schema.SchemaRefused("url must be an http or https link")
        return Elicitation(session_id, server, params.message, url=url, elicitation_id=params.elicitation_id)
    schema = dict(params.requested_schema)
    elicit_schema.check_schema(schema)
    return Elicitation(session_id, server, params.message, schema=schema)


def _result(server: str, request: Elicitation, reply: ElicitAnswer) -> dict[str, Any]:
    """`action` and `content` for the server; an accepted form answer that does not fit is declined."""
    if reply.action is not ElicitAction.ACCEPT:
        return {"action": reply.action.value}
    if request.schema is None:  # URL mode: accepting means the person went to the link
        return {"action": "accept"}
    content = elicit_schema.with_defaults(request.schema, reply.content)
    wrong = elicit_schema.problems(request.schema, content)
    if wrong:
        log.warning(
            "an answer to MCP server '%s' did not fit its form, declined: %s", server, "; ".join(wrong)
        )
        return {"action": "decline"}
    return {"action": "accept", "content": content}
