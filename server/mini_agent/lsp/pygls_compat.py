"""Every use of a pygls private member, in one place.

The LSP door is pygls' `LanguageServer` with a reader, a writer and an early `initialize` answer of its
own. Where that needs more than pygls' public API, the access is made here and nowhere else. Each bend
below has a test in `tests/unit/lsp/test_pygls_compat.py` that fails when a pygls release changes what
it relies on; pyproject pins pygls to `PYGLS_MINOR`, the minor version those tests were written for.

The bends, and why:

1. `JsonRPCProtocol._send_data(data)` writes one JSON value as one frame, headers included when the
   writer takes them. `send_raw` uses it for a response whose id is null (pygls' converter would drop
   the null id JSON-RPC requires there) and for a notification `notify_json` cannot frame itself.
2. `JsonRPCProtocol._send_response(msg_id, result, error)` is the one path by which pygls answers a
   request. `send_error` calls it to answer requests pygls would drop unanswered; `CompatProtocol`
   overrides it to hold back pygls' answer to the `initialize` that `boot.py` answered already, and to
   compare the two (bend 4): a difference is logged as an error.
3. `JsonRPCProtocol._include_headers` is how `set_writer` was told to frame (LSP headers or NDJSON);
   there is no public getter. `frames_with_headers` reads it for frames written without pygls.
4. `JsonRPCProtocol._serialize_message(value)` is the `default` pygls hands `json.dumps` when it writes
   (its converter, camelCase keys). `plain_json` renders pygls' `InitializeResult` exactly as pygls
   would have sent it, so the early answer is compared with what the client would have seen.
5. `LanguageServerProtocol._workspace` is None until `initialize` has run; the public `workspace`
   property raises instead. `initialized` reads it to refuse requests that come before `initialize`.
6. `JsonRPCServer._stop_event` is the event `shutdown()` sets to stop `start_io`'s reader. The daemon
   serves with its own reader (`server.serve`, `framing`), so `install_stop_event` hands pygls that
   reader's event, and `exit`/`shutdown()` stop it as they would stop `start_io`.
7. `LanguageServerProtocol.lsp_initialize` is a built-in feature (`lsp_method`), a generator that yields
   to the user's `initialize` handler and returns the `InitializeResult`. `CompatProtocol` overrides it
   to add `capabilities.experimental.agent`, which pygls has no public way to announce.

The rest of the door keeps to pygls' public API: the writer (`plumbing.pipes.SafeWriter`) is pygls'
`Writer` protocol (`write(bytes)`, `close()`) given to `set_writer`; the reader (`framing`) hands each
message to `structure_message` and `handle_message`; `AgentProtocol` overrides those two, and
`AgentServer` overrides `report_server_error`.
"""

from __future__ import annotations

import json
import logging
import threading
from collections.abc import Generator
from typing import Any

from lsprotocol import types
from pygls.exceptions import JsonRpcException
from pygls.protocol import JsonRPCProtocol, LanguageServerProtocol, lsp_method
from pygls.server import JsonRPCServer

from mini_agent.lsp.capabilities import agent_capabilities, differences, sandbox_capability, trust_capability

PYGLS_MINOR = "2.1"  # the pygls these bends were written and tested for

log = logging.getLogger("mini_agent")


def send_raw(protocol: JsonRPCProtocol, message: dict[str, Any]) -> None:
    """Write `message` (plain JSON) as one frame, as pygls writes its own (bend 1)."""
    protocol._send_data(message)


def send_error(protocol: JsonRPCProtocol, msg_id: Any, error: JsonRpcException) -> None:
    """Answer request `msg_id` with `error`, as pygls answers a failed request (bend 2)."""
    protocol._send_response(msg_id, error=error.to_response_error())


def frames_with_headers(protocol: JsonRPCProtocol) -> bool:
    """Whether the protocol's writer takes LSP headers (False: one message per line) (bend 3)."""
    return bool(protocol._include_headers)


def plain_json(protocol: JsonRPCProtocol, value: Any) -> Any:
    """`value` as the JSON pygls would write for it, read back into dicts and lists (bend 4)."""
    return json.loads(json.dumps(value, default=protocol._serialize_message))


def initialized(protocol: LanguageServerProtocol) -> bool:
    """Whether `initialize` has reached pygls (bend 5)."""
    return protocol._workspace is not None


def install_stop_event(server: JsonRPCServer, stop: threading.Event) -> None:
    """Let pygls' `shutdown()` set `stop`, the event the daemon's own reader watches (bend 6)."""
    server._stop_event = stop


def early_answer_differences(protocol: JsonRPCProtocol, sent: dict[str, Any], result: Any) -> list[str]:
    """How the early `initialize` response `sent` differs from pygls' `InitializeResult` (both as
    plain JSON); empty when they agree."""
    return differences(sent.get("result"), plain_json(protocol, result))


class CompatProtocol(LanguageServerProtocol):
    """pygls' language server protocol with the overrides of its internals (bends 2 and 7)."""

    answered_early: dict[str, Any] | None = None
    """The response `boot.py` sent to the first `initialize`; pygls' own answer to it is checked
    against it and dropped."""

    def _send_response(self, msg_id: Any, result: Any = None, error: Any = None) -> None:
        early = self.answered_early
        if early is not None and msg_id is not None and msg_id == early.get("id"):
            self.answered_early = None
            if error is not None:  # lsprotocol refused what boot.py's plainer checks let through
                log.error("initialize was answered early, but pygls refused it: %s", error.message)
            elif found := early_answer_differences(self, early, result):
                log.error(
                    "initialize was answered early with capabilities pygls does not give: %s",
                    "; ".join(found),
                )
            return
        super()._send_response(msg_id, result, error)

    @lsp_method(types.INITIALIZE)
    def lsp_initialize(self, params: types.InitializeParams) -> Generator[Any, Any, types.InitializeResult]:
        result: types.InitializeResult = yield from super().lsp_initialize(params)
        plain = plain_json(self, params)
        result.capabilities.experimental = {
            "agent": agent_capabilities(trust_capability(plain), sandbox_capability(plain))
        }
        return result
