"""Newline-delimited JSON framing for the daemon: one JSON-RPC message per line, no headers.

MCP's stdio transport and the Agent Client Protocol frame messages this way, and it is what a shell
pipeline can produce with `printf` and read with `jq`. The messages and their handling are exactly
those of the LSP-framed transport; only the framing differs. pygls 2 has no such transport, so this
module mirrors `JsonRPCServer._start_io_async` and `pygls.io_.run_async` with a line reader and a
writer that ends each message with a newline.
"""

from __future__ import annotations

import asyncio
import json
import logging
import threading
from typing import TYPE_CHECKING, BinaryIO

from pygls.exceptions import JsonRpcException
from pygls.io_ import StdinAsyncReader

if TYPE_CHECKING:
    from pygls.protocol import JsonRPCProtocol
    from pygls.server import JsonRPCServer

log = logging.getLogger(__name__)


class LineWriter:
    """pygls' writer interface: each message body becomes one line.

    pygls serialises with `ensure_ascii`, so a body never holds a raw newline and the line is the frame.
    """

    def __init__(self, stdout: BinaryIO) -> None:
        self._stdout = stdout

    def close(self) -> None:
        self._stdout.close()

    def write(self, data: bytes) -> None:
        self._stdout.write(data + b"\n")
        self._stdout.flush()


async def read_lines(stop: threading.Event, reader: StdinAsyncReader, protocol: JsonRPCProtocol,
                     server: JsonRPCServer) -> None:
    """Hand each non-blank line to the protocol, reporting a bad one the way pygls reports a bad body."""
    while not stop.is_set():
        line = await reader.readline()
        if not line:
            break
        if not line.strip():
            continue
        try:
            protocol.handle_message(json.loads(line, object_hook=protocol.structure_message))
        except Exception as exc:
            log.debug("unable to handle message: %s", exc)
            server.report_server_error(exc, JsonRpcException)


def serve_ndjson(server: JsonRPCServer, stdin: BinaryIO, stdout: BinaryIO) -> None:
    """Serve `server` over `stdin`/`stdout` with NDJSON framing until `exit` or end of input."""
    stop = threading.Event()
    server._stop_event = stop  # JsonRPCServer.shutdown() sets it, as with start_io
    server.protocol.set_writer(LineWriter(stdout), include_headers=False)
    reader = StdinAsyncReader(stdin, server.thread_pool)
    try:
        asyncio.run(read_lines(stop, reader, server.protocol, server))
    except BrokenPipeError:
        log.error("the client closed the connection; shutting down")
    except (KeyboardInterrupt, SystemExit):
        pass
    finally:
        server.shutdown()  # type: ignore[no-untyped-call]
