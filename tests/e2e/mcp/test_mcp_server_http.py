"""`mini-agent mcp --http`: Streamable HTTP with the SDK's transport, driven by the SDK's own client
over a real socket: loopback by default with its URL on stderr, DNS-rebinding protection, the bearer
token of MINI_AGENT_MCP_TOKEN, and `notifications/tools/list_changed` after a save."""

from __future__ import annotations

import socket
import subprocess
import sys
from pathlib import Path
from typing import Any

import httpx2
import mcp_types
import pytest
from mcp.client.session import ClientSession
from mcp.client.streamable_http import streamable_http_client

from ...support.daemon import daemon_env
from ...support.mcp_http import mcp_http
from ...support.waiting import wait_for

TOOLS = '''
from mini_agent import tool


@tool(read_only=True)
def halve(n: int) -> int:
    """Half of n, rounded down."""
    return n // 2
'''

ADDED = '''

def double(n: int) -> int:
    """Twice n."""
    return 2 * n
'''
INITIALIZE = {
    "jsonrpc": "2.0",
    "id": 1,
    "method": "initialize",
    "params": {
        "protocolVersion": "2025-11-25",
        "capabilities": {},
        "clientInfo": {"name": "t", "version": "1"},
    },
}
ACCEPT = {"Accept": "application/json, text/event-stream"}


@pytest.mark.asyncio
async def test_served_on_loopback_with_structured_results_and_list_changes(tmp_path: Path) -> None:
    (tmp_path / "tools.py").write_text(TOOLS)
    notes: list[Any] = []

    async def note(message: Any) -> None:
        notes.append(message)

    with mcp_http(tmp_path, "tools.py") as served:
        assert served.url.startswith("http://127.0.0.1:") and served.url.endswith("/mcp")
        async with (
            streamable_http_client(served.url) as (read, write),
            ClientSession(read, write, message_handler=note) as session,
        ):
            init = await session.initialize()
            halve = await session.call_tool("halve", {"n": 9})
            (tmp_path / "tools.py").write_text(TOOLS + ADDED)
            await wait_for(lambda: any(isinstance(n, mcp_types.ToolListChangedNotification) for n in notes))
            names = [t.name for t in (await session.list_tools()).tools]
        assert served.process.stdout is not None
    assert init.capabilities.tools is not None and init.capabilities.tools.list_changed is True
    assert (halve.structured_content, halve.is_error) == ({"result": 4}, False)
    assert names == ["halve", "double"]
    assert served.process.stdout.read() == ""  # stdout stays quiet in HTTP mode


@pytest.mark.asyncio
async def test_a_foreign_host_header_is_refused(tmp_path: Path) -> None:
    (tmp_path / "tools.py").write_text(TOOLS)
    with mcp_http(tmp_path, "tools.py") as served:
        async with httpx2.AsyncClient() as http:
            foreign = await http.post(
                served.url, json=INITIALIZE, headers={**ACCEPT, "Host": "evil.example:80"}
            )
            origin = await http.post(
                served.url, json=INITIALIZE, headers={**ACCEPT, "Origin": "http://evil.example"}
            )
            local = await http.post(served.url, json=INITIALIZE, headers=ACCEPT)
    assert foreign.status_code == 421 and origin.status_code == 403
    assert local.status_code == 200


@pytest.mark.asyncio
async def test_a_token_in_the_environment_is_required(tmp_path: Path) -> None:
    (tmp_path / "tools.py").write_text(TOOLS)
    secret = "s3cret-token-for-the-test"
    with mcp_http(tmp_path, "tools.py", MINI_AGENT_MCP_TOKEN=secret) as served:
        async with httpx2.AsyncClient() as http:
            bare = await http.post(served.url, json=INITIALIZE, headers=ACCEPT)
            wrong = await http.post(
                served.url, json=INITIALIZE, headers={**ACCEPT, "Authorization": "Bearer nope"}
            )
        headers = {"Authorization": f"Bearer {secret}"}
        async with (
            httpx2.AsyncClient(headers=headers) as authorized,
            streamable_http_client(served.url, http_client=authorized) as (read, write),
            ClientSession(read, write) as session,
        ):
            await session.initialize()
            halve = await session.call_tool("halve", {"n": 4})
        assert secret not in served.log()
    assert (bare.status_code, wrong.status_code) == (401, 401)
    assert bare.headers["www-authenticate"].startswith("Bearer")
    assert halve.structured_content == {"result": 2}


def test_a_bad_address_is_refused(tmp_path: Path) -> None:
    (tmp_path / "tools.py").write_text(TOOLS)
    with (
        pytest.raises(AssertionError, match="the port must be a number"),
        mcp_http(tmp_path, "tools.py", address="127.0.0.1:http"),
    ):
        pass


def test_a_port_in_use_is_refused_with_its_reason(tmp_path: Path) -> None:
    (tmp_path / "tools.py").write_text(TOOLS)
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        command = [sys.executable, "-m", "mini_agent.cli", "mcp", "--root", str(tmp_path)]
        done = subprocess.run(
            [*command, "--http", str(port), "tools.py"],
            env=daemon_env(),
            capture_output=True,
            text=True,
            timeout=60,
        )
    assert done.returncode == 1 and done.stdout == ""
    assert done.stderr.strip().endswith(f"cannot listen on 127.0.0.1:{port} (Address already in use)")
