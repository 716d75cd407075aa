"""A local service a tool may knock on (the sandbox drills): it says hello to each connection, and the
workspace tool that knocks, as source to write into a workspace."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager

KNOCK = '''
import socket

def knock(port: int, note: str = "") -> str:
    """Say hello to a local service."""
    with socket.create_connection(("127.0.0.1", port), timeout=5) as conn:
        return conn.recv(16).decode()
'''


@asynccontextmanager
async def greeting_listener() -> AsyncIterator[int]:
    """A TCP listener on 127.0.0.1 that writes `hello` to each connection; yields its port."""

    async def greet(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        writer.write(b"hello")
        await writer.drain()
        writer.close()

    server = await asyncio.start_server(greet, "127.0.0.1", 0)
    try:
        yield server.sockets[0].getsockname()[1]
    finally:
        server.close()
