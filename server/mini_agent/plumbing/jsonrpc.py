"""JSON-RPC 2.0 at the doors' edge, written once: the error codes, one envelope rule set, one depth
rule, and the `data` of a refusal. The LSP, ACP and MCP doors read every incoming message with `read`
(or `decode` and `check`), so the same bad message gets the same answer on all three.

The envelope rules (JSON-RPC 2.0, with the id narrowed as LSP and MCP narrow it):

- a message is an object; a batch (an array) is refused, as LSP and MCP (2025-06-18) have none;
- `"jsonrpc"` is `"2.0"`;
- an id is a string or an integer (a fraction or a boolean is refused); null only in an error
  response (the spec's answer to a message whose id could not be read). A request's id is never
  null: JSON-RPC 2.0 discourages it and LSP's and MCP's types forbid it; a message without an id is
  a notification;
- `method`, where present, is a string; a message without one is a response: it has an id and
  either a `result` or an `error`;
- `params` is absent, null (taken as absent: clients send it for `shutdown`), an object, or an
  array where the door takes params by position. Every method of all three doors takes its params
  by name, so the doors read with `by_position=False`: an array there, or a scalar anywhere, is
  -32602 (`Invalid params: params must be an object, not an array`), the code LSP and MCP clients
  get for params of the wrong type; the id is the request's.

The depth rule: a message nested deeper than `MAX_DEPTH` levels (the envelope's own object is the
first) is refused, on every door. `MAX_DEPTH` is the limit of pydantic-core's JSON reader (the MCP
SDK's, and the daemon's `jsoncodec`), which every message is read with first: what it reads is
within the rule, at no extra cost (it leaves an empty innermost container uncounted). Only text it
refuses is measured (`too_deep`), never parsed when too deep (the json module would recurse into a
`RecursionError`). Its id and the field that goes deep are read from a copy cut at `KEPT_LEVELS`:
inside a request's params it is -32602 naming the field (`Invalid params: params.arguments.x[0]… is
nested deeper than 200 levels`), elsewhere -32600; the answer carries the message's id when it has
one the client waits on.

Every refusal (`JsonRpcError`, one named constructor per code) is answered with the message's id
where it has a usable one (`usable_id`), else null, and the connection lives on. The message is
`"<the code's name>: <what is wrong>"`, naming the field, so the same bad envelope reads the same on
each door. Codes a door or the core defines for itself (LSP's -32002, the session's -32001) stay
with them; the standard ones live here.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Mapping
from typing import Any

from pydantic_core import from_json

PARSE_ERROR = -32700
INVALID_REQUEST = -32600
METHOD_NOT_FOUND = -32601
INVALID_PARAMS = -32602
INTERNAL_ERROR = -32603

MAX_DEPTH = 200  # levels of nesting a message may have on any door: what pydantic-core's reader takes
KEPT_LEVELS = 8  # of a message nested too deeply, the levels read to find its id and the deep field

MessageId = str | int
Reader = Callable[[str | bytes], Any]
_DEEP = "\x00nested too deeply"  # what stands for a cut-off container that goes past MAX_DEPTH
# A JSON string (escapes included) or a bracket: what a depth count of a JSON text has to look at.
_TOKENS = re.compile(r'"(?:[^"\\]++|\\.)*+"|[\[\]{}]')
_JSON_KINDS: dict[type, str] = {
    dict: "an object",
    list: "an array",
    str: "a string",
    bool: "a boolean",
    type(None): "null",
}


class JsonRpcError(Exception):
    """A JSON-RPC error answer: `code`, `message`, `data`, and `msg_id`, the id it answers (None:
    null, for a message whose id could not be read). Build it with the constructor named for its code."""

    def __init__(self, code: int, message: str, data: Any = None, msg_id: MessageId | None = None) -> None:
        super().__init__(message)
        self.code = code
        self.message = message
        self.data = data
        self.msg_id = msg_id

    @classmethod
    def parse_error(cls, detail: str) -> JsonRpcError:
        """-32700: the bytes are not JSON (or a frame cannot be read); always answered with id null."""
        return cls(PARSE_ERROR, f"Parse error: {detail}")

    @classmethod
    def invalid_request(cls, detail: str, msg_id: MessageId | None = None) -> JsonRpcError:
        """-32600: JSON, but not a JSON-RPC 2.0 message this edge takes; `detail` names the field."""
        return cls(INVALID_REQUEST, f"Invalid Request: {detail}", msg_id=msg_id)

    @classmethod
    def method_not_found(cls, method: str, msg_id: MessageId | None = None) -> JsonRpcError:
        """-32601, naming the method."""
        return cls(METHOD_NOT_FOUND, f"Method not found: {method}", msg_id=msg_id)

    @classmethod
    def invalid_params(cls, detail: str, data: Any = None, msg_id: MessageId | None = None) -> JsonRpcError:
        """-32602: params of the wrong shape; `detail` names the field."""
        return cls(INVALID_PARAMS, f"Invalid params: {detail}", data, msg_id)

    @classmethod
    def internal_error(cls, message: str, data: Any = None, msg_id: MessageId | None = None) -> JsonRpcError:
        """-32603: the request was fine and the daemon (or what it stands on) failed. `message` is
        said whole, without a prefix: it is what a person reads about the failure."""
        return cls(INTERNAL_ERROR, message, data, msg_id)

    def error_object(self) -> dict[str, Any]:
        """The response's `error` member (`data` only when there is some)."""
        error: dict[str, Any] = {"code": self.code, "message": self.message}
        if self.data is not None:
            error["data"] = self.data
        return error

    def response(self) -> dict[str, Any]:
        """The whole error response, to `msg_id` (null when None)."""
        return {"jsonrpc": "2.0", "id": self.msg_id, "error": self.error_object()}


def error_data(reason: str, details: Mapping[str, Any] | None = None) -> dict[str, Any]:
    """The `data` of a refusal on every door: `reason`, then the details with camelCase keys
    (`session_id` → `sessionId`)."""
    from pydantic.alias_generators import to_camel

    return {"reason": reason, **{to_camel(key): value for key, value in (details or {}).items()}}


def usable_id(message: Any) -> MessageId | None:
    """The message's id when it is one a response may carry (a string or an integer), else None."""
    msg_id = message.get("id") if isinstance(message, dict) else None
    return msg_id if isinstance(msg_id, str | int) and not isinstance(msg_id, bool) else None


def read(
    data: str | bytes, *, by_position: bool = False, fallback: Reader | None = json.loads
) -> dict[str, Any]:
    """`data` as a JSON-RPC message that follows the rules above; `JsonRpcError` (with the id to
    answer) when it does not."""
    message = decode(data, fallback=fallback)
    problem = check(message, by_position=by_position)
    if problem is not None:
        raise problem
    assert isinstance(message, dict)
    return message


def decode(data: str | bytes, *, fallback: Reader | None = json.loads) -> Any:
    """The JSON value `data` holds, read by pydantic-core, within the depth rule; `JsonRpcError` for
    a value nested deeper than `MAX_DEPTH` (-32600 or -32602, with the message's id) or for text that
    is not JSON (-32700). `fallback` reads what pydantic-core refuses that is not too deep (the json
    module reads lone-surrogate escapes, "\\udc80"); None where the door's SDK reads with
    pydantic-core alone, so that what it would drop is answered here."""
    try:
        return from_json(data)
    except ValueError as exc:
        refused = exc
    if too_deep(data):
        raise _too_deep(data.decode("utf-8", "replace") if isinstance(data, bytes) else data)
    if fallback is not None:
        try:
            return fallback(data)
        except (ValueError, RecursionError) as exc:
            refused = ValueError(str(exc))
    raise JsonRpcError.parse_error(f"the message is not JSON ({refused})")


def check(message: Any, *, by_position: bool = False) -> JsonRpcError | None:
    """Why `message` (a decoded JSON value) is no JSON-RPC 2.0 message under the rules above, as the
    error that answers it; None when it is one. `by_position`: whether an array of params is taken."""
    problem = _envelope_problem(message, by_position)
    if problem is not None:
        problem.msg_id = usable_id(message)
    return problem


def too_deep(data: str | bytes, limit: int = MAX_DEPTH) -> bool:
    """Whether the JSON text nests deeper than `limit` levels: counted in one pass over its strings
    and brackets, and only when it holds more than `limit` brackets at all (most messages do not)."""
    if isinstance(data, bytes):
        if data.count(b"[") + data.count(b"{") <= limit:
            return False
        data = data.decode("utf-8", "replace")
    elif data.count("[") + data.count("{") <= limit:
        return False
    depth = 0
    for token in _TOKENS.finditer(data):
        first = token.group()[0]
        if first in "[{":
            depth += 1
            if depth > limit:
                return True
        elif first in "]}":
            depth -= 1
    return False


def _envelope_problem(message: Any, by_position: bool) -> JsonRpcError | None:
    if not isinstance(message, dict):
        return JsonRpcError.invalid_request(f"a JSON-RPC message is an object, not {_kind(message)}")
    if message.get("jsonrpc") != "2.0":
        return JsonRpcError.invalid_request('"jsonrpc" must be "2.0"')
    is_call = "method" in message
    if "id" in message and usable_id(message) is None:
        msg_id = message["id"]
        if msg_id is None and is_call:
            return JsonRpcError.invalid_request("a request's id must not be null (a notification has no id)")
        if not (msg_id is None and "error" in message):
            return JsonRpcError.invalid_request("id must be a string or an integer")
    if not is_call:
        if "id" not in message:
            return JsonRpcError.invalid_request("neither a request, a notification nor a response")
        if ("result" in message) == ("error" in message):
            return JsonRpcError.invalid_request("a response has either a result or an error")
        return None
    if not isinstance(message["method"], str):
        return JsonRpcError.invalid_request("method must be a string")
    params = message.get("params")
    if params is None or isinstance(params, dict) or (by_position and isinstance(params, list)):
        return None
    wanted = "an object or an array" if by_position else "an object"
    return JsonRpcError.invalid_params(f"params must be {wanted}, not {_kind(params)}")


def _kind(value: Any) -> str:
    """The JSON name of `value`'s type, with its article."""
    return _JSON_KINDS.get(type(value), "a number")


def _too_deep(text: str) -> JsonRpcError:
    """The refusal of a message nested past `MAX_DEPTH`: its id and the deep field are read from a
    copy of it that keeps `KEPT_LEVELS` levels (the JSON readers at hand all recurse, so the whole is
    never read)."""
    try:
        shallow = json.loads(_cut(text))
    except (ValueError, RecursionError) as exc:
        return JsonRpcError.parse_error(f"the message is not JSON ({exc})")
    msg_id = usable_id(shallow)
    where = (_path_to(shallow, _DEEP) if isinstance(shallow, dict) else None) or "the message"
    detail = f"{where} is nested deeper than {MAX_DEPTH} levels"
    if isinstance(shallow, dict) and isinstance(shallow.get("method"), str) and where.startswith("params"):
        return JsonRpcError.invalid_params(detail, msg_id=msg_id)
    return JsonRpcError.invalid_request(detail, msg_id=msg_id)


def _cut(text: str) -> str:
    """`text` with each container that opens below `KEPT_LEVELS` replaced: by `_DEEP` where it goes
    past `MAX_DEPTH` levels, by null where it does not."""
    kept: list[str] = []
    depth = deepest = 0
    start = done = 0
    for token in _TOKENS.finditer(text):
        bracket = token.group()
        if bracket in "[{":
            depth += 1
            deepest = max(deepest, depth)
            if depth == KEPT_LEVELS + 1:
                start, deepest = token.start(), depth
        elif bracket in "]}":
            if depth == KEPT_LEVELS + 1:
                kept += [text[done:start], json.dumps(_DEEP) if deepest > MAX_DEPTH else "null"]
                done = token.end()
            depth -= 1
    return "".join([*kept, text[done:]])


def _path_to(value: Any, mark: str, where: str = "") -> str | None:
    """The dotted path (list items as [i]) of the first `mark` in `value`, or None."""
    if value == mark:
        return where
    items = value.items() if isinstance(value, dict) else enumerate(value) if isinstance(value, list) else ()
    for key, item in items:
        inner = f"{where}[{key}]" if isinstance(key, int) else f"{where}.{key}" if where else str(key)
        found = _path_to(item, mark, inner)
        if found is not None:
            return found
    return None
