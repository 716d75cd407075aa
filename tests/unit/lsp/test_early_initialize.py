"""boot.py's early `initialize` answer against the one pygls computes, for every client shape the tests
know: the daemon's own server runs pygls' initialize in memory, and `CompatProtocol` compares."""

from __future__ import annotations

import json
from typing import Any

import pytest
from mini_agent.lsp import boot, pygls_compat
from mini_agent.lsp.server import AgentProtocol, server

from ...support.clients import CLIENTS as SHAPES
from ...support.writer import Sink

# The client capabilities the e2e tests send (support.clients; tests/e2e/lsp/test_protocol_errors.py's is
# "protocol errors" below), and a few neighbours of theirs that the early answer treats apart.
CLIENTS: dict[str, dict[str, Any]] = {
    **SHAPES,
    "utf-8 first": {"general": {"positionEncodings": ["utf-8", "utf-32"]}},
    "no encodings": {"general": {"positionEncodings": []}},
    "willSave only": {"textDocument": {"synchronization": {"willSave": True}}},
    "null parts": {"general": None, "textDocument": None},
}
PARAMS: dict[str, dict[str, Any]] = {
    **{f"startup: {name}": {"processId": 1, "rootUri": "file:///tmp/ws", "capabilities": capabilities,
                            "initializationOptions": {"store": {"enabled": False}}}
       for name, capabilities in CLIENTS.items()},
    "protocol errors": {"processId": None, "rootUri": "file:///tmp/ws", "capabilities": {},
                        "initializationOptions": {}},
    "no options": {"processId": None, "rootUri": None, "capabilities": {}},
}


@pytest.fixture
def sink() -> Sink:
    out = Sink()
    server.protocol.set_writer(out, include_headers=True)
    return out


def run_initialize(params: dict[str, Any], msg_id: int) -> None:
    """Answer early as boot.py does, then let pygls handle the same message."""
    body = json.dumps({"jsonrpc": "2.0", "id": msg_id, "method": "initialize", "params": params}).encode()
    early = boot.early_answer(body)
    assert early is not None, "boot.py leaves this initialize to pygls"
    protocol = server.protocol
    assert isinstance(protocol, AgentProtocol)
    protocol.answered_early = early
    protocol.handle_message(protocol.structure_message(json.loads(body)))
    assert protocol.answered_early is None, "pygls' answer never reached the comparison"


@pytest.mark.parametrize("shape", sorted(PARAMS))
def test_the_early_answer_matches_pygls_for_each_client_shape(
    shape: str, sink: Sink, caplog: pytest.LogCaptureFixture
) -> None:
    with caplog.at_level("ERROR", logger="mini_agent"):
        run_initialize(PARAMS[shape], 1)
    assert [record.getMessage() for record in caplog.records if record.levelname == "ERROR"] == []
    assert sink.buffer.getvalue() == b""  # pygls' own answer is not sent a second time


def test_a_mismatch_is_an_error_in_the_log(sink: Sink, caplog: pytest.LogCaptureFixture) -> None:
    params = PARAMS["startup: editor-like"]
    body = json.dumps({"jsonrpc": "2.0", "id": 2, "method": "initialize", "params": params}).encode()
    early = boot.early_answer(body)
    assert early is not None
    early["result"]["capabilities"]["textDocumentSync"]["willSave"] = True
    assert isinstance(server.protocol, pygls_compat.CompatProtocol)
    server.protocol.answered_early = early
    with caplog.at_level("ERROR", logger="mini_agent"):
        server.protocol.handle_message(server.protocol.structure_message(json.loads(body)))
    assert "$.capabilities.textDocumentSync.willSave: True here, False in pygls'" in caplog.text
    assert sink.buffer.getvalue() == b""
