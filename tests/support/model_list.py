"""Model servers for the model pickers: the scripted server listing several models, one that accepts
connections and never answers, and an address where nothing listens."""

from __future__ import annotations

import asyncio
import socket
from collections.abc import AsyncIterator, Sequence
from contextlib import asynccontextmanager
from typing import TYPE_CHECKING, Any

from mini_agent.scripted import ReplayServer

if TYPE_CHECKING:
    from aiohttp import web

MODELS = ("replay", "small", "large")


class ListingServer(ReplayServer):
    """The scripted model server, its `GET /v1/models` listing `models` (it answers chat requests for
    any of them, and records which one each request named)."""

    def __init__(self, script: Any = (), *, models: Sequence[str] = MODELS, **kwargs: Any) -> None:
        super().__init__(script, **kwargs)
        self.models = list(models)

    async def _models(self, request: web.Request) -> web.StreamResponse:
        from aiohttp import web

        data = [{"id": model, "object": "model", "created": 0, "owned_by": "test"} for model in self.models]
        return web.json_response({"object": "list", "data": data})

    def asked_for(self) -> list[str]:
        """The model each chat request named, in order."""
        return [str(body.get("model")) for body in self.requests]


@asynccontextmanager
async def silent_server() -> AsyncIterator[str]:
    """A base URL whose server takes the connection and never says a word."""
    held: list[asyncio.StreamWriter] = []

    async def hold(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        held.append(writer)

    server = await asyncio.start_server(hold, "127.0.0.1", 0)
    port = server.sockets[0].getsockname()[1]
    try:
        yield f"http://127.0.0.1:{port}/v1"
    finally:
        for writer in held:
            writer.close()
        server.close()
        await server.wait_closed()


def down_url() -> str:
    """A base URL where nothing listens (a port just freed)."""
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    return f"http://127.0.0.1:{port}/v1"


APPROVAL_TOOL = '''
from mini_agent import tool


@tool(requires_approval=True)
def stamp(note: str) -> str:
    """Write a note (needs approval).

    Args:
        note: what to write.
    """
    return f"stamped {note}"
'''
