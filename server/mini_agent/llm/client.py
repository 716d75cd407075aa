"""The model port's HTTP side: an OpenAI-compatible chat-completions client on aiohttp.

One client serves every session of a daemon: one aiohttp session (keep-alive, so a step costs one
request on a warm connection), created on first use because importing aiohttp costs a quarter of a
second the daemon should not spend before answering `initialize`.

The tool modes differ only in how the request is built and how the reply is read; the
transport — streaming, stop strings, retries, errors — is shared. A streamed completion is cut at
the stop strings here as well as on the server, since some servers ignore `stop`; the text a caller
gets is identical whether or not it streamed and wherever the network split it.
"""

from __future__ import annotations

import asyncio
import email.utils
import json
import random
import re
import socket
import time
import uuid
from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from ..contracts import (
    LLMConfig,
    LLMError,
    LLMResponse,
    Message,
    Role,
    TextSink,
    TokenUsage,
    ToolCall,
    ToolMode,
    ToolSpec,
)
from . import jsonmode, react
from .stream import SSEDecoder, StopScanner, cut_at_stop

if TYPE_CHECKING:
    import aiohttp

# Words in an error body that say the server cannot take the `tools` field.
_TOOLS_REFUSAL = re.compile(r"tool|unsupported|not supported", re.IGNORECASE)
# ... that it cannot take this `response_format` (llama-cpp-python 0.3.36 says so with HTTP 500).
_FORMAT_REFUSAL = re.compile(r"response_format|json_schema", re.IGNORECASE)
# What auto mode tries, in order; a server that refuses one is asked in the next, and that is remembered.
_AUTO_ORDER: tuple[ToolMode, ...] = ("native", "json", "react")
_BODY_SNIPPET = 300
_ERROR_BODY_LIMIT = 64 * 1024  # of an error page: enough for the server's own message
_LOOPBACK = ("localhost", "127.0.0.1", "::1", "[::1]")
_REPOINT = (
    " Start the model server, or point mini-agent at a running one: set OPENAI_BASE_URL, pass"
    " --base-url to the CLI, or change the editor's base URL setting (miniAgent.baseUrl in VS Code,"
    " llm.baseUrl in Neovim)."
)


@dataclass(frozen=True, slots=True)
class _RawCall:
    id: str
    name: str
    arguments: str


@dataclass(slots=True)
class _Completion:
    """One reply as the wire gave it, before any mode reads meaning into it."""

    text: str
    calls: list[_RawCall]
    usage: TokenUsage
    finish_reason: str | None


class _HTTPStatusError(Exception):
    def __init__(self, status: int, body: str, retry_after: float | None) -> None:
        super().__init__(f"HTTP {status}: {body[:_BODY_SNIPPET]}")
        self.status = status
        self.body = body
        self.retry_after = retry_after

    @property
    def retryable(self) -> bool:
        return self.status == 429 or self.status >= 500

    @property
    def refuses_tools(self) -> bool:
        if self.status == 429:
            return False
        return self.status in (400, 422) or bool(_TOOLS_REFUSAL.search(self.body))

    @property
    def refuses_format(self) -> bool:
        if self.status == 429:
            return False
        return self.status in (400, 422) or bool(_FORMAT_REFUSAL.search(self.body))


class _StreamCut(Exception):
    """The stream ended with neither `[DONE]` nor a finish_reason: the server gave up mid-reply."""


class _OverLimit(Exception):
    """The reply broke one of our own bounds (size, tokens); retrying would only repeat it."""


class _Refused(Exception):
    """The server refused what this mode needs from it; auto mode tries the next mode."""


class _ToolsRejected(_Refused):
    pass


class _FormatRejected(_Refused):
    pass


class _BadReply(Exception):
    """The server answered, but not with a chat completion (or it reported an error inside one)."""


class _Sink:
    """Forwards text to the caller and remembers whether any went out (such a try cannot be redone)."""

    def __init__(self, on_text: TextSink | None) -> None:
        self._on_text = on_text
        self.used = False

    def __call__(self, text: str) -> None:
        if text and self._on_text is not None:
            self.used = True
            self._on_text(text)


class OpenAICompatibleClient:
    """`LLMClient` for any server speaking `/chat/completions` (vLLM, llama.cpp, Ollama, OpenAI …).

    `backoff_base`/`backoff_cap` shape the exponential backoff with full jitter between retries;
    `retry_after_cap` bounds how long a server's `Retry-After` may make us wait.
    """

    def __init__(
        self, *, backoff_base: float = 0.5, backoff_cap: float = 8.0, retry_after_cap: float = 30.0
    ) -> None:
        self._backoff_base = backoff_base
        self._backoff_cap = backoff_cap
        self._retry_after_cap = retry_after_cap
        self._http: aiohttp.ClientSession | None = None
        # per (base_url, model): the mode auto mode settled on, the response_format form that worked
        self._auto_mode: dict[tuple[str, str], ToolMode] = {}
        self._json_form: dict[tuple[str, str], jsonmode.Form] = {}

    async def __aenter__(self) -> OpenAICompatibleClient:
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.aclose()

    async def aclose(self) -> None:
        if self._http is not None:
            await self._http.close()
            self._http = None

    async def generate(
        self,
        messages: Sequence[Message],
        tools: Sequence[ToolSpec],
        config: LLMConfig,
        on_text: TextSink | None = None,
    ) -> LLMResponse:
        if config.tool_mode != "auto":
            return await self._in_mode(config.tool_mode, messages, tools, config, on_text, fallback=False)
        key = (config.base_url, config.model)
        learned = self._auto_mode.get(key, _AUTO_ORDER[0])
        for mode in _AUTO_ORDER[_AUTO_ORDER.index(learned) :]:
            try:
                response = await self._in_mode(mode, messages, tools, config, on_text, fallback=True)
            except _Refused:
                continue
            self._auto_mode[key] = mode
            return response
        raise AssertionError("unreachable: react mode sends nothing a server could refuse")

    async def _in_mode(
        self,
        mode: ToolMode,
        messages: Sequence[Message],
        tools: Sequence[ToolSpec],
        config: LLMConfig,
        on_text: TextSink | None,
        *,
        fallback: bool,
    ) -> LLMResponse:
        """One mode's request; with `fallback`, a refusal raises `_Refused` instead of an `LLMError`."""
        if mode == "json":
            return await self._json(messages, tools, config, on_text, fallback=fallback)
        if mode == "native":
            return await self._native(messages, tools, config, on_text, fallback=fallback)
        return await self._react(messages, tools, config, on_text)

    async def _react(
        self,
        messages: Sequence[Message],
        tools: Sequence[ToolSpec],
        config: LLMConfig,
        on_text: TextSink | None,
    ) -> LLMResponse:
        payload = _payload(config, react.render_messages(messages, tools))
        payload["stop"] = list(react.STOP_SEQUENCES)
        done = await self._complete(payload, config, on_text, react.STOP_SEQUENCES, fallback=False)
        turn = react.parse(done.text, call_id=_new_call_id(), truncated=done.finish_reason == "length")
        return _text_response(done, turn, "react")

    async def _json(
        self,
        messages: Sequence[Message],
        tools: Sequence[ToolSpec],
        config: LLMConfig,
        on_text: TextSink | None,
        *,
        fallback: bool,
    ) -> LLMResponse:
        """One schema-constrained turn: OpenAI's `json_schema` form first, `json_object` if refused.

        The form that worked is kept per server and model, as auto mode keeps its mode.
        """
        key = (config.base_url, config.model)
        form = self._json_form.get(key, "json_schema")
        payload = _payload(config, react.render_messages(messages, tools, jsonmode.PROTOCOL))
        refusable = fallback or form == "json_schema"
        try:
            done = await self._json_once(payload, tools, form, config, on_text, refusable)
        except _FormatRejected:
            if form == "json_object":
                raise
            form = "json_object"
            done = await self._json_once(payload, tools, form, config, on_text, fallback)
        self._json_form[key] = form
        turn = jsonmode.parse(done.text, call_id=_new_call_id(), truncated=done.finish_reason == "length")
        return _text_response(done, turn, "json")

    async def _json_once(
        self,
        payload: dict[str, Any],
        tools: Sequence[ToolSpec],
        form: jsonmode.Form,
        config: LLMConfig,
        on_text: TextSink | None,
        refusable: bool,
    ) -> _Completion:
        """One request in one form; the caller is streamed only the decoded thought."""
        payload["response_format"] = jsonmode.response_format(tools, form)
        scanner = jsonmode.ThoughtScanner()

        def emit(thought: str) -> None:
            if thought and on_text is not None:
                on_text(thought)

        def sink(text: str) -> None:
            emit(scanner.feed(text))

        done = await self._complete(payload, config, sink, (), fallback=refusable)
        emit(scanner.finish())
        return done

    async def _native(
        self,
        messages: Sequence[Message],
        tools: Sequence[ToolSpec],
        config: LLMConfig,
        on_text: TextSink | None,
        *,
        fallback: bool,
    ) -> LLMResponse:
        payload = _payload(config, [_native_message(m) for m in messages])
        if tools:
            payload["tools"] = [t.to_openai() for t in tools]
        done = await self._complete(payload, config, on_text, (), fallback=fallback)
        calls = tuple(_tool_call(raw) for raw in done.calls)
        if calls:
            return _native_response(done, thought=done.text, calls=calls)
        if not done.text.strip():
            return _native_response(done, format_error="The reply was empty: no text and no tool call.")
        return _native_response(done, final_answer=done.text)

    async def _complete(
        self,
        payload: dict[str, Any],
        config: LLMConfig,
        on_text: TextSink | None,
        stops: Sequence[str],
        *,
        fallback: bool,
    ) -> _Completion:
        """POST with retries; every failure that leaves here is an `LLMError` (or a `_Refused`)."""
        url = config.base_url.rstrip("/") + "/chat/completions"
        sink = _Sink(on_text)
        body = json.dumps(payload, ensure_ascii=False).encode()
        try:
            async with asyncio.timeout(config.request_timeout_sec):
                return await self._tries(url, body, payload, config, sink, stops, fallback=fallback)
        except TimeoutError as exc:  # only the overall deadline gets here: a read timeout is an LLMError
            why = (
                f"the request took more than {config.request_timeout_sec:g} s in all and was abandoned "
                "(llm.requestTimeoutSec; raise it for a slow model)"
            )
            raise _failure(config, why) from exc

    async def _tries(
        self,
        url: str,
        body: bytes,
        payload: dict[str, Any],
        config: LLMConfig,
        sink: _Sink,
        stops: Sequence[str],
        *,
        fallback: bool,
    ) -> _Completion:
        import aiohttp

        for attempt in range(config.max_retries + 1):
            last_try = attempt == config.max_retries
            try:
                return await self._attempt(url, body, config, sink, stops)
            except _HTTPStatusError as exc:
                if fallback and "tools" in payload and exc.refuses_tools:
                    raise _ToolsRejected from exc
                if fallback and "response_format" in payload and exc.refuses_format:
                    raise _FormatRejected from exc
                if last_try or not exc.retryable:
                    raise _failure(config, _describe_status(exc), attempt, exc.status) from exc
                delay = self._delay(attempt, exc.retry_after)
            except (_BadReply, _OverLimit) as exc:
                raise _failure(config, str(exc), attempt) from exc
            except (aiohttp.ClientError, TimeoutError, _StreamCut) as exc:
                if last_try or sink.used or _refused_nearby(exc):
                    advice = _REPOINT if _unreachable(exc) else ""
                    raise _failure(config, _describe(exc, config), attempt, advice=advice) from exc
                delay = self._delay(attempt, None)
            await asyncio.sleep(delay)
        raise AssertionError("unreachable: the last try always returns or raises")

    async def _attempt(
        self, url: str, body: bytes, config: LLMConfig, sink: _Sink, stops: Sequence[str]
    ) -> _Completion:
        import aiohttp

        http = self._session()
        headers = {"Content-Type": "application/json"}
        if config.api_key:
            headers["Authorization"] = f"Bearer {config.api_key}"
        timeout = aiohttp.ClientTimeout(
            total=None, sock_connect=config.timeout_sec, sock_read=config.timeout_sec
        )
        async with http.post(url, data=body, headers=headers, timeout=timeout) as resp:
            if resp.status >= 400:
                text = (await _read_prefix(resp, _ERROR_BODY_LIMIT)).decode(errors="replace")
                raise _HTTPStatusError(resp.status, text, _retry_after(resp.headers.get("Retry-After")))
            if resp.content_type == "text/event-stream":
                return await _read_stream(resp, sink, stops, config)
            raw = await _read_bounded(resp, config.max_reply_bytes)
        done = _read_whole(raw, stops)
        sink(done.text)
        return done

    def _session(self) -> aiohttp.ClientSession:
        import aiohttp

        if self._http is None or self._http.closed:
            self._http = aiohttp.ClientSession(connector=aiohttp.TCPConnector(keepalive_timeout=60))
        return self._http

    def _delay(self, attempt: int, retry_after: float | None) -> float:
        if retry_after is not None:
            return min(retry_after, self._retry_after_cap)
        return random.uniform(0.0, min(self._backoff_cap, self._backoff_base * 2**attempt))


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
            event = json.loads(data)
        except ValueError as exc:
            raise _BadReply(f"a stream event is not JSON: {data[:_BODY_SNIPPET]}") from exc
        if not isinstance(event, dict):
            return False
        if "error" in event:
            raise _BadReply(f"the server reported an error mid-stream: {_error_text(event['error'])}")
        if event.get("usage"):
            self._usage = _usage(event["usage"])
        for choice in event.get("choices") or []:
            if choice.get("index", 0) == 0:
                self._take_choice(choice)
        return self._scanner.stopped

    def result(self) -> _Completion:
        """The completion so far; raises `_StreamCut` when the server never said it was finished.

        `[DONE]` alone is not enough: llama.cpp sends it without a finish_reason when it drops a reply.
        """
        if not (self._finish or self._scanner.stopped):
            raise _StreamCut("the server closed the stream mid-reply (no finish_reason)")
        self._emit(self._scanner.finish())
        calls = [
            _RawCall(slot["id"], slot["name"], "".join(slot["arguments"]))
            for _, slot in sorted(self._calls.items())
        ]
        finish = "stop" if self._scanner.stopped else self._finish
        return _Completion("".join(self._text), calls, self._usage, finish)

    def _count_piece(self) -> None:
        """Servers stream at least one token per piece, so more pieces than `max_tokens` means the
        server is not honouring it: stop reading rather than trust it to end."""
        self._pieces += 1
        if self._pieces > self._max_pieces:
            raise _OverLimit(
                f"the model server sent more than {self._max_pieces} tokens without finishing: it ignores "
                "max_tokens (llm.maxTokens; raise it if longer replies are expected)"
            )

    def _take_choice(self, choice: dict[str, Any]) -> None:
        delta = choice.get("delta") or {}
        if isinstance(delta.get("content"), str) and delta["content"]:
            self._count_piece()
            self._emit(self._scanner.feed(delta["content"]))
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


async def _read_stream(
    resp: aiohttp.ClientResponse, sink: _Sink, stops: Sequence[str], config: LLMConfig
) -> _Completion:
    decoder = SSEDecoder()
    assembler = _StreamAssembler(sink, stops, config.max_tokens)
    received = 0
    async for raw in resp.content.iter_any():
        received += len(raw)
        if received > config.max_reply_bytes:  # this also bounds an event-stream line that never ends
            raise _OverLimit(_too_long(config.max_reply_bytes, "the stream kept coming"))
        if any(assembler.take(data) for data in decoder.feed(raw)):
            resp.close()  # a server that ignores `stop` would keep generating: hang up on it
            return assembler.result()
    # Read to the end of the body even after [DONE], so the connection can be kept alive.
    for data in decoder.close():
        assembler.take(data)
    return assembler.result()


async def _read_bounded(resp: aiohttp.ClientResponse, limit: int) -> bytes:
    """The whole body, refused as soon as it passes `limit` bytes (never held beyond that)."""
    declared = resp.content_length
    if declared is not None and declared > limit:
        raise _OverLimit(_too_long(limit, f"the server announced {declared} bytes"))
    chunks: list[bytes] = []
    size = 0
    async for chunk in resp.content.iter_any():
        size += len(chunk)
        if size > limit:
            raise _OverLimit(_too_long(limit, "the reply kept coming"))
        chunks.append(chunk)
    return b"".join(chunks)


async def _read_prefix(resp: aiohttp.ClientResponse, limit: int) -> bytes:
    """At most the first `limit` bytes of the body: an error page is read for its message only."""
    chunks: list[bytes] = []
    size = 0
    async for chunk in resp.content.iter_any():
        chunks.append(chunk)
        size += len(chunk)
        if size >= limit:
            break
    return b"".join(chunks)[:limit]


def _too_long(limit: int, what: str) -> str:
    return (
        f"the reply passed {limit} bytes ({what}) and was refused "
        "(llm.maxReplyBytes; raise it if the model's replies really are that long)"
    )


def _read_whole(raw: bytes, stops: Sequence[str]) -> _Completion:
    try:
        data = json.loads(raw)
        choice = data["choices"][0]
        message = choice.get("message") or {}
    except (ValueError, KeyError, IndexError, TypeError, AttributeError) as exc:
        raise _BadReply(f"not a chat completion: {raw[:_BODY_SNIPPET].decode(errors='replace')}") from exc
    text, stopped = cut_at_stop(message.get("content") or "", stops)
    calls = [_raw_call(c) for c in message.get("tool_calls") or []]
    finish = "stop" if stopped else choice.get("finish_reason")
    return _Completion(text, calls, _usage(data.get("usage")), finish)


def _raw_call(call: dict[str, Any]) -> _RawCall:
    function = call.get("function") or {}
    arguments = function.get("arguments")
    if not isinstance(arguments, str):  # Ollama sends an object
        arguments = json.dumps(arguments if arguments is not None else {})
    return _RawCall(call.get("id") or "", function.get("name") or "", arguments)


def _tool_call(raw: _RawCall) -> ToolCall:
    """A native call; text that is not a JSON object is kept with the reason, for the model to see."""
    call_id = raw.id or _new_call_id()
    if not raw.arguments.strip():
        return ToolCall(call_id, raw.name, {}, raw.arguments)
    try:
        arguments = json.loads(raw.arguments)
    except ValueError as exc:
        return ToolCall(call_id, raw.name, {}, raw.arguments, f"the arguments are not valid JSON: {exc}")
    if not isinstance(arguments, dict):
        why = f"the arguments must be a JSON object, not {type(arguments).__name__}"
        return ToolCall(call_id, raw.name, {}, raw.arguments, why)
    return ToolCall(call_id, raw.name, arguments, raw.arguments)


def _text_response(done: _Completion, turn: react.ReactTurn, mode: ToolMode) -> LLMResponse:
    return LLMResponse(
        content=done.text,
        thought=turn.thought,
        tool_calls=(turn.call,) if turn.call is not None else (),
        final_answer=turn.final_answer,
        format_error=turn.format_error,
        usage=done.usage,
        finish_reason=done.finish_reason,
        tool_mode=mode,
    )


def _native_response(
    done: _Completion,
    *,
    thought: str = "",
    calls: tuple[ToolCall, ...] = (),
    final_answer: str | None = None,
    format_error: str | None = None,
) -> LLMResponse:
    return LLMResponse(
        content=done.text,
        thought=thought,
        tool_calls=calls,
        final_answer=final_answer,
        format_error=format_error,
        usage=done.usage,
        finish_reason=done.finish_reason,
        tool_mode="native",
    )


def _native_message(message: Message) -> dict[str, Any]:
    """One history entry as OpenAI wants it; earlier turns render to the same bytes every time."""
    if message.role is Role.TOOL:
        if message.tool_call_id is None:
            return {"role": "user", "content": "Observation: " + message.content}
        return {"role": "tool", "tool_call_id": message.tool_call_id, "content": message.content}
    out: dict[str, Any] = {"role": message.role.value, "content": message.content}
    if message.role is Role.ASSISTANT and message.tool_calls:
        out["tool_calls"] = [
            {
                "id": call.id,
                "type": "function",
                "function": {
                    "name": call.name,
                    "arguments": call.raw_arguments or json.dumps(call.arguments, ensure_ascii=False),
                },
            }
            for call in message.tool_calls
        ]
    return out


def _payload(config: LLMConfig, messages: list[dict[str, Any]]) -> dict[str, Any]:
    payload: dict[str, Any] = {
        "model": config.model,
        "messages": messages,
        "temperature": config.temperature,
        "max_tokens": config.max_tokens,
        "stream": config.stream,
    }
    if config.stream:
        payload["stream_options"] = {"include_usage": True}
    return payload


def _usage(raw: Any) -> TokenUsage:
    if not isinstance(raw, dict):
        return TokenUsage()
    details = raw.get("prompt_tokens_details") or {}
    return TokenUsage(
        prompt_tokens=int(raw.get("prompt_tokens") or 0),
        completion_tokens=int(raw.get("completion_tokens") or 0),
        cached_tokens=int(details.get("cached_tokens") or 0) if isinstance(details, dict) else 0,
    )


def _retry_after(value: str | None) -> float | None:
    """Seconds from a `Retry-After` header: a number, or an HTTP date."""
    if not value:
        return None
    try:
        return max(0.0, float(value))
    except ValueError:
        pass
    try:
        when = email.utils.parsedate_to_datetime(value)
    except (TypeError, ValueError):
        return None
    return max(0.0, when.timestamp() - time.time())


def _error_text(error: Any) -> str:
    if isinstance(error, dict):
        return str(error.get("message") or error)
    return str(error)


def _describe(exc: BaseException, config: LLMConfig) -> str:
    """What went wrong on the way to the server, in words."""
    import aiohttp

    if isinstance(exc, aiohttp.ServerTimeoutError | TimeoutError):
        phase = "connecting" if isinstance(exc, aiohttp.ConnectionTimeoutError) else "reading"
        return (
            f"no answer within {config.timeout_sec:g} s while {phase} "
            "(llm.timeoutSec; the server may be overloaded, or still loading the model)"
        )
    if isinstance(exc, _StreamCut):
        return str(exc)
    if isinstance(exc, aiohttp.ClientConnectorError):
        if isinstance(exc.os_error, socket.gaierror):
            return f"the host name {exc.host!r} could not be resolved"
        if isinstance(exc.os_error, ConnectionRefusedError):
            return f"the connection was refused: nothing is listening on {exc.host}:{exc.port}"
        return f"could not connect to {exc.host}:{exc.port} ({exc.os_error.strerror or exc.os_error})"
    return f"{type(exc).__name__}: {exc}"


def _describe_status(exc: _HTTPStatusError) -> str:
    """The status with the server's own message (the `error.message` of an OpenAI-style body)."""
    try:
        said = _error_text(json.loads(exc.body)["error"])
    except (ValueError, KeyError, TypeError):
        said = exc.body.strip()
    said = " ".join(said.split())[:_BODY_SNIPPET]
    hint = ""
    if exc.status in (401, 403):
        hint = " (check the API key: OPENAI_API_KEY or llm.apiKey)"
    elif exc.status == 404:
        hint = " (check the base URL, which usually ends in /v1, and the model name)"
    return f"it answered HTTP {exc.status}" + (f": {said}" if said else "") + hint


def _refused_nearby(exc: BaseException) -> bool:
    """A refused connection on this machine means no server is running: retrying will not start one."""
    import aiohttp

    return (
        isinstance(exc, aiohttp.ClientConnectorError)
        and isinstance(exc.os_error, ConnectionRefusedError)
        and exc.host in _LOOPBACK
    )


def _unreachable(exc: BaseException) -> bool:
    import aiohttp

    return isinstance(exc, aiohttp.ClientConnectorError | aiohttp.ConnectionTimeoutError)


def _failure(
    config: LLMConfig, reason: str, attempt: int = 0, status: int | None = None, *, advice: str = ""
) -> LLMError:
    """One message a person can act on: which server, what happened, and what to change."""
    tries = f" (gave up after {attempt + 1} tries)" if attempt else ""
    message = f"The model server at {config.base_url} could not be used: {reason}{tries}."
    return LLMError(message + advice, url=config.base_url.rstrip("/") + "/chat/completions", status=status)


def _new_call_id() -> str:
    return f"call_{uuid.uuid4().hex[:16]}"
