"""A `Transport` that answers from a function instead of a socket, for tests: the model client's
retries, fallbacks and error messages are tested without a server (as httpx ships `MockTransport`).

    async def model(request: Request) -> FakeReply:
        return FakeReply(200, b'{"choices": []}')

    client = OpenAICompatibleClient(transport=FakeTransport(model))

The function may return a `FakeReply` or raise, and what it does stands for what a server does:
`ConnectionRefusedError` or another `OSError` is a connection that could not be made; `TimeoutError`
a connection that timed out; taking longer than the request's `timeout_sec` (the function or a piece
of the body) a server that fell silent; `ConnectionResetError` a server that hung up without
answering. A body that raises `OSError`, is `cut`, or ends short of its `content_length` broke off.
Each becomes the `TransportError` that `AiohttpTransport` raises for the same event, with the same
words (tests/support/llm_contract.py checks that the two agree).
"""

from __future__ import annotations

import asyncio
import contextlib
import inspect
import json
from collections.abc import AsyncIterable, AsyncIterator, Awaitable, Callable, Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from multidict import CIMultiDict, CIMultiDictProxy

from mini_agent.llm.transport import (
    BROKE_OFF,
    NOT_ANSWERED,
    TransportError,
    address,
    check_headers,
    connect_failure,
    connect_timeout,
    silence,
)

Body = bytes | Iterable[bytes] | AsyncIterable[bytes]


@dataclass(frozen=True, slots=True)
class Request:
    method: str
    url: str
    headers: Mapping[str, str]
    body: bytes

    def json(self) -> Any:
        return json.loads(self.body)


class FakeReply:
    """What the server answers: `body` whole, in pieces as the network would split them, or as an
    async iterable (which may sleep, to be a slow server, or raise, to be a broken one).

    `content_length` is what the server announces: the size of a whole `bytes` body unless given;
    none for a body in pieces (a stream). `cut` ends the body after its pieces as a dropped
    connection would. `closed` says whether the client hung up on it.
    """

    def __init__(
        self,
        status: int = 200,
        body: Body = b"",
        *,
        content_type: str = "application/json",
        headers: Mapping[str, str] | None = None,
        content_length: int | None = None,
        cut: bool = False,
    ) -> None:
        self.status = status
        self.content_type = content_type.split(";")[0].strip().lower()
        if content_length is None and isinstance(body, bytes):
            content_length = len(body)
        self.content_length = content_length
        head: CIMultiDict[str] = CIMultiDict(headers or {})
        head.setdefault("Content-Type", content_type)
        if content_length is not None:
            head.setdefault("Content-Length", str(content_length))
        self.headers: Mapping[str, str] = CIMultiDictProxy(head)
        self.closed = False
        self._body = body
        self._cut = cut
        self._timeout: float | None = None

    async def read(self) -> bytes:
        return b"".join([chunk async for chunk in self.chunks()])

    async def chunks(self) -> AsyncIterator[bytes]:
        pieces = _pieces(self._body)
        sent = 0
        while not self.closed:
            try:
                async with asyncio.timeout(self._timeout):
                    piece = await anext(pieces)
            except StopAsyncIteration:
                break
            except TimeoutError as exc:
                assert self._timeout is not None
                raise silence(self._timeout) from exc
            except OSError as exc:
                raise TransportError(BROKE_OFF) from exc
            sent += len(piece)
            if piece:
                yield piece
        if self.closed:
            return
        if self._cut or (self.content_length is not None and sent < self.content_length):
            raise TransportError(BROKE_OFF)

    def close(self) -> None:
        self.closed = True


Handler = Callable[[Request], FakeReply | Awaitable[FakeReply]]


class FakeTransport:
    """`Transport` over `handler`; `requests` keeps what was sent, in order."""

    def __init__(self, handler: Handler) -> None:
        self._handler = handler
        self.requests: list[Request] = []
        self.closed = False

    @classmethod
    def replying(cls, *answers: FakeReply | BaseException) -> FakeTransport:
        """Each request gets the next answer: a reply, or an exception to raise (see the module)."""
        left = list(answers)

        def next_answer(request: Request) -> FakeReply:
            if not left:
                raise AssertionError(f"no answer left for request {len(transport.requests)}")
            answer = left.pop(0)
            if isinstance(answer, BaseException):
                raise answer
            return answer

        transport = cls(next_answer)
        return transport

    @contextlib.asynccontextmanager
    async def post(
        self, url: str, body: bytes, headers: Mapping[str, str], timeout_sec: float
    ) -> AsyncIterator[FakeReply]:
        check_headers(headers)
        request = Request("POST", url, dict(headers), body)
        self.requests.append(request)
        host, port = address(url)
        waiting = asyncio.timeout(timeout_sec)
        try:
            async with waiting:
                answer = self._handler(request)
                reply = await answer if inspect.isawaitable(answer) else answer
        except TransportError:
            raise
        except TimeoutError as exc:
            if waiting.expired():
                raise silence(timeout_sec) from exc
            raise connect_timeout(host, port) from exc
        except (ConnectionResetError, ConnectionAbortedError, BrokenPipeError) as exc:
            raise TransportError(NOT_ANSWERED) from exc
        except OSError as exc:
            raise connect_failure(host, port, exc) from exc
        reply._timeout = timeout_sec
        yield reply

    async def aclose(self) -> None:
        self.closed = True


async def _pieces(body: Body) -> AsyncIterator[bytes]:
    if isinstance(body, bytes):
        yield body
    elif isinstance(body, AsyncIterable):
        async for piece in body:
            yield piece
    else:
        for piece in body:
            yield piece
