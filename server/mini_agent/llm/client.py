"""The model port's HTTP side: an OpenAI-compatible chat-completions client.

One client serves every session of a daemon, over one transport (`transport.py`: aiohttp with
keep-alive by default, a fake in unit tests).

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
import time
import uuid
from collections.abc import Sequence
from typing import Any

from ..contracts import (
    LLMConfig,
    LLMError,
    LLMResponse,
    Message,
    Role,
    TextSink,
    ToolCall,
    ToolMode,
    ToolSpec,
)
from . import jsonmode, react
from .replies import (
    BODY_SNIPPET,
    BadReply,
    Completion,
    OverLimit,
    RawCall,
    Sink,
    StreamCut,
    error_text,
    read_bounded,
    read_prefix,
    read_stream,
    read_whole,
)
from .transport import AiohttpTransport, Transport, TransportError
from .window import overflow

# Words in an error body that say the server cannot take the `tools` field.
_TOOLS_REFUSAL = re.compile(r"tool|unsupported|not supported", re.IGNORECASE)
# ... that it cannot take this `response_format` (llama-cpp-python 0.3.36 says so with HTTP 500).
_FORMAT_REFUSAL = re.compile(r"response_format|json_schema", re.IGNORECASE)
# What auto mode tries, in order; a server that refuses one is asked in the next, and that is remembered.
_AUTO_ORDER: tuple[ToolMode, ...] = ("native", "json", "react")
_ERROR_BODY_LIMIT = 64 * 1024  # of an error page: enough for the server's own message
_REPOINT = (
    " Start the model server, or point mini-agent at a running one: set OPENAI_BASE_URL, pass"
    " --base-url to the CLI, or change the editor's base URL setting (miniAgent.baseUrl in VS Code,"
    " llm.baseUrl in Neovim)."
)


class _HTTPStatusError(Exception):
    def __init__(self, status: int, body: str, retry_after: float | None) -> None:
        super().__init__(f"HTTP {status}: {body[:BODY_SNIPPET]}")
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


class _Refused(Exception):
    """The server refused what this mode needs from it; auto mode tries the next mode."""


class _ToolsRejected(_Refused):
    pass


class _FormatRejected(_Refused):
    pass


class OpenAICompatibleClient:
    """`LLMClient` for any server speaking `/chat/completions` (vLLM, llama.cpp, Ollama, OpenAI …).

    `backoff_base`/`backoff_cap` shape the exponential backoff with full jitter between retries;
    `retry_after_cap` bounds how long a server's `Retry-After` may make us wait.
    """

    def __init__(
        self,
        *,
        backoff_base: float = 0.5,
        backoff_cap: float = 8.0,
        retry_after_cap: float = 30.0,
        transport: Transport | None = None,
    ) -> None:
        self._backoff_base = backoff_base
        self._backoff_cap = backoff_cap
        self._retry_after_cap = retry_after_cap
        self._transport = transport if transport is not None else AiohttpTransport()
        # per (base_url, model): the mode auto mode settled on, the response_format form that worked
        self._auto_mode: dict[tuple[str, str], ToolMode] = {}
        self._json_form: dict[tuple[str, str], jsonmode.Form] = {}

    async def __aenter__(self) -> OpenAICompatibleClient:
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.aclose()

    async def aclose(self) -> None:
        await self._transport.aclose()

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
    ) -> Completion:
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
    ) -> Completion:
        """POST with retries; every failure that leaves here is an `LLMError` (or a `_Refused`)."""
        url = config.base_url.rstrip("/") + "/chat/completions"
        sink = Sink(on_text)
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
        sink: Sink,
        stops: Sequence[str],
        *,
        fallback: bool,
    ) -> Completion:
        for attempt in range(config.max_retries + 1):
            last_try = attempt == config.max_retries
            try:
                return await self._attempt(url, body, config, sink, stops)
            except _HTTPStatusError as exc:
                too_long, window = overflow(exc.status, exc.body)
                if too_long:  # not a refusal of `tools`, and no retry will make it fit
                    error = _failure(config, _describe_status(exc), attempt, exc.status)
                    error.context_overflow, error.context_window = True, window
                    raise error from exc
                if fallback and "tools" in payload and exc.refuses_tools:
                    raise _ToolsRejected from exc
                if fallback and "response_format" in payload and exc.refuses_format:
                    raise _FormatRejected from exc
                if last_try or not exc.retryable:
                    raise _failure(config, _describe_status(exc), attempt, exc.status) from exc
                delay = self._delay(attempt, exc.retry_after)
            except (BadReply, OverLimit) as exc:
                raise _failure(config, str(exc), attempt) from exc
            except (TransportError, TimeoutError, StreamCut) as exc:
                refused_nearby = isinstance(exc, TransportError) and exc.refused_nearby
                if last_try or sink.used or refused_nearby:
                    advice = _REPOINT if isinstance(exc, TransportError) and exc.unreachable else ""
                    raise _failure(config, _describe(exc, config), attempt, advice=advice) from exc
                delay = self._delay(attempt, None)
            await asyncio.sleep(delay)
        raise AssertionError("unreachable: the last try always returns or raises")

    async def _attempt(
        self, url: str, body: bytes, config: LLMConfig, sink: Sink, stops: Sequence[str]
    ) -> Completion:
        headers = {"Content-Type": "application/json"}
        if config.api_key:
            headers["Authorization"] = f"Bearer {config.api_key}"
        async with self._transport.post(url, body, headers, config.timeout_sec) as resp:
            if resp.status >= 400:
                text = (await read_prefix(resp, _ERROR_BODY_LIMIT)).decode(errors="replace")
                raise _HTTPStatusError(resp.status, text, _retry_after(resp.headers.get("Retry-After")))
            if resp.content_type == "text/event-stream":
                return await read_stream(resp, sink, stops, config)
            raw = await read_bounded(resp, config.max_reply_bytes)
        done = read_whole(raw, stops)
        sink(done.text)
        return done

    def _delay(self, attempt: int, retry_after: float | None) -> float:
        if retry_after is not None:
            return min(retry_after, self._retry_after_cap)
        return random.uniform(0.0, min(self._backoff_cap, self._backoff_base * 2**attempt))


def _tool_call(raw: RawCall) -> ToolCall:
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


def _text_response(done: Completion, turn: react.ReactTurn, mode: ToolMode) -> LLMResponse:
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
    done: Completion,
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


def _describe(exc: BaseException, config: LLMConfig) -> str:
    """What went wrong on the way to the server, in words."""
    phase = "reading" if isinstance(exc, TimeoutError) else None
    if isinstance(exc, TransportError):
        phase = exc.phase
    if phase is not None:
        return (
            f"no answer within {config.timeout_sec:g} s while {phase} "
            "(llm.timeoutSec; the server may be overloaded, or still loading the model)"
        )
    return str(exc)


def _describe_status(exc: _HTTPStatusError) -> str:
    """The status with the server's own message (the `error.message` of an OpenAI-style body)."""
    try:
        said = error_text(json.loads(exc.body)["error"])
    except (ValueError, KeyError, TypeError):
        said = exc.body.strip()
    said = " ".join(said.split())[:BODY_SNIPPET]
    hint = ""
    if exc.status in (401, 403):
        hint = " (check the API key: OPENAI_API_KEY or llm.apiKey)"
    elif exc.status == 404:
        hint = " (check the base URL, which usually ends in /v1, and the model name)"
    return f"it answered HTTP {exc.status}" + (f": {said}" if said else "") + hint


def _failure(
    config: LLMConfig, reason: str, attempt: int = 0, status: int | None = None, *, advice: str = ""
) -> LLMError:
    """One message a person can act on: which server, what happened, and what to change."""
    tries = f" (gave up after {attempt + 1} tries)" if attempt else ""
    message = f"The model server at {config.base_url} could not be used: {reason}{tries}."
    return LLMError(message + advice, url=config.base_url.rstrip("/") + "/chat/completions", status=status)


def _new_call_id() -> str:
    return f"call_{uuid.uuid4().hex[:16]}"
