"""The ACP door answers bad envelopes as the LSP and MCP doors do (`plumbing.jsonrpc`), and stays up;
a request with `"id": null` is now refused (-32600) rather than taken."""

from __future__ import annotations

from pathlib import Path

from ...support.acp import AGENT
from ...support.jsonrpc_edge import assert_every_case_answered_alike
from ...support.ndjson import RawLines


def test_bad_envelopes_get_the_shared_answers(workspace: Path) -> None:
    agent = RawLines(AGENT, workspace)
    assert "result" in agent.request("initialize", {"protocolVersion": 1})
    assert_every_case_answered_alike(agent.answer)
    assert "result" in agent.request("initialize", {"protocolVersion": 1})
    assert agent.close() == 0
