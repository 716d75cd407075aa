"""Check JSON-RPC messages against docs/protocol.schema.json.

    validate("serverToClient", None, {"jsonrpc": "2.0", "method": "agent/update", "params": {...}})
    validate("serverToClient", "agent/step", {"jsonrpc": "2.0", "id": 3, "result": {...}})

A response carries no method, so `validate` is told which request it answers; `FrameChecker` works
that out itself from the ids it has seen, for a whole conversation. `attach` hooks a checker into a
pygls client (pytest-lsp) so that every frame either side sends is checked.

Messages from the daemon are held to the schema strictly. Messages from the client are checked only
when `strict_client` is set: tests send bad params and unknown methods on purpose.
"""

from __future__ import annotations

import copy
import json
from functools import cache
from pathlib import Path
from typing import Any, Literal

from jsonschema import Draft202012Validator
from referencing import Registry, Resource

SCHEMA_PATH = Path(__file__).resolve().parents[2] / "docs" / "protocol.schema.json"
Direction = Literal["clientToServer", "serverToClient"]


class SchemaViolation(AssertionError):
    """A message that does not fit the protocol schema; the message lists every problem."""


@cache
def schema() -> dict[str, Any]:
    loaded: dict[str, Any] = json.loads(SCHEMA_PATH.read_text(encoding="utf-8"))
    return loaded


@cache
def _validator(pointer: str) -> Draft202012Validator:
    """A validator for the subschema at `pointer` inside the protocol schema, $refs resolved in it."""
    root = schema()
    registry: Registry[Any] = Registry().with_resource(root["$id"], Resource.from_contents(root))
    return Draft202012Validator({"$ref": f"{root['$id']}#{pointer}"}, registry=registry)


def _escape(segment: str) -> str:
    return segment.replace("~", "~0").replace("/", "~1")


def problems(pointer: str, instance: Any) -> list[str]:
    """Every way `instance` fails the subschema at `pointer`, one line each (empty: it fits)."""
    errors = sorted(_validator(pointer).iter_errors(instance), key=lambda e: list(e.absolute_path))
    return [f"{error.json_path}: {_best(error).message}" for error in errors]


def _best(error: Any) -> Any:
    """For anyOf/oneOf failures the deepest sub-error says more than 'is not valid under any'."""
    while error.context:
        error = max(error.context, key=lambda e: len(list(e.absolute_path)))
    return error


def spec(method: str) -> tuple[str, dict[str, Any]] | None:
    """("requests" | "notifications", its entry) for a method the schema knows, else None."""
    for table in ("requests", "notifications"):
        entry = schema()[table].get(method)
        if entry is not None:
            return table, entry
    return None


def check(direction: Direction, method: str | None, message: dict[str, Any]) -> list[str]:
    """The problems of one message (see `validate`), without raising."""
    found = problems("", message)
    if found:
        return [f"envelope {line}" for line in found]
    if "method" in message:
        return _check_call(direction, message)
    if "error" in message or method is None:
        return []  # an error answer fits any request; the envelope already checked its shape
    known = spec(method)
    if known is None or known[0] != "requests":
        return [f"a response to {method}, which is not a request in the schema"]
    table, entry = known
    if entry["direction"] == direction:
        return [f"{direction} sent a response to {method}, a {entry['direction']} request"]
    pointer = f"/{table}/{_escape(method)}/result"
    return [f"{method} result {line}" for line in problems(pointer, message.get("result"))]


def _check_call(direction: Direction, message: dict[str, Any]) -> list[str]:
    method = message["method"]
    known = spec(method)
    if known is None:
        return [f"unknown method {method}"]
    table, entry = known
    if entry["direction"] not in (direction, "both"):  # "both": $/cancelRequest, as in LSP
        return [f"{method} is {entry['direction']}, but {direction} sent it"]
    if (table == "requests") != ("id" in message):
        has = "has" if "id" in message else "lacks"
        return [f"{method} is one of the schema's {table}, but the message {has} an id"]
    pointer = f"/{table}/{_escape(method)}/params"
    return [f"{method} params {line}" for line in problems(pointer, message.get("params"))]


def validate(direction: Direction, method: str | None, message: dict[str, Any]) -> None:
    """Raise `SchemaViolation` unless `message` (a whole JSON-RPC message) fits the protocol schema.

    `direction` says who sent it: "clientToServer" or "serverToClient". `method` is the method of the
    request a response answers; requests and notifications carry their own and it may be None.
    """
    found = check(direction, method, message)
    if found:
        raise SchemaViolation(f"{direction} {json.dumps(message)[:400]}:\n  " + "\n  ".join(found))


class FrameChecker:
    """Checks a conversation message by message, matching responses to requests by id.

    Collects problems in `errors` instead of raising, because it runs inside transports whose
    exceptions would be swallowed; a test asserts `errors == []` at the end.
    """

    def __init__(self, *, strict_client: bool = False) -> None:
        self.strict_client = strict_client
        self.errors: list[str] = []
        self.seen: list[tuple[Direction, dict[str, Any]]] = []
        self._pending: dict[Direction, dict[Any, str]] = {"clientToServer": {}, "serverToClient": {}}

    def feed(self, direction: Direction, message: dict[str, Any]) -> None:
        message = copy.deepcopy(message)
        self.seen.append((direction, message))
        method = None
        if "method" in message and "id" in message:
            self._pending[direction][message["id"]] = message["method"]
        elif "method" not in message:
            other: Direction = "serverToClient" if direction == "clientToServer" else "clientToServer"
            method = self._pending[other].pop(message.get("id"), None)
        if direction == "clientToServer" and not self.strict_client:
            return
        for line in check(direction, method, message):
            self.errors.append(f"{direction} {json.dumps(message)[:300]}\n    {line}")

    def tap(self, direction: Literal["send", "recv"], message: dict[str, Any]) -> None:
        """For `mini_agent_client.rpc.Connection(tap=...)`: the client sends, the daemon's frames arrive."""
        self.feed("clientToServer" if direction == "send" else "serverToClient", message)


class _TapWriter:
    """Wraps a pygls writer: checks each outgoing frame (LSP-framed bytes), then writes it."""

    def __init__(self, inner: Any, checker: FrameChecker) -> None:
        self._inner = inner
        self._checker = checker

    def write(self, data: bytes) -> Any:
        body = data.split(b"\r\n\r\n", 1)[-1]
        self._checker.feed("clientToServer", json.loads(body))
        return self._inner.write(data)

    def __getattr__(self, name: str) -> Any:
        return getattr(self._inner, name)


def attach(protocol: Any, checker: FrameChecker) -> FrameChecker:
    """Check every frame of a started pygls client protocol (e.g. pytest-lsp's `client.protocol`).

    Incoming frames are seen through `structure_message`, the JSON object hook pygls calls for each
    object of a frame: the frame itself is the one with a `jsonrpc` key, and it arrives as plain JSON.
    """
    structure = protocol.structure_message

    def seen(data: Any) -> Any:
        if isinstance(data, dict) and "jsonrpc" in data:
            checker.feed("serverToClient", data)
        return structure(data)

    protocol.structure_message = seen
    protocol.writer = _TapWriter(protocol.writer, checker)
    return checker
