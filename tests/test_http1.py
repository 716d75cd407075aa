"""Http1Transport against raw asyncio servers that answer byte for byte as scripted: keep-alive reuse,
the three ways a body ends, a kept connection the server dropped, and the answers it must refuse."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Awaitable, Callable

import pytest
import pytest_asyncio
from hypothesis import given
from hypothesis import strategies as st
from mini_agent.llm.http1 import MAX_HEAD_BYTES, Dechunker, Http1Transport
from mini_agent.llm.transport import TransportError

Handler = Callable[[asyncio.StreamReader, asyncio.StreamWriter], Awaitable[None]]


class RawServer:
    """Answers each request with the next scripted bytes; counts connections and requests."""

    def __init__(self, answers: list[bytes], *, close_after: bool = False) -> None:
        self.answers = answers
        self.close_after = close_after
        self.connections = 0
        self.ended = 0  # connections the client closed
        self.requests: list[bytes] = []
        self.server: asyncio.Server | None = None

    async def handle(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        self.connections += 1
        try:
            while self.answers:
                head = await reader.readuntil(b"\r\n\r\n")
                length = next(int(line.split(b":")[1]) for line in head.split(b"\r\n")
                              if line.lower().startswith(b"content-length"))
                self.requests.append(head + await reader.readexactly(length))
                writer.write(self.answers.pop(0))
                await writer.drain()
                if self.close_after:
                    break
            else:
                await reader.read()  # nothing more to say: hold the connection until the client lets go
                self.ended += 1
        except asyncio.IncompleteReadError:
            self.ended += 1
        writer.close()

    async def __aenter__(self) -> str:
        self.server = await asyncio.start_server(self.handle, "127.0.0.1", 0)
        port = self.server.sockets[0].getsockname()[1]
        return f"http://127.0.0.1:{port}/v1/chat/completions"

    async def __aexit__(self, *exc: object) -> None:
        assert self.server is not None
        self.server.close()


def sized(body: bytes, *extra: str) -> bytes:
    headers = "".join(f"{h}\r\n" for h in extra)
    return b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\n" + (
        f"Content-Length: {len(body)}\r\n{headers}\r\n".encode() + body
    )


async def body_of(transport: Http1Transport, url: str, **headers: str) -> tuple[int, bytes]:
    async with transport.post(url, b'{"q": 1}', headers, 5.0) as reply:
        return reply.status, b"".join([chunk async for chunk in reply.chunks()])


@pytest_asyncio.fixture
async def transport() -> AsyncIterator[Http1Transport]:
    http = Http1Transport()
    yield http
    await http.aclose()


@pytest.mark.asyncio
async def test_requests_share_one_kept_alive_connection(transport: Http1Transport) -> None:
    raw = RawServer([sized(b"one"), sized(b"two"), sized(b"three")])
    async with raw as url:
        got = [await body_of(transport, url, Authorization="Bearer k") for _ in range(3)]
    assert got == [(200, b"one"), (200, b"two"), (200, b"three")] and raw.connections == 1
    first = raw.requests[0]
    assert first.startswith(b"POST /v1/chat/completions HTTP/1.1\r\n")
    assert b"Authorization: Bearer k\r\n" in first
    assert first.endswith(b'\r\n\r\n{"q": 1}')


@pytest.mark.asyncio
async def test_chunked_and_to_the_end_bodies_arrive_whole(transport: Http1Transport) -> None:
    chunked = (b"HTTP/1.1 200 OK\r\nContent-Type: text/event-stream; charset=utf-8\r\n"
               b"Transfer-Encoding: chunked\r\n\r\n"
               b"5\r\ndata:\r\n3;ext=1\r\n 1\n\r\n0\r\nX-Trailer: t\r\n\r\n")
    to_the_end = b"HTTP/1.0 200 OK\r\nContent-Type: application/json\r\n\r\n{\"a\": 2}"
    raw = RawServer([chunked, sized(b"after")])
    async with raw as url:
        async with transport.post(url, b"{}", {}, 5.0) as reply:
            assert reply.content_type == "text/event-stream" and reply.content_length is None
            assert b"".join([c async for c in reply.chunks()]) == b"data: 1\n"
        assert await body_of(transport, url) == (200, b"after")  # the chunked reply left it reusable
    assert raw.connections == 1
    async with RawServer([to_the_end], close_after=True) as url:
        assert await body_of(transport, url) == (200, b'{"a": 2}')


@pytest.mark.asyncio
async def test_a_kept_connection_the_server_dropped_is_replaced(transport: Http1Transport) -> None:
    raw = RawServer([sized(b"one"), sized(b"two")], close_after=True)  # hangs up after each answer
    async with raw as url:
        assert await body_of(transport, url) == (200, b"one")
        await asyncio.sleep(0.05)
        assert await body_of(transport, url) == (200, b"two")
    assert raw.connections == 2


@pytest.mark.asyncio
async def test_an_answer_without_a_body_ends_at_its_head(transport: Http1Transport) -> None:
    raw = RawServer([b"HTTP/1.1 204 No Content\r\n\r\n", sized(b"next")])
    async with raw as url:
        assert await body_of(transport, url) == (204, b"")
        assert await body_of(transport, url) == (200, b"next")
    assert raw.connections == 1


@pytest.mark.asyncio
async def test_a_request_cancelled_on_a_kept_connection_closes_it(transport: Http1Transport) -> None:
    raw = RawServer([sized(b"one"), b"HTTP/1.1 200 OK\r\n"])  # the second head never ends
    async with raw as url:
        assert await body_of(transport, url) == (200, b"one")
        waiting = asyncio.ensure_future(body_of(transport, url))
        while len(raw.requests) < 2:
            await asyncio.sleep(0.01)
        waiting.cancel()
        with pytest.raises(asyncio.CancelledError):
            await waiting
        for _ in range(500):  # the server sees the connection end
            if raw.ended:
                break
            await asyncio.sleep(0.01)
        assert raw.ended == 1 and transport._idle == {("127.0.0.1", int(url.split(":")[2].split("/")[0])): []}


@pytest.mark.asyncio
async def test_a_reply_left_unread_closes_its_connection(transport: Http1Transport) -> None:
    raw = RawServer([sized(b"x" * 100_000), sized(b"next")])
    async with raw as url:
        async with transport.post(url, b"{}", {}, 5.0) as reply:
            async for _ in reply.chunks():
                break
        assert await body_of(transport, url) == (200, b"next")
    assert raw.connections == 2


@pytest.mark.asyncio
@pytest.mark.parametrize(("answer", "said"), [
    (b"HTTP/1.1 200 OK\r\nContent-Length: 10\r\n\r\nshort", "5 bytes of the reply still to come"),
    (b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\nzz\r\n", "no valid size"),
    (b"SSH-2.0-OpenSSH\r\n\r\n", "not HTTP/1.x"),
    (b"HTTP/1.1 200 OK\r\nno colon here\r\n\r\n", "malformed header"),
    (b"HTTP/1.1 200 OK\r\nX: " + b"y" * MAX_HEAD_BYTES + b"\r\n\r\n", "longer than"),
])
async def test_broken_answers_are_transport_errors_that_say_why(answer: bytes, said: str) -> None:
    transport = Http1Transport()
    async with RawServer([answer], close_after=True) as url:
        with pytest.raises(TransportError) as caught:
            await body_of(transport, url)
    assert said in str(caught.value)
    await transport.aclose()


@pytest.mark.asyncio
async def test_nothing_listening_and_a_header_with_a_line_break(transport: Http1Transport) -> None:
    server = await asyncio.start_server(lambda r, w: None, "127.0.0.1", 0)
    port = server.sockets[0].getsockname()[1]
    server.close()
    await server.wait_closed()
    with pytest.raises(TransportError) as refused:
        await body_of(transport, f"http://127.0.0.1:{port}/v1/chat/completions")
    assert refused.value.refused_nearby and refused.value.unreachable
    assert f"nothing is listening on 127.0.0.1:{port}" in str(refused.value)
    with pytest.raises(TransportError) as injected:
        await body_of(transport, "http://127.0.0.1:9/x", Authorization="Bearer k\r\nX-Evil: 1")
    assert "line break" in str(injected.value)


@pytest.mark.asyncio
async def test_a_silent_server_is_a_reading_timeout(transport: Http1Transport) -> None:
    async def silent(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        await asyncio.sleep(10)

    server = await asyncio.start_server(silent, "127.0.0.1", 0)
    port = server.sockets[0].getsockname()[1]
    with pytest.raises(TransportError) as caught:
        async with transport.post(f"http://127.0.0.1:{port}/", b"{}", {}, 0.2):
            pass
    assert caught.value.phase == "reading"
    server.close()


CHUNKED = b"5\r\ndata:\r\n3;ext=1\r\n 1\n\r\n10\r\n" + b"x" * 16 + b"\r\n0\r\nX-Trailer: t\r\n\r\n"


@given(st.lists(st.integers(min_value=1, max_value=len(CHUNKED)), max_size=12))
def test_a_chunked_body_decodes_the_same_however_it_is_split(cuts: list[int]) -> None:
    body, pieces, at = Dechunker(), [], 0
    for end in sorted({*cuts, len(CHUNKED)}):
        assert not body.done
        pieces += body.feed(CHUNKED[at:end])
        at = end
    assert body.done and b"".join(pieces) == b"data: 1\n" + b"x" * 16
