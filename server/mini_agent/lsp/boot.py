"""Start-up: `initialize` is answered before the protocol stack is imported.

Importing pygls and lsprotocol's types takes most of a bare pygls server's start, yet the answer to
`initialize` depends only on the features the daemon registers and on two things the client says
(`capabilities.initialize_result`). So the first message is read here with the standard library; when it
is an ordinary `initialize`, the answer goes out at once, and the message, still in the read buffer,
then reaches pygls, which builds its workspace from it as always. pygls' own answer to it is not sent:
`pygls_compat.CompatProtocol` compares it with the one sent here and logs an error where they differ.
Anything else (another first message, a bad frame, options that are not an object) reaches pygls
untouched and pygls answers it, errors included.
"""

from __future__ import annotations

import json
import os
import select
import sys
from typing import Any

from mini_agent.lsp.capabilities import initialize_result
from mini_agent.lsp.readahead import READ_CHUNK, InBuffer

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
    result = initialize_result(message.get("params"))
    return None if result is None else {"jsonrpc": "2.0", "id": message["id"], "result": result}


def main(*, ndjson: bool = False) -> None:
    """Serve on stdio (LSP framing, or one JSON message per line with `ndjson`)."""
    from mini_agent.plumbing.stdout import claim_stdout

    wire_out = claim_stdout("mini-agent")
    stdin, read_ahead = sys.stdin.fileno(), InBuffer()
    body = read_first(stdin, read_ahead, ndjson=ndjson)
    answer = early_answer(body) if body is not None else None
    if answer is not None:
        frame = json.dumps(answer).encode()
        wire_out.write(frame + b"\n" if ndjson else b"Content-Length: %d\r\n\r\n%s" % (len(frame), frame))
    from mini_agent.lsp.server import serve

    serve(stdin, read_ahead, wire_out, ndjson=ndjson, answered=answer)
