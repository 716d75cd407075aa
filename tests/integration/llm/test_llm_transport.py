"""The transport that ships (`AiohttpTransport`) over real sockets on 127.0.0.1: the transport contract
(tests/support/llm_contract.py, which the fake keeps too, in tests/unit/llm/), and what only a wire
shows: kept-alive connections, answers that are not HTTP, a request dropped halfway."""

from __future__ import annotations

import asyncio
import socket
from collections.abc import AsyncIterator

import pytest
import pytest_asyncio
from mini_agent.llm.transport import AiohttpTransport, TransportError

from ...support.llm_contract import CASES, SENT, Answer, Case, ending, expected, framed, head, outcome


class WireServer:
    """Plays one `Answer` (or a list of raw byte answers, one per request) on 127.0.0.1."""

    def __init__(self, answer: Answer | None = None, raw: list[bytes] | None = None) -> None:
        self.answer = answer
        self.raw = raw
        self.requests: list[bytes] = []
        self.connections = 0
        self.ended = 0  # connections the client closed
        self.server: asyncio.Server | None = None
        self.tasks: set[asyncio.Task[None]] = set()

    async def handle(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        task = asyncio.current_task()
        assert task is not None
        self.tasks.add(task)
        self.connections += 1
        try:
            while True:
                request = await reader.readuntil(b"\r\n\r\n")
                length = next(int(line.split(b":")[1]) for line in request.split(b"\r\n")
                              if line.lower().startswith(b"content-length"))
                self.requests.append(request + await reader.readexactly(length))
                if not await self.play(reader, writer):
                    break
        except (asyncio.IncompleteReadError, ConnectionError):
            self.ended += 1
        except asyncio.CancelledError:  # the test is over: end quietly
            pass
        finally:
            writer.close()

    async def play(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> bool:
        """Answer one request; False when the connection is to end."""
        if self.raw is not None:
            if not self.raw:  # the answer that never comes: hold on until the client lets go
                await reader.read()
                raise ConnectionResetError
            writer.write(self.raw.pop(0))
            await writer.drain()
            return True
        answer = self.answer
        assert answer is not None
        await asyncio.sleep(answer.head_delay)
        writer.write(head(answer))
        for index, piece in enumerate(answer.pieces):
            if index:
                await asyncio.sleep(answer.piece_delay)
            writer.write(framed(answer, piece))
            await writer.drain()
        writer.write(ending(answer))
        await writer.drain()
        return not answer.cut

    async def __aenter__(self) -> str:
        self.server = await asyncio.start_server(self.handle, "127.0.0.1", 0)
        port = self.server.sockets[0].getsockname()[1]
        return f"http://127.0.0.1:{port}/v1/chat/completions"

    async def __aexit__(self, *exc: object) -> None:
        assert self.server is not None
        self.server.close()
        for task in self.tasks:
            task.cancel()
        await asyncio.gather(*self.tasks, return_exceptions=True)


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port: int = probe.getsockname()[1]
        return port


@pytest_asyncio.fixture
async def transport() -> AsyncIterator[AiohttpTransport]:
    http = AiohttpTransport()
    yield http
    await http.aclose()


@pytest.mark.asyncio
@pytest.mark.parametrize("case", CASES, ids=[case.id for case in CASES])
async def test_the_shipped_transport_keeps_the_contract(case: Case, transport: AiohttpTransport) -> None:
    if case.answer is None:
        port = free_port()
        url = f"http://127.0.0.1:{port}/v1/chat/completions"
        assert await outcome(transport, url, case) == expected(case, "127.0.0.1", port)
        return
    wire = WireServer(case.answer)
    async with wire as url:
        got = await outcome(transport, url, case)
    assert got == expected(case, "127.0.0.1", int(url.split(":")[2].split("/")[0]))
    if "header" in case.id:
        assert wire.requests == []  # refused before anything was sent
    else:
        assert len(wire.requests) == 1 and wire.requests[0].endswith(b"\r\n\r\n" + SENT)


def sized(body: bytes) -> bytes:
    return b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\n" + (
        f"Content-Length: {len(body)}\r\n\r\n".encode() + body
    )


async def body_of(transport: AiohttpTransport, url: str, **headers: str) -> tuple[int, bytes]:
    async with transport.post(url, SENT, headers, 5.0) as reply:
        return reply.status, await reply.read()


@pytest.mark.asyncio
async def test_requests_share_one_kept_alive_connection(transport: AiohttpTransport) -> None:
    wire = WireServer(raw=[sized(b"one"), sized(b"two"), sized(b"three")])
    async with wire as url:
        got = [await body_of(transport, url, Authorization="Bearer k") for _ in range(3)]
    assert got == [(200, b"one"), (200, b"two"), (200, b"three")] and wire.connections == 1
    first = wire.requests[0]
    assert first.startswith(b"POST /v1/chat/completions HTTP/1.1\r\n")
    assert b"Authorization: Bearer k\r\n" in first


@pytest.mark.asyncio
async def test_a_kept_connection_the_server_dropped_is_replaced(transport: AiohttpTransport) -> None:
    wire = WireServer(Answer(pieces=(b"{}",), cut=True))  # hangs up after each answer
    async with wire as url:
        assert await body_of(transport, url) == (200, b"{}")
        await asyncio.sleep(0.05)
        assert await body_of(transport, url) == (200, b"{}")
    assert wire.connections == 2


@pytest.mark.asyncio
async def test_a_reply_left_unread_closes_its_connection(transport: AiohttpTransport) -> None:
    wire = WireServer(raw=[sized(b"x" * 300_000), sized(b"next")])
    async with wire as url:
        async with transport.post(url, SENT, {}, 5.0) as reply:
            async for _ in reply.chunks():
                break
        assert await body_of(transport, url) == (200, b"next")
    assert wire.connections == 2


@pytest.mark.asyncio
async def test_a_request_cancelled_while_waiting_closes_its_connection(transport: AiohttpTransport) -> None:
    wire = WireServer(raw=[sized(b"one")])  # the second answer never comes
    async with wire as url:
        assert await body_of(transport, url) == (200, b"one")
        waiting = asyncio.ensure_future(body_of(transport, url))
        while len(wire.requests) < 2:
            await asyncio.sleep(0.01)
        waiting.cancel()
        with pytest.raises(asyncio.CancelledError):
            await waiting
        for _ in range(500):  # the server sees the connection end
            if wire.ended:
                break
            await asyncio.sleep(0.01)
        assert wire.ended == 1


@pytest.mark.asyncio
@pytest.mark.parametrize(("answer", "said"), [
    (b"SSH-2.0-OpenSSH\r\n\r\n", "not valid HTTP (Bad status line"),
    (b"HTTP/1.1 200 OK\r\nno colon here\r\n\r\n", "not valid HTTP (Invalid header token"),
    (b"HTTP/1.1 200 OK\r\nX: " + b"y" * 64 * 1024 + b"\r\n\r\n", "not valid HTTP (Got more than 8190 bytes"),
    (b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\nzz\r\n", "not valid HTTP (Invalid character"),
    (b"HTTP/1.1 200 OK\r\nX: 1", "the server closed the connection without answering"),
])
async def test_an_answer_that_is_not_http_is_a_transport_error_that_says_so(
    answer: bytes, said: str, transport: AiohttpTransport
) -> None:
    async def once(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        await reader.readuntil(b"\r\n\r\n")
        writer.write(answer)
        await writer.drain()
        writer.close()

    server = await asyncio.start_server(once, "127.0.0.1", 0)
    port = server.sockets[0].getsockname()[1]
    with pytest.raises(TransportError) as caught:
        await body_of(transport, f"http://127.0.0.1:{port}/v1/chat/completions")
    server.close()
    assert said in str(caught.value)


@pytest.mark.asyncio
async def test_a_name_that_does_not_resolve_is_said_in_words(transport: AiohttpTransport) -> None:
    with pytest.raises(TransportError) as caught:
        await body_of(transport, "http://model.invalid/v1/chat/completions")
    assert caught.value.unreachable and not caught.value.refused_nearby
    assert str(caught.value) == "the host name 'model.invalid' could not be resolved"
