"""The requests in flight on the ACP door, and `$/cancel_request` (ACP's request cancellation).

A `$/cancel_request` names a request by its id. A `session/prompt` is ended as `session/cancel` ends
it: the turn stops and the prompt answers with the stop reason `cancelled` (a valid response, which
the protocol allows in place of the error). Any other request still running has its handler task
cancelled and answers the error -32800 (Request Cancelled). A request already answered, or an id
never seen, is left alone: the notification may cross the response on the wire. Params that are not
`{"requestId": <int | string>}` are logged and dropped (a notification has no answer).
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import Awaitable, Callable, Iterator
from dataclasses import dataclass
from typing import Any

from acp import RequestError

from mini_agent.acp.transport import REQUEST_ID

log = logging.getLogger(__name__)

CANCEL_REQUEST = "$/cancel_request"
REQUEST_CANCELLED = -32800


@dataclass(slots=True)
class _Request:
    method: str
    params: Any
    task: asyncio.Task[Any]
    cancelled: bool = False


class InFlight:
    """The requests being handled, by id; `cancel_prompt(session_id)` ends a prompt's turn."""

    def __init__(self, cancel_prompt: Callable[[str], Awaitable[None]]) -> None:
        self._cancel_prompt = cancel_prompt
        self._requests: dict[int | str, _Request] = {}

    @contextlib.contextmanager
    def handling(self, method: str, params: Any) -> Iterator[None]:
        """Around one request's handler: it is known by its id while it runs, and a cancellation by
        `$/cancel_request` surfaces as the error -32800."""
        request_id, task = REQUEST_ID.get(), asyncio.current_task()
        if request_id is None or task is None or request_id in self._requests:
            yield
            return
        entry = self._requests[request_id] = _Request(method, params, task)
        try:
            yield
        except asyncio.CancelledError:
            if not entry.cancelled:
                raise
            task.uncancel()
            message = f"Request cancelled: {method} (id {request_id!r})"
            raise RequestError(REQUEST_CANCELLED, message, {"requestId": request_id}) from None
        finally:
            del self._requests[request_id]

    async def cancel(self, params: Any) -> None:
        """`$/cancel_request`: end the named request, if it is still running."""
        request_id = params.get("requestId") if isinstance(params, dict) else None
        if isinstance(request_id, bool) or not isinstance(request_id, int | str):
            log.info("%s without a requestId (an integer or a string): %r", CANCEL_REQUEST, params)
            return
        entry = self._requests.get(request_id)
        if entry is None or entry.cancelled:
            return
        session_id = entry.params.get("sessionId") if isinstance(entry.params, dict) else None
        if entry.method == "session/prompt" and isinstance(session_id, str):
            await self._cancel_prompt(session_id)  # the prompt answers `cancelled` itself
            return
        entry.cancelled = True
        entry.task.cancel()
