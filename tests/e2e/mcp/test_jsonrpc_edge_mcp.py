"""`mini-agent mcp` answers bad envelopes as the LSP and ACP doors do (`plumbing.jsonrpc`), and stays up."""

from __future__ import annotations

import sys
from pathlib import Path

from ...support.jsonrpc_edge import assert_every_case_answered_alike
from ...support.ndjson import RawLines

MCP_COMMAND = [sys.executable, "-m", "mini_agent.cli", "mcp"]


def test_bad_envelopes_get_the_shared_answers(workspace: Path) -> None:
    server = RawLines([*MCP_COMMAND, "--root", str(workspace), "--tools", "tools.py"], workspace)
    hello = {"protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "t", "version": "1"}}
    assert "result" in server.request("initialize", hello)
    server.send_line(b'{"jsonrpc": "2.0", "method": "notifications/initialized"}')
    assert_every_case_answered_alike(server.answer)
    assert len(server.request("tools/list")["result"]["tools"]) == 2
    assert server.close() == 0
