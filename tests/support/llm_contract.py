"""What every model transport promises, as one list of cases: the transport that ships runs them
against a real server on 127.0.0.1 (tests/integration/llm/test_llm_transport.py), the fake against a handler
(tests/unit/llm/test_transport_contract.py), and both must give the same outcome, words included.

A case says what the server does (`Answer`, or nothing listening) and what the caller gets: the reply
as read, or the error raised, where and in which words.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Mapping
from dataclasses import dataclass, field
from typing import Any

from mini_agent.llm.fake import FakeReply, Request
from mini_agent.llm.replies import OverLimit, read_bounded, too_long
from mini_agent.llm.transport import BROKE_OFF, Transport, TransportError

SENT = b'{"model": "m", "stream": true}'


@dataclass(frozen=True)
class Answer:
    status: int = 200
    pieces: tuple[bytes, ...] = ()
    content_type: str = "application/json"
    headers: tuple[tuple[str, str], ...] = ()
    chunked: bool = False  # a stream: chunked on the wire, no Content-Length
    declared: int | None = None  # the Content-Length announced, when it is not the body's size
    cut: bool = False  # the connection ends after the pieces, before the body does
    head_delay: float = 0.0  # silence before the answer's head
    piece_delay: float = 0.0  # silence before each piece after the first


@dataclass(frozen=True)
class Case:
    id: str
    answer: Answer | None  # None: nothing listens
    expect: dict[str, Any]  # the outcome (see `outcome`); "{host}", "{port}" filled in its message
    send_headers: Mapping[str, str] = field(default_factory=dict)
    timeout: float = 5.0
    limit: int | None = None  # read the body through `read_bounded(limit)`
    look_at: tuple[str, ...] = ()  # reply headers the outcome shows (looked up in lower case)


def error(message: str, at: str, *, kind: str = "TransportError", phase: str | None = None,
          unreachable: bool = False, refused_nearby: bool = False) -> dict[str, Any]:
    return {"error": kind, "message": message, "at": at, "phase": phase, "unreachable": unreachable,
            "refused_nearby": refused_nearby}


def read(status: int, content_type: str, length: int | None, body: bytes, **headers: str) -> dict[str, Any]:
    return {"status": status, "content_type": content_type, "content_length": length,
            "headers": headers, "body": body}


WHOLE = b'{"choices": [{"message": {"content": "5"}, "finish_reason": "stop"}]}'
EVENTS = (b'data: {"choices": []}\n\n', b"data: [DONE]\n\n")

CASES = [
    Case("a whole body", Answer(pieces=(WHOLE,)), read(200, "application/json", len(WHOLE), WHOLE)),
    Case(
        "a stream in pieces",
        Answer(pieces=EVENTS, content_type="text/event-stream; charset=utf-8", chunked=True),
        read(200, "text/event-stream", None, b"".join(EVENTS)),
    ),
    Case(
        "an error status is an answer",
        Answer(503, (b'{"error": {"message": "busy"}}',), headers=(("Retry-After", "2"),)),
        read(503, "application/json", 30, b'{"error": {"message": "busy"}}', **{"retry-after": "2"}),
        look_at=("retry-after",),
    ),
    Case(
        "a redirect is not followed",
        Answer(307, (), content_type="text/plain", headers=(("Location", "/v2/chat/completions"),)),
        read(307, "text/plain", 0, b"", location="/v2/chat/completions"),
        look_at=("location",),
    ),
    Case(
        "nothing listening",
        None,
        error("the connection was refused: nothing is listening on {host}:{port}", "post",
              unreachable=True, refused_nearby=True),
    ),
    Case(
        "a header with a line break is not sent",
        Answer(pieces=(WHOLE,)),
        error("the header 'Authorization' holds a line break or NUL; it was not sent", "post"),
        send_headers={"Authorization": "Bearer k\r\nX-Evil: 1"},
    ),
    Case(
        "a silent server",
        Answer(pieces=(WHOLE,), head_delay=3.0),
        error("the server sent nothing for 0.2 s", "post", phase="reading"),
        timeout=0.2,
    ),
    Case(
        "a stream that stalls",
        Answer(pieces=EVENTS, content_type="text/event-stream", chunked=True, piece_delay=3.0),
        error("the server sent nothing for 0.2 s", "body", phase="reading"),
        timeout=0.2,
    ),
    Case("a body cut short", Answer(pieces=(b"short",), declared=10, cut=True), error(BROKE_OFF, "body")),
    Case(
        "a stream cut short",
        Answer(pieces=EVENTS[:1], content_type="text/event-stream", chunked=True, cut=True),
        error(BROKE_OFF, "body"),
    ),
    Case(
        "an oversize body announced",
        Answer(pieces=(b"x" * 2000,)),
        error(too_long(1000, "the server announced 2000 bytes"), "body", kind="OverLimit"),
        limit=1000,
    ),
    Case(
        "an oversize stream",
        Answer(pieces=(b"x" * 600,) * 4, content_type="text/event-stream", chunked=True),
        error(too_long(1000, "the reply kept coming"), "body", kind="OverLimit"),
        limit=1000,
    ),
]


def expected(case: Case, host: str, port: int) -> dict[str, Any]:
    if "message" not in case.expect:
        return case.expect
    return {**case.expect, "message": case.expect["message"].format(host=host, port=port)}


async def outcome(transport: Transport, url: str, case: Case) -> dict[str, Any]:
    """What a caller of `transport` gets for the case: the reply read, or the error and where."""
    at = "post"
    try:
        async with transport.post(url, SENT, case.send_headers, case.timeout) as reply:
            at = "body"
            if case.limit is not None:
                body = await read_bounded(reply, case.limit)
            else:
                body = b"".join([chunk async for chunk in reply.chunks()])
            looked = {name: reply.headers.get(name) for name in case.look_at}
            return read(reply.status, reply.content_type, reply.content_length, body, **looked)
    except (TransportError, OverLimit) as exc:
        phase = exc.phase if isinstance(exc, TransportError) else None
        unreachable = isinstance(exc, TransportError) and exc.unreachable
        nearby = isinstance(exc, TransportError) and exc.refused_nearby
        return error(str(exc), at, kind=type(exc).__name__, phase=phase, unreachable=unreachable,
                     refused_nearby=nearby)


# --- the fake's side: a case's answer as a handler -------------------------------------------------


class FakeServer:
    """The case's answer from the fake transport's handler; `seen` counts the requests it answered."""

    def __init__(self, answer: Answer | None) -> None:
        self.answer = answer
        self.seen: list[Request] = []

    async def __call__(self, request: Request) -> FakeReply:
        answer = self.answer
        if answer is None:
            raise ConnectionRefusedError(111, "Connection refused")
        self.seen.append(request)
        await asyncio.sleep(answer.head_delay)
        length = None if answer.chunked else answer.declared or sum(map(len, answer.pieces))
        return FakeReply(answer.status, _paced(answer), content_type=answer.content_type,
                         headers=dict(answer.headers), content_length=length, cut=answer.cut)


async def _paced(answer: Answer) -> AsyncIterator[bytes]:
    for index, piece in enumerate(answer.pieces):
        if index:
            await asyncio.sleep(answer.piece_delay)
        yield piece


# --- the socket's side: a case's answer as bytes on the wire ---------------------------------------

_REASONS = {200: "OK", 307: "Temporary Redirect", 503: "Service Unavailable"}


def head(answer: Answer) -> bytes:
    lines = [f"HTTP/1.1 {answer.status} {_REASONS.get(answer.status, 'Whatever')}",
             f"Content-Type: {answer.content_type}"]
    lines += [f"{name}: {value}" for name, value in answer.headers]
    if answer.chunked:
        lines.append("Transfer-Encoding: chunked")
    else:
        lines.append(f"Content-Length: {answer.declared or sum(map(len, answer.pieces))}")
    return ("\r\n".join(lines) + "\r\n\r\n").encode()


def framed(answer: Answer, piece: bytes) -> bytes:
    return f"{len(piece):x}\r\n".encode() + piece + b"\r\n" if answer.chunked else piece


def ending(answer: Answer) -> bytes:
    return b"0\r\n\r\n" if answer.chunked and not answer.cut else b""
