"""Every domain error reaches the client with its code and a `data.reason` it can branch on, through
the real daemon over real stdio; an unknown tool name and an unknown approval are told apart."""

from __future__ import annotations

from ...support.raw import RawDaemon, error_of


def test_each_refusal_carries_its_reason(raw: RawDaemon) -> None:
    raw.initialize({"store": {"enabled": False}})
    unknown_tool = error_of(raw.request("agent/startSession", {"task": "t", "tools": ["ghost"]}))
    assert unknown_tool["code"] == -32602 and "ghost" in unknown_tool["message"]
    assert unknown_tool["data"] == {"reason": "unknown_tool", "tools": ["ghost"]}

    session_id = raw.request("agent/startSession", {"task": "t"})["result"]["sessionId"]
    approval = {"sessionId": session_id, "toolCallId": "c_nope", "decision": "allow_once"}
    unknown_call = error_of(raw.request("agent/approve", approval))
    assert unknown_call["code"] == -32602 and "c_nope" in unknown_call["message"]
    assert unknown_call["data"] == {
        "reason": "unknown_approval",
        "sessionId": session_id,
        "toolCallId": "c_nope",
    }

    refused = error_of(raw.request("agent/registerTool", {"path": "no_such_file.py"}))
    assert refused["code"] == -32602 and refused["data"] == {"reason": "registration_refused"}

    bad = error_of(raw.request("agent/step", {}))
    assert bad["data"]["reason"] == "invalid_params" and bad["data"]["errors"]
    assert raw.close() == 0
