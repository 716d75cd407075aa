"""`mini-agent mcp --http` bounds what a local client can make it hold: live sessions (`--max-sessions`,
past it 503 with `Retry-After`), a session's idle time (`--session-idle-sec`, then 404 for its id),
and a connection's time to send a request (`--header-timeout-sec`). The real server over real
loopback sockets; its memory read from /proc."""

from __future__ import annotations

import asyncio
import collections
import socket
import time
from pathlib import Path
from typing import Any

import httpx2
import mcp_types
import pytest
from mcp.client.session import ClientSession
from mcp.client.streamable_http import streamable_http_client

from ...support.mcp_http import Served, mcp_http
from ...support.waiting import wait_for

TOOLS = '''
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
LIST_TOOLS = {"jsonrpc": "2.0", "id": 2, "method": "tools/list", "params": {}}
HEADERS = {"Accept": "application/json, text/event-stream", "MCP-Protocol-Version": "2025-11-25"}

FLOOD = 6000  # initialize requests, none of them ever closed by the client
FLOOD_CONCURRENCY = 8
FLOOD_TIMEOUT_SEC = 400.0
RSS_GROWTH_BOUND_MIB = 40.0  # docs/mcp.md states it; 6,000 sessions kept for ever grew RSS by about 220 MiB
HEADER_TIMEOUT_SEC = 1.0
DROPPED_WITHIN_SEC = 4.0  # the timeout, with room for a busy machine


def rss_mib(pid: int) -> float:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) / 1024
    raise AssertionError(f"no VmRSS for {pid}")


async def initialize(http: httpx2.AsyncClient, url: str) -> httpx2.Response:
    return await http.post(url, json=INITIALIZE, headers=HEADERS)


async def list_tools(http: httpx2.AsyncClient, url: str, session: str) -> httpx2.Response:
    return await http.post(url, json=LIST_TOOLS, headers={**HEADERS, "mcp-session-id": session})


async def flood(url: str, count: int) -> collections.Counter[int]:
    """`count` initialize requests from `FLOOD_CONCURRENCY` keep-alive connections; statuses counted."""
    statuses: collections.Counter[int] = collections.Counter()
    left = count

    async def worker(http: httpx2.AsyncClient) -> None:
        nonlocal left
        while left > 0:
            left -= 1
            statuses[(await initialize(http, url)).status_code] += 1

    limits = httpx2.Limits(max_connections=FLOOD_CONCURRENCY)
    async with asyncio.timeout(FLOOD_TIMEOUT_SEC), httpx2.AsyncClient(limits=limits, timeout=60.0) as http:
        await asyncio.gather(*(worker(http) for _ in range(FLOOD_CONCURRENCY)))
    return statuses


def port_of(served: Served) -> int:
    return int(served.url.rsplit(":", 1)[1].split("/", 1)[0])


def seconds_until_closed(connection: socket.socket, trickle: bytes = b"", every: float = 0.25) -> float:
    """Seconds until the server closes `connection` (EOF or reset), sending `trickle` a byte at a time."""
    began = time.monotonic()
    connection.settimeout(every)
    sent = 0
    while time.monotonic() - began < 30:
        if sent < len(trickle):
            try:
                connection.send(trickle[sent : sent + 1])
            except OSError:
                return time.monotonic() - began
            sent += 1
        try:
            if connection.recv(4096) == b"":
                return time.monotonic() - began
        except TimeoutError:
            continue
        except OSError:
            return time.monotonic() - began
    return time.monotonic() - began


@pytest.mark.asyncio
async def test_six_thousand_initialize_requests_stay_under_the_stated_memory_bound(tmp_path: Path) -> None:
    (tmp_path / "tools.py").write_text(TOOLS)
    with mcp_http(tmp_path, "tools.py") as served:
        async with httpx2.AsyncClient() as http:  # warm: the first session loads what every one shares
            assert (await initialize(http, served.url)).status_code == 200
        before = rss_mib(served.process.pid)
        statuses = await flood(served.url, FLOOD)
        after = rss_mib(served.process.pid)
        assert served.process.poll() is None, served.log()
    assert after - before < RSS_GROWTH_BOUND_MIB, f"RSS {before:.1f} -> {after:.1f} MiB, answers {statuses}"
    # 255 more sessions fit under the default cap of 256; every other request is refused, cheaply
    assert statuses == {200: 255, 503: FLOOD - 255}, statuses


@pytest.mark.asyncio
async def test_past_the_cap_a_new_session_gets_503_with_retry_after_and_a_json_rpc_error_naming_the_cap(
    tmp_path: Path,
) -> None:
    (tmp_path / "tools.py").write_text(TOOLS)
    with mcp_http(tmp_path, "--max-sessions", "2", "tools.py") as served:
        async with httpx2.AsyncClient() as http:
            first, second = [await initialize(http, served.url) for _ in range(2)]
            refused = await initialize(http, served.url)
            still = await list_tools(http, served.url, first.headers["mcp-session-id"])
            ended = await http.delete(
                served.url, headers={**HEADERS, "mcp-session-id": second.headers["mcp-session-id"]}
            )
            again = await initialize(http, served.url)
        log = served.log()
    assert (first.status_code, second.status_code, refused.status_code) == (200, 200, 503)
    assert refused.headers["retry-after"].isdigit() and int(refused.headers["retry-after"]) > 0
    assert refused.headers["content-type"] == "application/json"
    body = refused.json()
    assert body["jsonrpc"] == "2.0" and body["id"] is None
    assert "at most 2" in body["error"]["message"] and "--max-sessions" in body["error"]["message"]
    assert body["error"]["data"] == {"maxSessions": 2, "retryAfterSec": int(refused.headers["retry-after"])}
    assert still.status_code == 200 and "halve" in still.text  # the sessions already open are unaffected
    assert ended.status_code == 200 and again.status_code == 200  # a session ended makes room
    assert log.count("refused 1 new MCP session(s) at the cap of 2 open") == 1
    assert "Refusing to open a new session" not in log  # the SDK's warning per refusal is not repeated


@pytest.mark.asyncio
async def test_an_idle_session_expires_then_its_id_is_not_found_and_its_room_is_free(tmp_path: Path) -> None:
    (tmp_path / "tools.py").write_text(TOOLS)
    with mcp_http(tmp_path, "--max-sessions", "1", "--session-idle-sec", "1.5", "tools.py") as served:
        async with httpx2.AsyncClient() as http:
            opened = await initialize(http, served.url)
            session = opened.headers["mcp-session-id"]
            full = await initialize(http, served.url)
            await asyncio.sleep(0.75)
            kept = await list_tools(http, served.url, session)  # a request restarts the idle time
            await asyncio.sleep(0.75)
            kept_again = await list_tools(http, served.url, session)
            await asyncio.sleep(3.0)
            expired = await list_tools(http, served.url, session)
            replaced = await initialize(http, served.url)
    assert (opened.status_code, full.status_code) == (200, 503)
    assert (kept.status_code, kept_again.status_code) == (200, 200)
    assert expired.status_code == 404 and expired.json()["error"]["message"] == "Session not found"
    assert replaced.status_code == 200 and replaced.headers["mcp-session-id"] != session


def test_a_connection_that_sends_nothing_or_a_byte_at_a_time_is_dropped_within_the_timeout(
    tmp_path: Path,
) -> None:
    (tmp_path / "tools.py").write_text(TOOLS)
    timeout = f"{HEADER_TIMEOUT_SEC:g}"
    with mcp_http(tmp_path, "--header-timeout-sec", timeout, "tools.py") as served:
        port = port_of(served)
        head = f"POST /mcp HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\nAccept: {HEADERS['Accept']}\r\n"
        with socket.create_connection(("127.0.0.1", port)) as silent:
            silent_for = seconds_until_closed(silent)
        with socket.create_connection(("127.0.0.1", port)) as slowloris:  # a header line, a byte at a time
            slowloris_for = seconds_until_closed(slowloris, (head + "X-Padding: " + "a" * 200).encode())
        with socket.create_connection(("127.0.0.1", port)) as slow_body:  # the head at once, the body never
            body_head = "Content-Type: application/json\r\nContent-Length: 500\r\n\r\n{"
            slow_body.sendall((head + body_head).encode())
            slow_body_for = seconds_until_closed(slow_body, b'"jsonrpc"' * 40)
        alive = served.process.poll() is None
    assert alive, served.log()
    for name, took in (("silent", silent_for), ("slowloris", slowloris_for), ("slow body", slow_body_for)):
        assert HEADER_TIMEOUT_SEC * 0.9 <= took < DROPPED_WITHIN_SEC, f"{name}: closed after {took:.2f} s"


@pytest.mark.asyncio
async def test_a_client_slower_than_the_header_timeout_between_requests_keeps_its_session_and_stream(
    tmp_path: Path,
) -> None:
    (tmp_path / "tools.py").write_text(TOOLS)
    notes: list[Any] = []

    async def note(message: Any) -> None:
        notes.append(message)

    with mcp_http(tmp_path, "--header-timeout-sec", f"{HEADER_TIMEOUT_SEC:g}", "tools.py") as served:
        async with (
            streamable_http_client(served.url) as (read, write),
            ClientSession(read, write, message_handler=note) as session,
        ):
            await session.initialize()
            await asyncio.sleep(HEADER_TIMEOUT_SEC * 2.5)
            halve = await session.call_tool("halve", {"n": 9})
            await asyncio.sleep(HEADER_TIMEOUT_SEC * 2.5)  # the GET stream, open all along, still delivers
            (tmp_path / "tools.py").write_text(TOOLS + ADDED)
            await wait_for(lambda: any(isinstance(n, mcp_types.ToolListChangedNotification) for n in notes))
            names = [t.name for t in (await session.list_tools()).tools]
    assert halve.structured_content == {"result": 4}
    assert names == ["halve", "double"]
