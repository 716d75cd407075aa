"""The OAuth-protected MCP test server (oauth_mcp_server.py) as a context, and the person's browser:
shared by the sign-in tests of every door."""

from __future__ import annotations

import contextlib
import socket
import subprocess
import sys
from collections.abc import AsyncIterator
from pathlib import Path

import httpx2

from .waiting import wait_for

SERVER = Path(__file__).parent / "oauth_mcp_server.py"
STOP_TIMEOUT_SEC = 10.0


def _free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


def _listening(port: int) -> bool:
    with socket.socket() as probe:
        return probe.connect_ex(("127.0.0.1", port)) == 0


@contextlib.asynccontextmanager
async def serving(tmp_path: Path, *flags: str) -> AsyncIterator[tuple[str, Path]]:
    """The server on a free port, until the block ends: its MCP URL and the file of tokens it issued."""
    port, record = _free_port(), tmp_path / "issued.txt"
    process = subprocess.Popen([sys.executable, str(SERVER), str(port), str(record), *flags])
    try:
        await wait_for(lambda: _listening(port))
        yield f"http://127.0.0.1:{port}/mcp", record
    finally:
        process.terminate()
        process.wait(timeout=STOP_TIMEOUT_SEC)


async def open_page(link: str) -> None:
    """What the person's browser does with a sign-in link: follow it to the loopback redirect."""
    async with httpx2.AsyncClient(follow_redirects=True, timeout=30) as browser:
        page = await browser.get(link)
    assert "Signed in" in page.text, page.text
