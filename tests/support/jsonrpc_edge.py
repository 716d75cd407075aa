"""Bad envelopes and the one answer each gets on every door (`plumbing.jsonrpc`): the LSP, ACP and MCP
doors' tests send the same bytes and expect the same id, code and message, word for word."""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

DEEP_PARAMS = b'{"jsonrpc": "2.0", "id": 12, "method": "x/y", "params": {"a": {"b": '
DEEP_PARAMS += b"[" * 3000 + b"]" * 3000 + b"}}}"


def line(message: Any) -> bytes:
    return json.dumps(message).encode()


# (what is sent, the id answered, the code, the message: whole, or its start where it ends with "(")
CASES: list[tuple[bytes, Any, int, str]] = [
    (b"this is not json {", None, -32700, "Parse error: the message is not JSON ("),
    (b"[1, 2]", None, -32600, "Invalid Request: a JSON-RPC message is an object, not an array"),
    (
        line({"jsonrpc": "1.0", "id": 3, "method": "x/y"}),
        3,
        -32600,
        'Invalid Request: "jsonrpc" must be "2.0"',
    ),
    (line({"id": 4, "method": "x/y"}), 4, -32600, 'Invalid Request: "jsonrpc" must be "2.0"'),
    (
        line({"jsonrpc": "2.0", "id": None, "method": "x/y", "params": {}}),
        None,
        -32600,
        "Invalid Request: a request's id must not be null (a notification has no id)",
    ),
    (
        line({"jsonrpc": "2.0", "id": True, "method": "x/y"}),
        None,
        -32600,
        "Invalid Request: id must be a string or an integer",
    ),
    (
        line({"jsonrpc": "2.0", "id": 1.5, "method": "x/y"}),
        None,
        -32600,
        "Invalid Request: id must be a string or an integer",
    ),
    (line({"jsonrpc": "2.0", "id": 7, "method": 5}), 7, -32600, "Invalid Request: method must be a string"),
    (
        line({"jsonrpc": "2.0", "id": 8, "method": "x/y", "params": [1]}),
        8,
        -32602,
        "Invalid params: params must be an object, not an array",
    ),
    (
        line({"jsonrpc": "2.0", "id": "nine", "method": "x/y", "params": 3}),
        "nine",
        -32602,
        "Invalid params: params must be an object, not a number",
    ),
    (
        line({"jsonrpc": "2.0"}),
        None,
        -32600,
        "Invalid Request: neither a request, a notification nor a response",
    ),
    (
        line({"jsonrpc": "2.0", "id": 11}),
        11,
        -32600,
        "Invalid Request: a response has either a result or an error",
    ),
    (
        b"[" * 5000 + b"]" * 5000,
        None,
        -32600,
        "Invalid Request: the message is nested deeper than 200 levels",
    ),
    (DEEP_PARAMS, 12, -32602, "Invalid params: params.a.b[0][0][0][0][0] is nested deeper than 200 levels"),
]


def assert_every_case_answered_alike(answer: Callable[[bytes], dict[str, Any]]) -> None:
    """`answer` sends one message through a door and returns the answer that comes back."""
    for sent, msg_id, code, message in CASES:
        got = answer(sent)
        assert set(got) == {"jsonrpc", "id", "error"} and got["id"] == msg_id, (sent[:80], got)
        error = got["error"]
        assert error["code"] == code, (sent[:80], got)
        if message.endswith("("):
            assert error["message"].startswith(message), (sent[:80], got)
        else:
            assert error["message"] == message, (sent[:80], got)
