"""A tool source's question or link, put before the person through ACP: `elicitation/create` (form
mode, or URL mode for a link) to a client that advertises it."""

from __future__ import annotations

from acp.connection import Connection
from acp.schema import ClientCapabilities

from mini_agent.core.asking import ElicitAnswer, Elicitation


async def elicit(
    conn: Connection, capabilities: ClientCapabilities | None, request: Elicitation
) -> ElicitAnswer:
    """The person's answer; a decline where the client cannot ask."""
    return ElicitAnswer.declined()


async def open_url(
    conn: Connection, capabilities: ClientCapabilities | None, session_id: str, url: str, purpose: str
) -> bool:
    """Whether the client put the link before the person."""
    return False
