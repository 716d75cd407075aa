"""The LSP door answers bad envelopes as the ACP and MCP doors do (`plumbing.jsonrpc`), framed and as
NDJSON, and stays up."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

from ...support.jsonrpc_edge import assert_every_case_answered_alike
from ...support.ndjson import RawLines
from ...support.raw import RawDaemon

NDJSON = [sys.executable, "-m", "mini_agent.cli", "serve", "--ndjson"]


def test_bad_envelopes_in_frames_get_the_shared_answers(raw: RawDaemon) -> None:
    raw.initialize()

    def answer(body: bytes) -> dict[str, Any]:
        raw.send_bytes(body)
        while "method" in (message := raw.read()):
            raw.notifications.append(message)
        return message

    assert_every_case_answered_alike(answer)
    assert raw.request("agent/listTools", {})["result"] == {"tools": []}
    assert raw.close() == 0


def test_bad_envelopes_in_lines_get_the_shared_answers(workspace: Path) -> None:
    lines = RawLines(NDJSON, workspace)
    init = {"processId": None, "rootUri": workspace.as_uri(), "capabilities": {}}
    assert "capabilities" in lines.request("initialize", init)["result"]
    lines.send_line(b'{"jsonrpc": "2.0", "method": "initialized", "params": {}}')
    assert_every_case_answered_alike(lines.answer)
    assert lines.request("agent/listTools", {})["result"] == {"tools": []}
    lines.request("shutdown")
    lines.send_line(b'{"jsonrpc": "2.0", "method": "exit"}')
    assert lines.process.wait(timeout=30) == 0
