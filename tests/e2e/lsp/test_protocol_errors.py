"""Bad input over the real wire: every mistake gets a JSON-RPC error that names it, and the daemon
goes on serving. Frames are written by hand here, so malformed ones can be sent too."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from mini_agent.lsp.capabilities import METHODS

from ...support.raw import RawDaemon, error_of


def test_request_before_initialize_then_normal_service(raw: RawDaemon) -> None:
    assert error_of(raw.request("agent/listTools", {}))["code"] == -32002
    assert "capabilities" in raw.initialize()["result"]
    assert raw.request("agent/listTools", {})["result"] == {"tools": []}
    assert raw.close() == 0


def test_malformed_frames_get_errors_and_the_daemon_lives(raw: RawDaemon) -> None:
    raw.initialize()
    raw.send_bytes(b"{this is not json")
    parse_error = raw.answer_to(None)
    assert error_of(parse_error)["code"] == -32700
    raw.send_bytes(b'{"id": 7, "method": "agent/listTools"}')
    assert error_of(raw.answer_to(7))["code"] == -32600
    raw.send_bytes(b"[1, 2, 3]")
    assert error_of(raw.answer_to(None))["code"] == -32600
    assert error_of(raw.request("agent/nope", {}))["code"] == -32601
    assert raw.request("agent/listTools", {})["result"] == {"tools": []}
    assert raw.close() == 0


def test_an_object_inside_params_that_looks_like_a_message_is_answered_and_kept_as_it_is(
    raw: RawDaemon,
) -> None:
    raw.initialize()
    envelope = {"jsonrpc": "2.0", "id": 3, "method": "tools/call", "params": {"name": "x"}}
    schema = {"type": "object", "properties": {"envelope": {"type": "object", "default": envelope}}}
    tool = {"name": "relay", "description": "Relays a message.", "inputSchema": schema, "client": True}
    assert "error" not in raw.request("agent/registerTool", tool)
    listed = raw.request("agent/listTools", {"ignored": {"jsonrpc": "2.0", "method": "exit"}})["result"]
    assert listed["tools"][0]["inputSchema"]["properties"]["envelope"]["default"] == envelope
    assert raw.close() == 0


def test_unknown_session_names_it(raw: RawDaemon) -> None:
    raw.initialize()
    for method in ("agent/step", "agent/run", "agent/getSession", "agent/cancel"):
        error = error_of(raw.request(method, {"sessionId": "sess_missing"}))
        assert error["code"] == -32602 and "sess_missing" in error["message"]
        assert error["data"] == {"reason": "unknown_session", "sessionId": "sess_missing"}
    missing_field = error_of(raw.request("agent/step", {}))
    assert missing_field["code"] == -32602 and "sessionId" in missing_field["message"]
    wrong_type = error_of(raw.request("agent/startSession", {"task": 5}))
    assert wrong_type["code"] == -32602 and "task" in wrong_type["message"]


def test_register_tool_refusals_name_the_reason(raw: RawDaemon, tmp_path: Path) -> None:
    raw.initialize()
    (raw.workspace / "broken.py").write_text("import definitely_not_a_module_here\n")
    outside = tmp_path / "outside.py"
    outside.write_text("def f() -> int:\n    return 1\n")
    cases = {
        "missing.py": "missing.py",
        "../outside.py": "outside",
        str(outside): "outside",
        "broken.py": "definitely_not_a_module_here",
    }
    for path, reason in cases.items():
        error = error_of(raw.request("agent/registerTool", {"path": path}))
        assert error["code"] == -32602 and reason in error["message"], (path, error)
    assert raw.request("agent/listTools", {})["result"] == {"tools": []}


def test_invalid_initialization_options_are_reported_on_agent_requests(raw: RawDaemon) -> None:
    raw.initialize({"llm": {"toolMode": "telepathy"}, "maxSteps": "many"})
    error = error_of(raw.request("agent/listTools", {}))
    assert error["code"] == -32602
    assert "llm.toolMode" in error["message"] and "maxSteps" in error["message"]


JSON = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | st.text(max_size=20),
    lambda children: (
        st.lists(children, max_size=4) | st.dictionaries(st.text(max_size=10), children, max_size=4)
    ),
    max_leaves=12,
)
FIELDS = [
    "sessionId",
    "task",
    "path",
    "function",
    "name",
    "tools",
    "llm",
    "maxSteps",
    "decision",
    "toolCallId",
    "client",
    "inputSchema",
    "status",
    "limit",
    "offset",
    "requiresApproval",
]
PARAMS = JSON | st.dictionaries(st.sampled_from(FIELDS), JSON, max_size=5)


def test_ill_typed_params_to_every_method_always_get_an_answer(raw: RawDaemon) -> None:
    raw.initialize()

    @settings(max_examples=300, deadline=None, suppress_health_check=list(HealthCheck), database=None)
    @given(method=st.sampled_from(METHODS), params=PARAMS)
    def probe(method: str, params: Any) -> None:
        answer = raw.request(method, params)
        if "error" in answer:
            assert answer["error"]["code"] in (-32602, -32001), (method, params, answer)
            assert answer["error"]["message"]

    probe()
    assert raw.process.poll() is None
    assert "tools" in raw.request("agent/listTools", {})["result"]
    assert raw.close() == 0
