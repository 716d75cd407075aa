"""A scripted OpenAI-compatible model server, for demos and tests.

It is a real HTTP server (aiohttp.web on 127.0.0.1) answering `/v1/chat/completions` and `/v1/models`
from a script of turns, so the client under test goes through its whole transport: streaming, stop
strings, tool calls, HTTP errors, retries, cut streams. It records every request for inspection.

It plays a `Script` (script.py describes its JSON form). Usage is reported unless the script's
`report_usage` is false; see `ReplayServer` for how tokens and cached tokens are counted.
"""

from __future__ import annotations

import asyncio
import inspect
import json
import time
from collections.abc import Awaitable, Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, TypeAlias

from mini_agent.scripted.script import Script, ScriptedCall, Turn
from mini_agent.scripted.text import call_tokens, cut_at_stops, fill, prompt_tokens, refusal_of, tokens_of

if TYPE_CHECKING:
    from aiohttp import web

TurnSource: TypeAlias = "Turn | Mapping[str, Any] | None"
Responder: TypeAlias = Callable[[dict[str, Any]], "TurnSource | Awaitable[TurnSource]"]


@dataclass(slots=True)
class Exchange:
    """One request as the server saw it. Stamps are `time.monotonic()` seconds."""

    number: int  # 1-based, in arrival order
    body: dict[str, Any]
    raw: bytes
    headers: dict[str, str]
    peer: str  # the client's address and port: the same one again means a kept-alive connection
    arrived: float
    answered: float | None = None
    first_text: float | None = None  # when the first piece of reply text was written (streamed replies)
    status: int = 200
    aborted: bool = False  # the client hung up before the answer was complete
    prompt_tokens: int = 0
    cached_tokens: int = 0
    completion_tokens: int = 0


@dataclass(slots=True)
class _Reply:
    pieces: list[str]
    calls: list[dict[str, Any]]
    finish_reason: str
    usage: dict[str, Any]
    content: str = field(init=False)

    def __post_init__(self) -> None:
        self.content = "".join(self.pieces)


class ReplayServer:
    """The server. `async with ReplayServer(script) as srv:` then point a client at `srv.base_url`.

    `responder`, when given, replaces the script's turns: it is called with each request's JSON and
    returns the turn to play (a `Turn`, its JSON form, or None for "nothing scripted"), possibly
    awaitable — for tests whose answer depends on the request, such as concurrent sessions.

    Token accounting imitates a server with automatic prefix caching. The request is rendered the
    way a chat template would — a marker per role, the content, each tool call as its name and its
    raw argument text, the tool schemas first — and cut into tokens by a lossless regex in which
    whitespace belongs to the following word, as in BPE vocabularies. `cached_tokens` is the longest
    token prefix this prompt shares with any earlier prompt *or earlier prompt plus its completion*
    (a real server keeps the generated tokens' cache too). So an append-only history is cached up to
    its newest message, and any re-rendering of an earlier turn — even one changed space — shows up
    as a drop, exactly the fault the byte-exact history rule is there to prevent.
    """

    def __init__(
        self,
        script: Script | Sequence[Any] | Mapping[str, Any] = (),
        *,
        responder: Responder | None = None,
        host: str = "127.0.0.1",
        port: int = 0,
    ) -> None:
        self.script = script if isinstance(script, Script) else Script.from_json(script)
        self.exchanges: list[Exchange] = []
        self._responder = responder
        self._host = host
        self._port = port
        self._next_turn = 0
        self._seen_prefixes: set[int] = set()
        self._runner: web.AppRunner | None = None
        self.base_url = ""

    @property
    def requests(self) -> list[dict[str, Any]]:
        """Every request body, parsed, in arrival order."""
        return [e.body for e in self.exchanges]

    @property
    def response_formats(self) -> list[dict[str, Any] | None]:
        """Each request's `response_format` (None where it had none), in arrival order."""
        return [e.body.get("response_format") for e in self.exchanges]

    async def __aenter__(self) -> ReplayServer:
        await self.start()
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.close()

    async def start(self) -> str:
        from aiohttp import web

        app = web.Application(client_max_size=64 * 1024 * 1024)
        app.router.add_post("/v1/chat/completions", self._chat)
        app.router.add_get("/v1/models", self._models)
        # handler_cancellation: like vLLM, drop the work of a client that hung up.
        self._runner = web.AppRunner(
            app,
            access_log=None,
            handle_signals=False,
            keepalive_timeout=75,
            shutdown_timeout=1.0,
            handler_cancellation=True,
        )
        await self._runner.setup()
        site = web.TCPSite(self._runner, self._host, self._port)
        await site.start()
        host, port = self._runner.addresses[0][:2]
        self.base_url = f"http://{host}:{port}/v1"
        return self.base_url

    async def close(self) -> None:
        if self._runner is not None:
            await self._runner.cleanup()
            self._runner = None

    async def _models(self, request: web.Request) -> web.StreamResponse:
        from aiohttp import web

        model = {"id": self.script.model, "object": "model", "created": 0, "owned_by": "replay"}
        if self.script.context_limit is not None:
            model["max_model_len"] = self.script.context_limit  # as vLLM reports its window
        return web.json_response({"object": "list", "data": [model]})

    async def _chat(self, request: web.Request) -> web.StreamResponse:
        raw = await request.read()
        peer = request.transport.get_extra_info("peername") if request.transport else None
        address = f"{peer[0]}:{peer[1]}" if peer else ""
        exchange = Exchange(
            len(self.exchanges) + 1, {}, raw, dict(request.headers), address, time.monotonic()
        )
        self.exchanges.append(exchange)
        try:
            return await self._answer(request, exchange)
        except asyncio.CancelledError:
            exchange.aborted = True
            raise
        finally:
            exchange.answered = time.monotonic()

    async def _answer(self, request: web.Request, exchange: Exchange) -> web.StreamResponse:
        try:
            body = json.loads(exchange.raw)
            if not isinstance(body, dict) or not isinstance(body.get("messages"), list):
                raise ValueError("the body must be an object with a `messages` list")
        except ValueError as exc:
            return self._error(exchange, 400, f"bad request: {exc}")
        exchange.body = body
        if self.script.reject_tools and body.get("tools"):
            return self._error(exchange, 400, "this server does not support tools: remove the `tools` field")
        refusal = refusal_of(body, self.script.refuse_formats, self.script.context_limit)
        if refusal is not None:
            return self._error(exchange, *refusal)
        turn = await self._turn_for(body)
        if turn is None:
            return self._error(exchange, 410, f"the replay script has no turn for request {exchange.number}")
        # the prompt is read (counted, its prefix cached) before the delay, as a server's prefill comes
        # before it generates: under many requests at once, that work overlaps the others' delays
        reply = self._reply(body, turn, exchange) if turn.status < 400 else None
        if turn.delay:
            await asyncio.sleep(turn.delay)
        if reply is None:
            message = turn.error or f"scripted HTTP {turn.status}"
            return self._error(exchange, turn.status, message, turn.retry_after)
        if body.get("stream"):
            return await self._stream(request, exchange, reply, turn)
        return await self._whole(request, exchange, reply, turn)

    async def _turn_for(self, body: dict[str, Any]) -> Turn | None:
        if self._responder is not None:
            found = self._responder(body)
            if inspect.isawaitable(found):
                found = await found
            return found if isinstance(found, Turn) or found is None else Turn.from_json(found)
        turns, index = self.script.turns, self._next_turn
        self._next_turn += 1
        if index < len(turns):
            return turns[index]
        return turns[-1] if turns and self.script.repeat_last else None

    def _error(
        self, exchange: Exchange, status: int, message: str, retry_after: float | None = None
    ) -> web.StreamResponse:
        from aiohttp import web

        exchange.status = status
        headers = {"Retry-After": f"{retry_after:g}"} if retry_after is not None else None
        error = {"error": {"message": message, "type": "replay_error", "code": status}}
        return web.json_response(error, status=status, headers=headers)

    def _reply(self, body: dict[str, Any], turn: Turn, exchange: Exchange) -> _Reply:
        messages = body["messages"]
        pieces = [fill(p, messages) for p in (turn.chunks if turn.chunks is not None else [turn.content])]
        text, finish = "".join(pieces), "tool_calls" if turn.tool_calls else "stop"
        stops = body.get("stop") or []
        if self.script.honour_stop:
            text = cut_at_stops(text, [stops] if isinstance(stops, str) else stops)
        limit = body.get("max_tokens") or body.get("max_completion_tokens")
        if isinstance(limit, int) and len(tokens := tokens_of(text)) > limit:
            text, finish = "".join(tokens[:limit]), "length"
        if turn.chunks is None:
            pieces = tokens_of(text) or [""]
        calls = [_wire_call(call, exchange.number, i) for i, call in enumerate(turn.tool_calls)]
        prompt = prompt_tokens(body)
        completion = tokens_of(text) + call_tokens(calls)
        exchange.prompt_tokens = len(prompt)
        exchange.completion_tokens = len(completion)
        exchange.cached_tokens = self._cache(prompt, completion)
        usage = {
            "prompt_tokens": len(prompt),
            "completion_tokens": len(completion),
            "total_tokens": len(prompt) + len(completion),
            "prompt_tokens_details": {"cached_tokens": exchange.cached_tokens},
        }
        return _Reply(_clip(pieces, len(text)), calls, turn.finish_reason or finish, usage)

    def _cache(self, prompt: list[str], completion: list[str]) -> int:
        """Cached length of `prompt`; then remember every prefix of prompt + completion."""
        cached, hits, digest = 0, True, 0
        for i, token in enumerate([*prompt, *completion]):
            digest = hash((digest, token))
            if hits and i < len(prompt) and digest in self._seen_prefixes:
                cached += 1
            else:
                hits = False
            self._seen_prefixes.add(digest)
        return cached

    async def _whole(
        self, request: web.Request, exchange: Exchange, reply: _Reply, turn: Turn
    ) -> web.StreamResponse:
        from aiohttp import web

        message: dict[str, Any] = {"role": "assistant", "content": reply.content or None}
        if reply.calls:
            message["tool_calls"] = reply.calls
        elif message["content"] is None:
            message["content"] = ""
        data = json.dumps(
            {
                **self._envelope(exchange, "chat.completion"),
                "choices": [{"index": 0, "message": message, "finish_reason": reply.finish_reason}],
                **({"usage": reply.usage} if self.script.report_usage else {}),
            },
            ensure_ascii=False,
        ).encode()
        if not turn.cut_stream:
            return web.Response(body=data, content_type="application/json")
        response = web.StreamResponse(headers={"Content-Type": "application/json"})
        response.content_length = len(data)
        await response.prepare(request)
        await response.write(data[: len(data) // 2])
        if request.transport is not None:
            request.transport.close()
        return response

    async def _stream(
        self, request: web.Request, exchange: Exchange, reply: _Reply, turn: Turn
    ) -> web.StreamResponse:
        from aiohttp import web

        headers = {"Content-Type": "text/event-stream", "Cache-Control": "no-cache"}
        response = web.StreamResponse(headers=headers)
        await response.prepare(request)
        try:
            await self._send_events(response, exchange, reply, turn)
        except ConnectionError:
            exchange.aborted = True
        return response

    async def _send_events(
        self, response: web.StreamResponse, exchange: Exchange, reply: _Reply, turn: Turn
    ) -> None:
        envelope = self._envelope(exchange, "chat.completion.chunk")

        async def send(payload: dict[str, Any] | str) -> None:
            data = (
                payload
                if isinstance(payload, str)
                else json.dumps({**envelope, **payload}, ensure_ascii=False)
            )
            await response.write(f"data: {data}\n\n".encode())

        await send(_delta({"role": "assistant", "content": ""}))
        for i, piece in enumerate(reply.pieces):
            if turn.chunk_delay and i:
                await asyncio.sleep(turn.chunk_delay)
            if piece:
                if exchange.first_text is None:
                    exchange.first_text = time.monotonic()
                await send(_delta({"content": piece}))
        for delta in _call_deltas(reply.calls):
            await send(_delta({"tool_calls": [delta]}))
        if turn.cut_stream:
            return
        await send(_delta({}, reply.finish_reason))
        if self.script.report_usage:
            await send({"choices": [], "usage": reply.usage})
        await send("[DONE]")

    def _envelope(self, exchange: Exchange, kind: str) -> dict[str, Any]:
        return {
            "id": f"chatcmpl-replay-{exchange.number}",
            "object": kind,
            "created": int(time.time()),
            "model": self.script.model,
        }


def _wire_call(call: ScriptedCall, request_number: int, index: int) -> dict[str, Any]:
    return {
        "id": call.id or f"call_replay_{request_number}_{index}",
        "type": "function",
        "function": {"name": call.name, "arguments": call.arguments},
    }


def _call_deltas(calls: list[dict[str, Any]]) -> Iterator[dict[str, Any]]:
    """Each call as real servers stream it: id and name first, then the arguments in two pieces."""
    for index, call in enumerate(calls):
        arguments = call["function"]["arguments"]
        half = len(arguments) // 2
        yield {
            "index": index,
            "id": call["id"],
            "type": "function",
            "function": {"name": call["function"]["name"], "arguments": ""},
        }
        for piece in (arguments[:half], arguments[half:]):
            yield {"index": index, "function": {"arguments": piece}}


def _delta(delta: dict[str, Any], finish_reason: str | None = None) -> dict[str, Any]:
    return {"choices": [{"index": 0, "delta": delta, "finish_reason": finish_reason}]}


def _clip(pieces: list[str], length: int) -> list[str]:
    """The pieces cut down to the first `length` characters of their concatenation."""
    out: list[str] = []
    for piece in pieces:
        out.append(piece[:length])
        length -= len(out[-1])
    return out
