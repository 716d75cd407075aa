"""Reading a chat-completions reply: a whole JSON body or an event stream, cut at the stop strings,
bounded in size, folded into one `Completion`; the text a caller gets is identical whether or not it
streamed and wherever the network split it."""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from mini_agent.core.contracts import LLMConfig, TextSink, TokenUsage
from mini_agent.llm.stream import SSEDecoder, StopScanner, cut_at_stop
from mini_agent.llm.transport import Reply
from mini_agent.plumbing import jsoncodec

BODY_SNIPPET = 300


@dataclass(frozen=True, slots=True)
class RawCall:
    id: str
    name: str
    arguments: str


@dataclass(slots=True)
class Completion:
    """One reply as the wire gave it, before any mode reads meaning into it."""

    text: str
    calls: list[RawCall]
    usage: TokenUsage
    finish_reason: str | None
    refusal: str | None = None  # OpenAI's `refusal`: the model declined, in its words


class StreamCut(Exception):
    """The stream ended with neither `[DONE]` nor a finish_reason: the server gave up mid-reply."""


class OverLimit(Exception):
    """The reply broke one of our own bounds (size, tokens); retrying would only repeat it."""


class BadReply(Exception):
    """The server answered, but not with a chat completion (or it reported an error inside one)."""


class Sink:
    """Forwards text to the caller and remembers whether any went out (such a try cannot be redone)."""

    def __init__(self, on_text: TextSink | None) -> None:
        self._on_text = on_text
        self.used = False

    def __call__(self, text: str) -> None:
        if text and self._on_text is not None:
            self.used = True
            self._on_text(text)


class _StreamAssembler:
    """Folds the `data` payloads of a chat-completions stream into one completion.

    Text deltas pass through the stop scanner before they reach the sink; tool-call deltas are joined
    by their `index` (their `id` and name come once, the arguments in pieces).
    """

    def __init__(self, sink: TextSink, stops: Sequence[str], max_pieces: int) -> None:
        self._sink = sink
        self._scanner = StopScanner(stops)
        self._max_pieces = max_pieces
        self._pieces = 0
        self._text: list[str] = []
        self._refusal: list[str] = []
        self._calls: dict[int, dict[str, Any]] = {}
        self._usage = TokenUsage()
        self._finish: str | None = None
        self._done = False

    def take(self, data: str) -> bool:
        """Fold one event in; True once a stop string matched and the rest must not be read."""
        if self._done or data.strip() == "[DONE]":
            self._done = True
            return False
        try:
            event = jsoncodec.loads(data)
        except ValueError as exc:
            raise BadReply(f"a stream event is not JSON: {data[:BODY_SNIPPET]}") from exc
        if not isinstance(event, dict):
            return False
        if "error" in event:
            raise BadReply(f"the server reported an error mid-stream: {error_text(event['error'])}")
        if event.get("usage"):
            self._usage = _usage(event["usage"])
        for choice in event.get("choices") or []:
            if choice.get("index", 0) == 0:
                self._take_choice(choice)
        return self._scanner.stopped

    def result(self) -> Completion:
        """The completion so far; raises `StreamCut` when the server never said it was finished.

        `[DONE]` alone is not enough: llama.cpp sends it without a finish_reason when it drops a reply.
        """
        if not (self._finish or self._scanner.stopped):
            raise StreamCut("the server closed the stream mid-reply (no finish_reason)")
        self._emit(self._scanner.finish())
        calls = [
            RawCall(slot["id"], slot["name"], "".join(slot["arguments"]))
            for _, slot in sorted(self._calls.items())
        ]
        finish = "stop" if self._scanner.stopped else self._finish
        refusal = "".join(self._refusal) if self._refusal else None
        return Completion("".join(self._text), calls, self._usage, finish, refusal)

    def _count_piece(self) -> None:
        """Servers stream at least one token per piece, so more pieces than `max_tokens` means the
        server is not honouring it: stop reading rather than trust it to end."""
        self._pieces += 1
        if self._pieces > self._max_pieces:
            raise OverLimit(
                f"the model server sent more than {self._max_pieces} tokens without finishing: it ignores "
                "max_tokens (llm.maxTokens; raise it if longer replies are expected)"
            )

    def _take_choice(self, choice: dict[str, Any]) -> None:
        delta = choice.get("delta") or {}
        if isinstance(delta.get("content"), str) and delta["content"]:
            self._count_piece()
            self._emit(self._scanner.feed(delta["content"]))
        if isinstance(delta.get("refusal"), str):
            self._refusal.append(delta["refusal"])
        for piece in delta.get("tool_calls") or []:
            self._take_call(piece)
        if choice.get("finish_reason"):
            self._finish = choice["finish_reason"]

    def _take_call(self, piece: dict[str, Any]) -> None:
        index = piece.get("index")
        if not isinstance(index, int):  # servers that leave it out send one call at a time
            index = len(self._calls) if piece.get("id") or not self._calls else max(self._calls)
        slot = self._calls.setdefault(index, {"id": "", "name": "", "arguments": []})
        if piece.get("id"):
            slot["id"] = piece["id"]
        function = piece.get("function") or {}
        if function.get("name"):
            slot["name"] = function["name"]
        arguments = function.get("arguments")
        if arguments:
            self._count_piece()
        if arguments is not None:
            slot["arguments"].append(arguments if isinstance(arguments, str) else json.dumps(arguments))

    def _emit(self, text: str) -> None:
        if text:
            self._text.append(text)
            self._sink(text)


async def read_stream(
    resp: Reply, sink: Sink, stops: Sequence[str], config: LLMConfig
) -> Completion:
    decoder = SSEDecoder()
    assembler = _StreamAssembler(sink, stops, config.max_tokens)
    received = 0
    async for raw in resp.chunks():
        received += len(raw)
        if received > config.max_reply_bytes:  # this also bounds an event-stream line that never ends
            raise OverLimit(too_long(config.max_reply_bytes, "the stream kept coming"))
        if any(assembler.take(data) for data in decoder.feed(raw)):
            resp.close()  # a server that ignores `stop` would keep generating: hang up on it
            return assembler.result()
    # Read to the end of the body even after [DONE], so the connection can be kept alive.
    for data in decoder.close():
        assembler.take(data)
    return assembler.result()


async def read_bounded(resp: Reply, limit: int) -> bytes:
    """The whole body, refused as soon as it passes `limit` bytes (never held beyond that)."""
    declared = resp.content_length
    if declared is not None and declared > limit:
        raise OverLimit(too_long(limit, f"the server announced {declared} bytes"))
    chunks: list[bytes] = []
    size = 0
    async for chunk in resp.chunks():
        size += len(chunk)
        if size > limit:
            raise OverLimit(too_long(limit, "the reply kept coming"))
        chunks.append(chunk)
    return b"".join(chunks)


async def read_prefix(resp: Reply, limit: int) -> bytes:
    """At most the first `limit` bytes of the body: an error page is read for its message only."""
    chunks: list[bytes] = []
    size = 0
    async for chunk in resp.chunks():
        chunks.append(chunk)
        size += len(chunk)
        if size >= limit:
            break
    return b"".join(chunks)[:limit]


def too_long(limit: int, what: str) -> str:
    return (
        f"the reply passed {limit} bytes ({what}) and was refused "
        "(llm.maxReplyBytes; raise it if the model's replies really are that long)"
    )


def read_whole(raw: bytes, stops: Sequence[str]) -> Completion:
    try:
        data = jsoncodec.loads(raw)
        choice = data["choices"][0]
        message = choice.get("message") or {}
    except (ValueError, KeyError, IndexError, TypeError, AttributeError) as exc:
        raise BadReply(f"not a chat completion: {raw[:BODY_SNIPPET].decode(errors='replace')}") from exc
    text, stopped = cut_at_stop(message.get("content") or "", stops)
    calls = [_raw_call(c) for c in message.get("tool_calls") or []]
    finish = "stop" if stopped else choice.get("finish_reason")
    refusal = message.get("refusal")
    usage = _usage(data.get("usage"))
    return Completion(text, calls, usage, finish, refusal if isinstance(refusal, str) else None)


def _raw_call(call: dict[str, Any]) -> RawCall:
    function = call.get("function") or {}
    arguments = function.get("arguments")
    if not isinstance(arguments, str):  # Ollama sends an object
        arguments = json.dumps(arguments if arguments is not None else {})
    return RawCall(call.get("id") or "", function.get("name") or "", arguments)


def _usage(raw: Any) -> TokenUsage:
    """The reply's `usage` object; a reply without one has usage not reported (`reported` False)."""
    if not isinstance(raw, dict):
        return TokenUsage()
    details = raw.get("prompt_tokens_details") or {}
    return TokenUsage(
        prompt_tokens=int(raw.get("prompt_tokens") or 0),
        completion_tokens=int(raw.get("completion_tokens") or 0),
        cached_tokens=int(details.get("cached_tokens") or 0) if isinstance(details, dict) else 0,
        reported=True,
    )


def error_text(error: Any) -> str:
    if isinstance(error, dict):
        return str(error.get("message") or error)
    return str(error)
