"""The JSON-RPC edge every door reads through: the envelope rules, the depth rule, the codes and their
messages, and `error_data`."""

from __future__ import annotations

import json
from typing import Any

import pytest
from mini_agent.plumbing import jsonrpc
from mini_agent.plumbing.jsonrpc import JsonRpcError
from pydantic_core import from_json


def refusal(message: Any, *, by_position: bool = False) -> JsonRpcError:
    problem = jsonrpc.check(message, by_position=by_position)
    assert problem is not None, message
    return problem


@pytest.mark.parametrize(
    "message",
    [
        {"jsonrpc": "2.0", "id": 1, "method": "m"},
        {"jsonrpc": "2.0", "id": "a", "method": "m", "params": {}},
        {"jsonrpc": "2.0", "id": 0, "method": "shutdown", "params": None},
        {"jsonrpc": "2.0", "method": "note"},
        {"jsonrpc": "2.0", "method": "note", "params": {"x": [1]}},
        {"jsonrpc": "2.0", "id": 3, "result": None},
        {"jsonrpc": "2.0", "id": 3, "error": {"code": 1, "message": "no"}},
        {"jsonrpc": "2.0", "id": None, "error": {"code": -32700, "message": "Parse error"}},
    ],
)
def test_messages_that_follow_the_rules_pass(message: dict[str, Any]) -> None:
    assert jsonrpc.check(message) is None


@pytest.mark.parametrize(
    ("message", "code", "msg_id", "text"),
    [
        ([1, 2], -32600, None, "a JSON-RPC message is an object, not an array"),
        ("x", -32600, None, "a JSON-RPC message is an object, not a string"),
        ({"id": 7, "method": "m"}, -32600, 7, '"jsonrpc" must be "2.0"'),
        ({"jsonrpc": "1.0", "id": 7, "method": "m"}, -32600, 7, '"jsonrpc" must be "2.0"'),
        ({"jsonrpc": "2.0", "id": None, "method": "m"}, -32600, None, "a request's id must not be null"),
        ({"jsonrpc": "2.0", "id": True, "method": "m"}, -32600, None, "id must be a string or an integer"),
        ({"jsonrpc": "2.0", "id": 1.5, "method": "m"}, -32600, None, "id must be a string or an integer"),
        ({"jsonrpc": "2.0", "id": [1], "method": "m"}, -32600, None, "id must be a string or an integer"),
        ({"jsonrpc": "2.0", "id": None, "result": 1}, -32600, None, "id must be a string or an integer"),
        ({"jsonrpc": "2.0", "id": 2, "method": 5}, -32600, 2, "method must be a string"),
        ({"jsonrpc": "2.0"}, -32600, None, "neither a request, a notification nor a response"),
        ({"jsonrpc": "2.0", "id": 4}, -32600, 4, "a response has either a result or an error"),
        ({"jsonrpc": "2.0", "id": 4, "result": 1, "error": {}}, -32600, 4, "either a result or an error"),
        (
            {"jsonrpc": "2.0", "id": 5, "method": "m", "params": 3},
            -32602,
            5,
            "must be an object, not a number",
        ),
        (
            {"jsonrpc": "2.0", "id": 5, "method": "m", "params": "p"},
            -32602,
            5,
            "must be an object, not a string",
        ),
        ({"jsonrpc": "2.0", "id": 5, "method": "m", "params": False}, -32602, 5, "not a boolean"),
        (
            {"jsonrpc": "2.0", "id": 6, "method": "m", "params": [1]},
            -32602,
            6,
            "must be an object, not an array",
        ),
        ({"jsonrpc": "2.0", "method": "m", "params": [1]}, -32602, None, "must be an object, not an array"),
    ],
)
def test_each_broken_rule_is_named_with_its_code_and_the_id_to_answer(
    message: Any, code: int, msg_id: Any, text: str
) -> None:
    problem = refusal(message)
    assert (problem.code, problem.msg_id) == (code, msg_id)
    assert text in problem.message
    prefix = {-32600: "Invalid Request: ", -32602: "Invalid params: "}[code]
    assert problem.message.startswith(prefix)


def test_params_by_position_pass_only_where_a_door_takes_them() -> None:
    message = {"jsonrpc": "2.0", "id": 1, "method": "m", "params": [1, 2]}
    assert jsonrpc.check(message, by_position=True) is None
    assert refusal(message).code == jsonrpc.INVALID_PARAMS
    scalar = refusal({**message, "params": 1}, by_position=True)
    assert scalar.message == "Invalid params: params must be an object or an array, not a number"


def test_read_returns_the_message_or_raises_the_refusal() -> None:
    assert jsonrpc.read(b'{"jsonrpc": "2.0", "method": "m"}') == {"jsonrpc": "2.0", "method": "m"}
    with pytest.raises(JsonRpcError) as raised:
        jsonrpc.read('{"jsonrpc": "2.0", "id": null, "method": "m"}')
    assert raised.value.response() == {
        "jsonrpc": "2.0",
        "id": None,
        "error": {
            "code": -32600,
            "message": "Invalid Request: a request's id must not be null (a notification has no id)",
        },
    }


def test_text_that_is_not_json_is_a_parse_error_with_id_null() -> None:
    with pytest.raises(JsonRpcError) as raised:
        jsonrpc.decode(b"{this is not json")
    assert raised.value.code == -32700 and raised.value.msg_id is None
    assert raised.value.message.startswith("Parse error: the message is not JSON (")


def test_decode_falls_back_where_the_door_does() -> None:
    surrogate = b'{"jsonrpc": "2.0", "method": "m", "params": {"s": "\\udc80"}}'
    assert jsonrpc.decode(surrogate)["params"]["s"] == "\udc80"  # the json module reads it
    with pytest.raises(JsonRpcError) as raised:
        jsonrpc.decode(surrogate, fallback=None)  # the MCP SDK's reader would drop it
    assert raised.value.code == -32700


def nest(levels: int, inner: str = "1") -> str:
    return "[" * levels + inner + "]" * levels


@pytest.mark.parametrize("inner", ["1", '"s"', "{}", "null"])
def test_max_depth_is_what_pydantic_cores_reader_takes(inner: str) -> None:
    """`decode` relies on it: what that reader takes is within the rule, unmeasured."""
    assert from_json(nest(jsonrpc.MAX_DEPTH, inner)) is not None
    with pytest.raises(ValueError, match="recursion limit"):
        from_json(nest(jsonrpc.MAX_DEPTH + 1, inner))
    objects = '{"a": ' * (jsonrpc.MAX_DEPTH + 1) + inner + "}" * (jsonrpc.MAX_DEPTH + 1)
    with pytest.raises(ValueError, match="recursion limit"):
        from_json(objects)


def test_the_depth_rule_counts_levels_and_ignores_brackets_in_strings() -> None:
    assert not jsonrpc.too_deep(nest(jsonrpc.MAX_DEPTH))
    assert jsonrpc.too_deep(nest(jsonrpc.MAX_DEPTH + 1))
    assert jsonrpc.too_deep(nest(jsonrpc.MAX_DEPTH + 1).encode())
    brackets = json.dumps({"s": "[" * 5000 + '\\"{' * 500})
    assert not jsonrpc.too_deep(brackets) and not jsonrpc.too_deep(brackets.encode())
    wide = json.dumps([[[1]] * 1000])  # many brackets, three levels
    assert not jsonrpc.too_deep(wide)
    assert jsonrpc.decode(nest(jsonrpc.MAX_DEPTH)) is not None  # the limit itself is read


def test_a_message_nested_too_deeply_is_refused_with_its_id_and_the_deep_field() -> None:
    deep = '{"jsonrpc": "2.0", "id": 9, "method": "tools/call", "params": {"name": "t", '
    deep += '"arguments": {"file_path": ' + nest(3000) + "}}}"
    with pytest.raises(JsonRpcError) as raised:
        jsonrpc.decode(deep)
    assert (raised.value.code, raised.value.msg_id) == (-32602, 9)
    assert raised.value.message.startswith("Invalid params: params.arguments.file_path[0]")
    assert raised.value.message.endswith(f"is nested deeper than {jsonrpc.MAX_DEPTH} levels")


def test_deep_nesting_outside_params_is_an_invalid_request() -> None:
    for text, msg_id in (
        (nest(5000), None),
        ('{"jsonrpc": "2.0", "id": "x", "extra": ' + nest(500) + "}", "x"),
    ):
        with pytest.raises(JsonRpcError) as raised:
            jsonrpc.decode(text.encode())
        assert (raised.value.code, raised.value.msg_id) == (-32600, msg_id)
        assert raised.value.message.endswith(f"is nested deeper than {jsonrpc.MAX_DEPTH} levels")
    with pytest.raises(JsonRpcError) as raised:
        jsonrpc.decode(nest(5000))
    assert (
        raised.value.message
        == f"Invalid Request: the message is nested deeper than {jsonrpc.MAX_DEPTH} levels"
    )


def test_deep_text_that_is_not_json_is_a_parse_error() -> None:
    with pytest.raises(JsonRpcError) as raised:
        jsonrpc.decode("[" * 5000)
    assert raised.value.code == -32700 and raised.value.msg_id is None


def test_one_named_constructor_per_code() -> None:
    made = [
        JsonRpcError.parse_error("x"),
        JsonRpcError.invalid_request("x"),
        JsonRpcError.method_not_found("agent/nope"),
        JsonRpcError.invalid_params("x"),
        JsonRpcError.internal_error("the model server failed"),
    ]
    assert [(e.code, e.message) for e in made] == [
        (-32700, "Parse error: x"),
        (-32600, "Invalid Request: x"),
        (-32601, "Method not found: agent/nope"),
        (-32602, "Invalid params: x"),
        (-32603, "the model server failed"),
    ]
    failed = JsonRpcError.internal_error("boom", jsonrpc.error_data("model_failed"), msg_id=3)
    assert failed.error_object() == {"code": -32603, "message": "boom", "data": {"reason": "model_failed"}}
    assert failed.response()["id"] == 3


def test_error_data_spells_the_details_in_camel_case_after_the_reason() -> None:
    data = jsonrpc.error_data("unknown_approval", {"session_id": "s", "tool_call_id": "c"})
    assert data == {"reason": "unknown_approval", "sessionId": "s", "toolCallId": "c"}
    assert list(data) == ["reason", "sessionId", "toolCallId"]
    assert jsonrpc.error_data("store") == {"reason": "store"}
