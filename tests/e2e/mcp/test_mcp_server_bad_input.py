"""`mini-agent mcp` answers every line, with the error that names what is wrong, and stays up: one
test per place the MCP SDK's server is bent (the lines its stdio reader takes, the wording of -32602)."""

from __future__ import annotations

import json
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from ...support.ndjson import RawLines

MCP_COMMAND = [sys.executable, "-m", "mini_agent.cli", "mcp"]


def request(msg_id: Any, method: Any, params: Any = None, version: str = "2.0") -> bytes:
    message = {"jsonrpc": version, "id": msg_id, "method": method}
    if params is not None:
        message["params"] = params
    return json.dumps(message).encode()


@pytest.fixture
def server(workspace: Path) -> Iterator[RawLines]:
    raw = RawLines([*MCP_COMMAND, "--root", str(workspace), "--tools", "tools.py"], workspace)
    hello = {"protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "t", "version": "1"}}
    assert "result" in raw.request("initialize", hello)
    raw.send_line(b'{"jsonrpc": "2.0", "method": "notifications/initialized"}')
    yield raw
    assert raw.close() == 0


def alive(server: RawLines) -> bool:
    return [t["name"] for t in server.request("tools/list")["result"]["tools"]] == [
        "list_python_files",
        "count_file_lines",
    ]


def test_lines_the_sdk_reader_drops_are_answered(server: RawLines) -> None:
    deep_argument = b'{"jsonrpc": "2.0", "id": 9, "method": "tools/call", "params": '
    deep_argument += b'{"name": "count_file_lines", "arguments": {"file_path": '
    deep_argument += b"[" * 3000 + b"]" * 3000 + b"}}}"
    cases: list[tuple[bytes, Any, int, str]] = [
        (b"this is not json {", None, -32700, "Parse error"),
        (b"[" * 5000 + b"]" * 5000, None, -32600, "deeper than"),
        (request(1, "tools/list", version="1.0"), 1, -32600, "jsonrpc"),
        (request(2, 5), 2, -32600, "method"),
        (request(3, "tools/call", [1]), 3, -32602, "params"),
        (request(True, "tools/list"), None, -32600, "id"),
        (deep_argument, 9, -32602, "params.arguments.file_path"),
    ]
    for line, msg_id, code, named in cases:
        answer = server.answer(line)
        assert answer["id"] == msg_id and answer["error"]["code"] == code, (line[:60], answer)
        assert named in answer["error"]["message"], answer
    assert alive(server)


def test_params_that_do_not_validate_are_refused_naming_the_field(server: RawLines) -> None:
    error = server.answer(request(4, "tools/call", {"name": 5}))["error"]
    assert error["code"] == -32602 and "params.name" in error["message"], error
    assert alive(server)
