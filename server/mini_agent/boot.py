"""Start-up: `initialize` is answered before the protocol stack is imported.

Importing pygls and lsprotocol's types takes most of a bare pygls server's start, yet the answer to
`initialize` is a constant for this daemon: its capabilities depend only on the features it registers
and, through pygls' rules, on two things the client says (the position encodings it offers and whether
it would send willSave notifications). So the first message is read here with the standard library;
when it is an ordinary `initialize`, the answer goes out at once, and the message, still in the read
buffer, then reaches pygls, which builds its workspace from it as always and whose own answer is dropped
(`AgentProtocol.answered_early`). Anything else (another first message, a bad frame, options that are
not an object) reaches pygls untouched and pygls answers it, errors included.
`tests/test_startup.py` holds the early answer equal to pygls' own.
"""

from __future__ import annotations

import json
import logging
import os
import select
import sys
from typing import Any, BinaryIO

from . import __version__
from .contracts import TOOL_MODES
from .readahead import READ_CHUNK, InBuffer

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


def read_first(fd: int, buffer: InBuffer, *, ndjson: bool) -> bytes | None:
    """The first message's body, or None when it is not a plain, small frame. Whatever is read stays in
    `buffer`, the first message included, for the reader that takes over from here."""

    def line_end(start: int, limit: int) -> int | None:
        """Where the line at `start` ends (after its newline); None past `limit` bytes or the input."""
        while (newline := buffer.data.find(b"\n", start, start + limit)) < 0:
            if len(buffer.data) >= start + limit or buffer.eof:
                return None
            buffer.add(_read(fd))
        return newline + 1

    if ndjson:
        end = line_end(0, _FIRST_FRAME_LIMIT)
        return None if end is None else bytes(buffer.data[:end])
    at, length = 0, None
    while (end := line_end(at, _HEADER_LINE_LIMIT)) is not None:
        line, at = bytes(buffer.data[at:end]), end
        if not line.strip():
            break
        name, _, value = line.partition(b":")
        if name.strip().lower() == b"content-length":
            try:
                length = int(value)
            except ValueError:
                return None
    if end is None or length is None or not 0 < length <= _FIRST_FRAME_LIMIT:
        return None
    while len(buffer.data) < at + length and not buffer.eof:
        buffer.add(_read(fd))
    return bytes(buffer.data[at : at + length]) if len(buffer.data) >= at + length else None


def _read(fd: int) -> bytes:
    """A chunk of stdin, waiting for one even when the client handed it over non-blocking."""
    while True:
        try:
            return os.read(fd, READ_CHUNK)
        except BlockingIOError:
            select.select([fd], [], [])


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
    stdin, read_ahead = sys.stdin.fileno(), InBuffer()
    body = read_first(stdin, read_ahead, ndjson=ndjson)
    answer = early_answer(body) if body is not None else None
    if answer is not None:
        frame = json.dumps(answer).encode()
        wire_out.write(frame + b"\n" if ndjson else b"Content-Length: %d\r\n\r\n%s" % (len(frame), frame))
    from .server import serve

    serve(stdin, read_ahead, wire_out, ndjson=ndjson, answered=answer["id"] if answer else None)
