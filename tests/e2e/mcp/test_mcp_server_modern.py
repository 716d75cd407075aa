"""`mini-agent mcp`'s modern surface, through the official MCP SDK's client over the command's real
stdio: output schemas and structured results from return annotations, tool annotations from the
decorator, progress reports as `notifications/progress`, and `notifications/tools/list_changed`
after a served file is saved (a file that stops registering keeps its tools, and stderr says why)."""

from __future__ import annotations

import sys
from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager
from pathlib import Path
from typing import IO, Any

import mcp_types
import pytest
from mcp.client.session import ClientSession
from mcp.client.stdio import StdioServerParameters, stdio_client

from ...support.daemon import daemon_env
from ...support.waiting import wait_for

MODERN = '''
import time
from dataclasses import dataclass
from typing import TypedDict

from mini_agent import tool
from mini_agent.tools.progress import report


class Point(TypedDict):
    x: int
    y: int


@dataclass
class Size:
    width: int
    height: int = 1


@tool(read_only=True, idempotent=True)
def halve(n: int) -> int:
    """Half of n, rounded down."""
    return n // 2


def where(x: int) -> Point:
    """A point."""
    return {"x": x, "y": -x}


def size(width: int) -> Size:
    """A size."""
    return Size(width)


def untyped(x: int):
    """No return annotation."""
    return [x, x]


def liar() -> int:
    """Says int, returns text."""
    return "not a number"


def failing() -> int:
    """Raises."""
    raise ValueError("no luck")


@tool(destructive=True, open_world=False)
def wipe() -> None:
    """Pretends to delete."""


def slow() -> str:
    """Reports three steps."""
    for step in range(3):
        report(f"step {step + 1}", fraction=(step + 1) / 3)
        time.sleep(0.15)
    return "done"
'''

ADDED = '''

def added(a: int, b: int) -> int:
    """A tool that appears on save."""
    return a + b
'''


@asynccontextmanager
async def served(
    root: Path, *files: str, errlog: IO[str] = sys.stderr, notes: list[Any] | None = None
) -> AsyncIterator[ClientSession]:
    args = ["-m", "mini_agent.cli", "mcp", "--root", str(root), *files]
    server = StdioServerParameters(command=sys.executable, args=args, env=daemon_env())

    async def note(message: Any) -> None:
        if notes is not None:
            notes.append(message)

    async with (
        stdio_client(server, errlog=errlog) as streams,
        ClientSession(*streams, message_handler=note) as s,
    ):
        await s.initialize()
        yield s


def text_of(result: mcp_types.CallToolResult) -> str:
    assert len(result.content) == 1 and isinstance(result.content[0], mcp_types.TextContent)
    return result.content[0].text


@pytest.mark.asyncio
async def test_structured_results_follow_the_return_annotation(tmp_path: Path) -> None:
    (tmp_path / "modern.py").write_text(MODERN)
    async with served(tmp_path, "modern.py") as session:
        tools = {t.name: t for t in (await session.list_tools()).tools}
        halve = await session.call_tool("halve", {"n": 42})
        where = await session.call_tool("where", {"x": 3})
        size = await session.call_tool("size", {"width": 5})
        untyped = await session.call_tool("untyped", {"x": 7})
        failing = await session.call_tool("failing", {})
    assert tools["halve"].output_schema == {
        "type": "object",
        "title": "halveOutput",
        "properties": {"result": {"type": "integer"}},
        "required": ["result"],
    }
    assert tools["where"].output_schema is not None
    assert tools["where"].output_schema["properties"] == {"x": {"type": "integer"}, "y": {"type": "integer"}}
    assert tools["untyped"].output_schema is None
    assert (halve.structured_content, text_of(halve), halve.is_error) == ({"result": 21}, "21", False)
    assert where.structured_content == {"x": 3, "y": -3}
    assert size.structured_content == {"width": 5, "height": 1}
    assert (untyped.structured_content, text_of(untyped)) == (None, "[7,7]")
    assert failing.is_error and failing.structured_content is None and "no luck" in text_of(failing)


@pytest.mark.asyncio
async def test_a_value_that_breaks_its_annotation_is_an_error(tmp_path: Path) -> None:
    (tmp_path / "modern.py").write_text(MODERN)
    log = tmp_path / "stderr.txt"
    with log.open("w") as errlog:
        async with served(tmp_path, "modern.py", errlog=errlog) as session:
            await session.list_tools()  # the SDK client checks results against the listed schemas
            raw = await session.send_request(
                mcp_types.CallToolRequest(params=mcp_types.CallToolRequestParams(name="liar", arguments={})),
                mcp_types.CallToolResult,
            )
    assert raw.is_error and raw.structured_content is None
    assert "does not match its outputSchema" in text_of(raw)
    assert "does not match its return annotation" in log.read_text()


@pytest.mark.asyncio
async def test_annotations_come_from_the_decorator(tmp_path: Path) -> None:
    (tmp_path / "modern.py").write_text(MODERN)
    async with served(tmp_path, "modern.py") as session:
        tools = {t.name: t for t in (await session.list_tools()).tools}
    assert tools["halve"].annotations == mcp_types.ToolAnnotations(read_only_hint=True, idempotent_hint=True)
    assert tools["wipe"].annotations == mcp_types.ToolAnnotations(
        destructive_hint=True, open_world_hint=False
    )
    assert tools["where"].annotations is None


@pytest.mark.asyncio
async def test_progress_reaches_a_client_that_asks_for_it(tmp_path: Path) -> None:
    (tmp_path / "modern.py").write_text(MODERN)
    reports: list[tuple[float, float | None, str | None]] = []

    async def progress(value: float, total: float | None, message: str | None) -> None:
        reports.append((value, total, message))

    async with served(tmp_path, "modern.py") as session:
        result = await session.call_tool("slow", {}, progress_callback=progress)
        quiet = await session.call_tool("slow", {})
    assert result.structured_content == {"result": "done"} and quiet.structured_content == {"result": "done"}
    assert [message for _, _, message in reports] == ["step 1", "step 2", "step 3"]
    assert [round(value) for value, _, _ in reports] == [33, 67, 100]
    assert {total for _, total, _ in reports} == {100.0}


@pytest.mark.asyncio
async def test_a_saved_file_changes_the_list_and_the_client_is_told(tmp_path: Path) -> None:
    source = tmp_path / "modern.py"
    source.write_text(MODERN)
    notes: list[Any] = []
    log = tmp_path / "stderr.txt"

    def told() -> int:
        return sum(isinstance(n, mcp_types.ToolListChangedNotification) for n in notes)

    with log.open("w") as errlog:
        async with served(tmp_path, "modern.py", errlog=errlog, notes=notes) as session:
            before = [t.name for t in (await session.list_tools()).tools]
            source.write_text(MODERN + ADDED)
            await wait_for(lambda: told() == 1)
            after = [t.name for t in (await session.list_tools()).tools]
            added = await session.call_tool("added", {"a": 2, "b": 3})
            source.write_text(MODERN + ADDED + "\ndef broken(:\n")
            await wait_for(lambda: "does not register" in log.read_text())
            still = [t.name for t in (await session.list_tools()).tools]
    assert "added" not in before and after == [*before, "added"]
    assert added.structured_content == {"result": 5}
    assert still == after and told() == 1


GUARDED = '''
from mini_agent import tool


@tool(requires_approval=True, read_only=True)
def peek(path: str) -> str:
    """Only reads."""
    return path


@tool(requires_approval=True, read_only=True, destructive=True)
def peek_and_drop(path: str) -> str:
    """Reads, and may destroy."""
    return path


@tool(requires_approval=True)
def drop(path: str) -> str:
    """May destroy."""
    return path
'''


@pytest.mark.asyncio
async def test_a_read_only_tool_is_not_asked_about_through_the_lsp_door(
    workspace: Path, daemon_factory: Callable[..., Any]
) -> None:
    (workspace / "guarded.py").write_text(GUARDED)
    client = await daemon_factory({"store": {"enabled": False}})
    await client.request("agent/registerTool", {"path": "guarded.py"})
    listed = (await client.request("agent/listTools", None))["tools"]
    guarded = ("peek", "peek_and_drop", "drop")
    asks = {t["name"]: t["requiresApproval"] for t in listed if t["name"] in guarded}
    assert asks == {"peek": False, "peek_and_drop": True, "drop": True}
    annotations = {t["name"]: t.get("annotations") for t in listed if t["name"] in guarded}
    assert annotations == {
        "peek": {"readOnlyHint": True},
        "peek_and_drop": {"readOnlyHint": True, "destructiveHint": True},
        "drop": None,
    }
    # agent/registerTool's hints override the decorator's: the registering client has the last word
    await client.request(
        "agent/registerTool", {"path": "guarded.py", "function": "drop", "readOnly": True, "openWorld": True}
    )
    relisted = {t["name"]: t for t in (await client.request("agent/listTools", None))["tools"]}
    assert relisted["drop"]["requiresApproval"] is False
    assert relisted["drop"]["annotations"] == {"readOnlyHint": True, "openWorldHint": True}
