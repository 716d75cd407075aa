"""Start-up: `initialize` is answered before the protocol stack is imported.

Importing pygls and lsprotocol's types takes most of a bare pygls server's start, yet the answer to
`initialize` is a constant for this daemon: its capabilities depend only on the features it registers
and, through pygls' rules, on two things the client says (the position encodings it offers and whether
it would send willSave notifications). So the first message is read here with the standard library;
when it is an ordinary `initialize`, the answer goes out at once, and the message is then put back in
front of stdin for pygls, which builds its workspace from it as always and whose own answer is dropped
(`AgentProtocol.answered_early`). Anything else (another first message, a bad frame, options that are
not an object) is put back untouched and pygls answers it, errors included.
`tests/test_startup.py` holds the early answer equal to pygls' own.
"""

from __future__ import annotations

import json
import logging
import os
import sys
from typing import Any, BinaryIO

from . import __version__
from .contracts import TOOL_MODES

PROTOCOL_VERSION = 1
METHODS = (
    "agent/registerTool",
    "agent/unregisterTool",
    "agent/listTools",
    "agent/startSession",
    "agent/prompt",
    "agent/step",
    "agent/run",
    "agent/cancel",
    "agent/approve",
    "agent/listSessions",
    "agent/getSession",
    "agent/getObservation",
    "agent/resumeSession",
    "agent/loadSession",
    "agent/deleteSession",
    "agent/trustWorkspace",
)


def agent_capabilities() -> dict[str, Any]:
    """`capabilities.experimental.agent` of the initialize answer (a fresh copy each time)."""
    return {
        "protocolVersion": PROTOCOL_VERSION,
        "methods": list(METHODS),
        "notifications": ["agent/update", "agent/toolsChanged"],
        "serverRequests": ["agent/requestPermission", "agent/executeTool"],
        "toolModes": list(TOOL_MODES),
    }


_ENCODINGS = ("utf-8", "utf-16", "utf-32")  # what pygls supports; it takes the client's first of them
_HEADER_LINE_LIMIT = 8192
_FIRST_FRAME_LIMIT = 1 << 20  # a larger first message goes the ordinary way


class Prefixed:
    """A binary stream with bytes already read put back in front (what the reader thread reads)."""

    def __init__(self, prefix: bytes, stream: BinaryIO) -> None:
        self._prefix = prefix
        self._stream = stream

    def _take(self, end: int) -> bytes:
        head, self._prefix = self._prefix[:end], self._prefix[end:]
        return head

    def read(self, size: int) -> bytes:
        head = self._take(size)
        if len(head) == size:
            return head
        return head + self._stream.read(size - len(head))

    def readline(self, limit: int) -> bytes:
        newline = self._prefix.find(b"\n", 0, limit)
        head = self._take(newline + 1 if newline >= 0 else limit)
        if head.endswith(b"\n") or len(head) == limit:
            return head
        return head + self._stream.readline(limit - len(head))


def read_first(stream: BinaryIO, *, ndjson: bool) -> tuple[bytes, bytes | None]:
    """(every byte read, the first message's body or None when it is not a plain, small frame)."""
    if ndjson:
        line = stream.readline(_FIRST_FRAME_LIMIT)
        return line, line if line.endswith(b"\n") else None
    read, length = b"", None
    while True:
        line = stream.readline(_HEADER_LINE_LIMIT)
        read += line
        if not line.endswith(b"\n"):
            return read, None
        if not line.strip():
            break
        name, _, value = line.partition(b":")
        if name.strip().lower() == b"content-length":
            try:
                length = int(value)
            except ValueError:
                return read, None
    if length is None or not 0 < length <= _FIRST_FRAME_LIMIT:
        return read, None
    body = stream.read(length)
    return read + body, body if len(body) == length else None


def early_answer(body: bytes) -> dict[str, Any] | None:
    """The response to `body` when it is an ordinary initialize request, else None."""
    try:
        message = json.loads(body)
    except (ValueError, RecursionError):
        return None
    if not (isinstance(message, dict) and message.get("jsonrpc") == "2.0"
            and message.get("method") == "initialize" and type(message.get("id")) in (int, str)):
        return None
    params = message.get("params")
    if not isinstance(params, dict) or not isinstance(params.get("initializationOptions", {}), dict | None):
        return None
    client = params.get("capabilities")
    if not isinstance(client, dict):
        return None
    encoding = _position_encoding(client)
    sync = _dig(client, "textDocument", "synchronization")
    if encoding is None or sync is None:
        return None
    text_sync: dict[str, Any] = {"openClose": True, "change": 2, "save": True}
    for key in ("willSave", "willSaveWaitUntil"):  # pygls says false to a client that offers them
        if sync.get(key):
            text_sync[key] = False
    capabilities = {
        "positionEncoding": encoding,
        "textDocumentSync": text_sync,
        "executeCommandProvider": {"commands": []},
        "workspace": {"workspaceFolders": {"supported": True, "changeNotifications": True},
                      "fileOperations": {}},
        "experimental": {"agent": agent_capabilities()},
    }
    result = {"capabilities": capabilities, "serverInfo": {"name": "mini-agent", "version": __version__}}
    return {"jsonrpc": "2.0", "id": message["id"], "result": result}


def _dig(value: dict[str, Any], *keys: str) -> dict[str, Any] | None:
    """The object at `keys` ({} where absent), or None where something on the way is not an object."""
    for key in keys:
        value = value.get(key, {})
        if value is None:
            value = {}
        if not isinstance(value, dict):
            return None
    return value


def _position_encoding(client: dict[str, Any]) -> str | None:
    general = _dig(client, "general")
    if general is None:
        return None
    offered = general.get("positionEncodings") or []
    if not isinstance(offered, list) or not all(isinstance(item, str) for item in offered):
        return None
    return next((item for item in offered if item in _ENCODINGS), "utf-16")


def claim_stdout(label: str) -> BinaryIO:
    """The real stdout, for protocol messages alone: fd 1 (and `print`, and anything a library or a
    child writes there) goes to stderr from now on, where the logs go too, each line led by `label`."""
    wire_out = os.fdopen(os.dup(1), "wb", buffering=0)
    os.dup2(2, 1)
    sys.stdout = sys.stderr
    logging.basicConfig(
        stream=sys.stderr,
        level=os.environ.get("MINI_AGENT_LOG", "WARNING").upper(),
        format=f"[{label}] %(levelname)s %(name)s: %(message)s",
    )
    return wire_out


def main(*, ndjson: bool = False) -> None:
    """Serve on stdio (LSP framing, or one JSON message per line with `ndjson`)."""
    wire_out = claim_stdout("mini-agent")
    stdin = sys.stdin.buffer
    read, body = read_first(stdin, ndjson=ndjson)
    answer = early_answer(body) if body is not None else None
    if answer is not None:
        frame = json.dumps(answer).encode()
        wire_out.write(frame + b"\n" if ndjson else b"Content-Length: %d\r\n\r\n%s" % (len(frame), frame))
    from .server import serve

    serve(Prefixed(read, stdin), wire_out, ndjson=ndjson, answered=answer["id"] if answer else None)
