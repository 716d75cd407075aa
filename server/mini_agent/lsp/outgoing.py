"""The LSP door's requests to the client (a question, a permission prompt, a client tool, a link to
open), each withdrawn when the daemon stops waiting for it.

A waiter that stops waiting (its tool call cancelled or timed out, its question withdrawn because the
call it was asked for ended) withdraws its request with `$/cancelRequest`, so the editor can close the
prompt it shows; at the daemon's exit every request still open is withdrawn the same way, and its
waiter is told it was (`Withdrawn`). An answer that comes for a withdrawn request is dropped, and
logged: it reaches nobody.
"""

from __future__ import annotations

import asyncio
import logging
import uuid
from typing import Any

from lsprotocol import types
from pygls.lsp.server import LanguageServer

log = logging.getLogger("mini_agent")


class Withdrawn(Exception):
    """The daemon withdrew the request (it is closing) before the client answered."""


class Outgoing:
    """The requests of server `ls` to its client still waiting for an answer."""

    def __init__(self, ls: LanguageServer) -> None:
        self._ls = ls
        self._open: dict[str, tuple[str, asyncio.Future[Any]]] = {}  # msg id: method, our waiter

    async def ask(self, method: str, params: Any) -> Any:
        """Send `method` to the client and await its answer (as plain JSON); withdrawn when the caller
        stops waiting."""
        from mini_agent.lsp.wire import plain

        msg_id = uuid.uuid4().hex
        sent = asyncio.ensure_future(self._ls.protocol.send_request_async(method, params, msg_id=msg_id))
        waiter: asyncio.Future[Any] = asyncio.get_running_loop().create_future()
        sent.add_done_callback(lambda done: self._answered(msg_id, method, done, waiter))
        self._open[msg_id] = (method, waiter)
        try:
            return plain(await waiter)
        except asyncio.CancelledError:
            self.withdraw(msg_id)
            raise
        finally:
            self._open.pop(msg_id, None)

    def withdraw(self, msg_id: str) -> None:
        """Tell the client to drop request `msg_id` (`$/cancelRequest`), once; its answer, when it
        still comes, is dropped."""
        method, waiter = self._open.pop(msg_id, ("", None))
        if waiter is None:
            return
        if not waiter.done():
            waiter.set_exception(Withdrawn(f"{method} was withdrawn: the daemon stopped waiting for it"))
            waiter.exception()  # retrieved: a waiter already gone leaves no warning behind
        log.info("%s (request %s) withdrawn from the client", method, msg_id)
        try:
            self._ls.protocol.notify(types.CANCEL_REQUEST, types.CancelParams(id=msg_id))
        except Exception as exc:  # the client is gone: nothing is left to withdraw it from
            log.debug("$/cancelRequest for %s not sent: %s", msg_id, exc)

    def withdraw_all(self) -> int:
        """Withdraw every request still open (the daemon is closing); how many were."""
        open_ids = list(self._open)
        for msg_id in open_ids:
            self.withdraw(msg_id)
        return len(open_ids)

    def _answered(
        self, msg_id: str, method: str, sent: asyncio.Future[Any], waiter: asyncio.Future[Any]
    ) -> None:
        if waiter.done():  # withdrawn before the answer came
            if not sent.cancelled() and sent.exception() is None:
                log.info("a late answer to the withdrawn %s (request %s) was dropped", method, msg_id)
            return
        if sent.cancelled():
            waiter.cancel()
        elif (error := sent.exception()) is not None:
            waiter.set_exception(error)
        else:
            waiter.set_result(sent.result())
