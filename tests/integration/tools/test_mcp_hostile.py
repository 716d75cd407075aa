"""What a hostile MCP server cannot do to the MCP source: hang its start, make it read a result in
quadratic time, blow up a schema, or outlive a cancelled start.

Real stdio servers (tests/support/hostile_mcp_server.py) under the real `McpSource`; the SDK hooks
the transport bends are checked to be where `stdio` expects them.
"""

from __future__ import annotations

import asyncio
import sys
from collections.abc import AsyncIterator
from pathlib import Path

import pytest
import pytest_asyncio
from anyio import ClosedResourceError, EndOfStream
from anyio.abc import ByteReceiveStream
from mini_agent.core.asking import Nobody
from mini_agent.core.contracts import ToolCall
from mini_agent.tools.mcp import McpSource
from mini_agent.tools.mcp import stdio as framing
from mini_agent.tools.mcp.config import StdioMcpServer
from mini_agent.tools.mcp.convert import SchemaRefused, inline_refs

from ...support.host import process_gone
from ...support.hostile_mcp_server import ref_bomb
from ...support.waiting import wait_for

HOSTILE = Path(__file__).parents[2] / "support" / "hostile_mcp_server.py"


def hostile(mode: str, *args: str, start_timeout_sec: float = 30.0) -> StdioMcpServer:
    return StdioMcpServer(
        name="hostile",
        command=sys.executable,
        args=[str(HOSTILE), mode, *args],
        requires_approval=False,
        start_timeout_sec=start_timeout_sec,
    )


@pytest_asyncio.fixture
async def source(tmp_path: Path) -> AsyncIterator[McpSource]:
    made = McpSource(
        tmp_path,
        timeout_sec=30.0,
        max_output_bytes=1024,
        reserved=lambda: (),
        report=lambda session, message: None,
        tools_changed=lambda: None,
        person=Nobody(),
    )
    yield made
    await made.aclose()


@pytest.mark.asyncio
async def test_a_server_silent_at_initialize_fails_its_start_within_its_bound(
    source: McpSource, tmp_path: Path
) -> None:
    problems: list[str] = []
    pid_file = tmp_path / "pid"
    server = hostile("silent", str(pid_file), start_timeout_sec=3)
    async with asyncio.timeout(60):  # keeps a regression from hanging; the bound under test is 3 s
        specs = await source.acquire("s", [server], problems.append)
    assert specs == []
    assert problems == [
        "MCP server 'hostile' could not start: no answer to initialize within 3 s (startTimeoutSec)"
    ]
    await wait_for(lambda: process_gone(int(pid_file.read_text())))


@pytest.mark.asyncio
async def test_a_cancelled_start_stops_the_half_started_server(source: McpSource, tmp_path: Path) -> None:
    pid_file = tmp_path / "pid"
    starting = asyncio.ensure_future(source.acquire("s", [hostile("silent", str(pid_file))], print))
    await wait_for(lambda: pid_file.exists() and pid_file.read_text().endswith("\n"))
    starting.cancel()
    with pytest.raises(asyncio.CancelledError):
        await starting
    await wait_for(lambda: process_gone(int(pid_file.read_text())))


@pytest.mark.asyncio
async def test_a_20_mb_result_is_read_whole_then_capped(source: McpSource) -> None:
    size = 20_000_000
    (_, spec_big) = await source.acquire("s", [hostile("big", str(size))], print)
    result = await source.call(ToolCall("c", spec_big.name, {}), "s", timeout=120)
    assert not result.is_error and result.truncated
    assert result.output.startswith("x" * 1024 + "\n[") and f"{size} bytes" in result.output


@pytest.mark.asyncio
async def test_a_list_changed_storm_is_one_relist_in_flight_and_one_more(source: McpSource) -> None:
    specs = {spec.name: spec for spec in await source.acquire("s", [hostile("storm")], print)}
    await source.call(ToolCall("c", "hostile_storm", {}), "s", timeout=30)

    async def listings() -> int:
        return int((await source.call(ToolCall("c", "hostile_count", {}), "s", timeout=30)).output)

    for _ in range(500):  # the first listing, then the re-lists the storm caused
        if await listings() >= 3:
            break
        await asyncio.sleep(0.02)
    assert await listings() == 3 and "hostile_count" in specs


class _Chunks(ByteReceiveStream):
    def __init__(self, chunks: list[bytes]) -> None:
        self.chunks = chunks

    async def receive(self, max_bytes: int = 65536) -> bytes:
        if not self.chunks:
            raise EndOfStream
        return self.chunks.pop(0)

    async def aclose(self) -> None:
        self.chunks.clear()


async def _drain(stream: ByteReceiveStream) -> list[bytes]:
    out = []
    try:
        while True:
            out.append(await stream.receive())
    except EndOfStream:
        return out


@pytest.mark.asyncio
async def test_the_sdk_is_handed_whole_lines_so_its_partial_line_buffer_stays_empty() -> None:
    big = b"y" * 1_000_000
    chunks = [big[i : i + 65536] for i in range(0, len(big), 65536)] + [b"\n{}\n{", b"}\ntail"]
    lines = framing.Lines(_Chunks(chunks), limit=2_000_000, problem=print)
    out = await _drain(lines)
    assert all(chunk.endswith(b"\n") for chunk in out)
    assert b"".join(out) == big + b"\n{}\n{}\n"  # a last line without its newline is not a message


@pytest.mark.asyncio
async def test_a_message_over_the_limit_is_refused_and_said_why() -> None:
    said: list[str] = []
    lines = framing.Lines(_Chunks([b"z" * 4096] * 8 + [b"\n"]), limit=10_000, problem=said.append)
    with pytest.raises(ClosedResourceError):
        await _drain(lines)
    assert said == ["it sent a message over 10000 bytes (MAX_MESSAGE_BYTES)"]


def test_a_ref_bomb_is_refused_within_its_budget() -> None:
    with pytest.raises(SchemaRefused, match=r"over 20000 values once its \$refs are inlined"):
        inline_refs(ref_bomb(16))  # 2**16 leaves: inlined whole it would be some 200,000 values


# test_the_sdk_still_has_the_hooks_the_transport_bends: in tests/unit/tools/test_mcp_sdk_compat.py
