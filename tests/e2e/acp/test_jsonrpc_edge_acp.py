"""The ACP door answers bad envelopes as the LSP and MCP doors do (`plumbing.jsonrpc`), and stays up;
a request with `"id": null` is now refused (-32600) rather than taken."""

from __future__ import annotations

import socket
from pathlib import Path

from ...support.acp import AGENT, workspace_config
from ...support.jsonrpc_edge import assert_every_case_answered_alike
from ...support.ndjson import RawLines


def test_bad_envelopes_get_the_shared_answers(workspace: Path) -> None:
    agent = RawLines(AGENT, workspace)
    assert "result" in agent.request("initialize", {"protocolVersion": 1})
    assert_every_case_answered_alike(agent.answer)
    assert "result" in agent.request("initialize", {"protocolVersion": 1})
    assert agent.close() == 0


def test_a_failing_model_server_is_an_internal_error_with_its_reason(workspace: Path) -> None:
    """-32603 comes from `JsonRpcError.internal_error` now, not a literal: same code, words and data."""
    with socket.socket() as probe:  # a port nothing listens on
        probe.bind(("127.0.0.1", 0))
        url = f"http://127.0.0.1:{probe.getsockname()[1]}/v1"
    workspace_config(workspace, url)
    agent = RawLines((*AGENT, "--trust"), workspace)
    assert "result" in agent.request("initialize", {"protocolVersion": 1})
    session = agent.request("session/new", {"cwd": str(workspace), "mcpServers": []})["result"]
    session_id = session["sessionId"]
    prompt = [{"type": "text", "text": "go"}]
    error = agent.request("session/prompt", {"sessionId": session_id, "prompt": prompt})["error"]
    assert error["code"] == -32603 and error["data"] == {"reason": "model_failed"}, error
    assert error["message"] and not error["message"].startswith("Internal error"), error
    assert agent.close() == 0
