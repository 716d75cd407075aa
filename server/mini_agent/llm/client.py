"""The model port's HTTP side: an OpenAI-compatible chat-completions client.

One client serves every session of a daemon, over one transport: `transport.AiohttpTransport` (aiohttp,
connections kept alive, for `http://` and `https://` alike) unless it is handed another, such as
`fake.FakeTransport` in tests.

The tool modes differ only in how the request is built and how the reply is read; the
transport — streaming, stop strings, retries, errors — is shared. A streamed completion is cut at
the stop strings here as well as on the server, since some servers ignore `stop`; the text a caller
gets is identical whether or not it streamed and wherever the network split it.
"""

from __future__ import annotations

import asyncio
import logging
import random
import uuid
from collections.abc import Mapping, Sequence
from typing import Any

from mini_agent.core.contracts import (
    LLMConfig,
    LLMResponse,
    Message,
    NoticeSink,
    TextSink,
    ToolMode,
    ToolSpec,
)
from mini_agent.llm import jsonmode, narrowing, native, react, reactprompt
from mini_agent.llm.failures import (
    ERROR_BODY_LIMIT,
    IGNORED_FORMAT,
    IGNORED_TOOLS,
    ON_RETRY,
    REPOINT,
    HTTPStatusError,
    describe,
    describe_status,
    failure,
    notice_images_left_out,
    notice_retry,
    notice_settled,
    parse_retry_after,
)
from mini_agent.llm.replies import (
    BadReply,
    Completion,
    OverLimit,
    Sink,
    StreamCut,
    read_bounded,
    read_prefix,
    read_stream,
    read_whole,
)
from mini_agent.llm.responses import native_response, text_response
from mini_agent.llm.stream import cut_at_stop
from mini_agent.llm.transport import AiohttpTransport, Transport, TransportError
from mini_agent.llm.window import overflow
from mini_agent.plumbing import jsoncodec

log = logging.getLogger(__name__)


# What auto mode tries, in order; a server that refuses one is asked in the next, and that is remembered.
_AUTO_ORDER: tuple[ToolMode, ...] = ("native", "json", "react")
# Where auto goes for a server that takes `tools` and ignores them (the model writes its call as text,
# as on llama-cpp-python): ReAct text, in which small models there finish more than in json
# (bench/agents: Qwen2.5-Coder-1.5B and SmolLM2-135M).
_AFTER_IGNORED: ToolMode = "react"


class _Refused(Exception):
    """The server refused what this mode needs from it; auto mode tries the next mode."""


class _ToolsRejected(_Refused):
    pass


class _FormatRejected(_Refused):
    pass


class _ImagesRejected(Exception):
    """The server refused the request's image parts: it is sent again with them as a note."""


class _ToolsIgnored(_Refused):
    """The server answered `tools` with a call written as text: it did not take them."""


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
        self._text_only: set[tuple[str, str]] = set()  # servers and models that refused image parts
        self._announced: set[tuple[str, str, ToolMode]] = set()  # said in the log: server, model, mode

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
        *,
        on_retry: NoticeSink | None = None,
        turn_mode: str | None = None,
        answer_with: Sequence[str] = (),
        leave_out: Mapping[str, Sequence[str]] | None = None,
        rest: Sequence[str] = (),
        answer_only: bool = False,
        only: Mapping[str, Mapping[str, Sequence[str]]] | None = None,
    ) -> LLMResponse:
        announced = (config.base_url, config.model, config.tool_mode)
        if announced not in self._announced:
            self._announced.add(announced)
            log.info("model requests go to %s (model %s, tool mode %s)", *announced)
        token = ON_RETRY.set(on_retry)
        try:
            pinned = {name: tuple(args) for name, args in (leave_out or {}).items()}
            grounded = {name: {arg: tuple(values) for arg, values in args.items()}
                        for name, args in (only or {}).items()}  # fmt: skip
            narrow = narrowing.Narrowing(tuple(answer_with), pinned, tuple(rest), answer_only, grounded)
            return await self._generate(messages, tools, config, on_text, turn_mode, narrow)
        finally:
            ON_RETRY.reset(token)

    async def _generate(
        self,
        messages: Sequence[Message],
        tools: Sequence[ToolSpec],
        config: LLMConfig,
        on_text: TextSink | None,
        turn_mode: str | None = None,
        narrow: narrowing.Narrowing = narrowing.NOT_NARROWED,
    ) -> LLMResponse:
        if config.tool_mode != "auto":
            return await self._in_mode(
                config.tool_mode, messages, tools, config, on_text, fallback=False, narrow=narrow
            )
        key = (config.base_url, config.model)
        learned = self._auto_mode.get(key, _AUTO_ORDER[0])
        if turn_mode in _AUTO_ORDER:  # a turn goes on in the form it began in; a new one takes the learned
            learned = turn_mode
        why: str | None = None
        modes = list(_AUTO_ORDER[_AUTO_ORDER.index(learned) :])
        while modes:
            mode = modes.pop(0)
            try:
                response = await self._in_mode(
                    mode, messages, tools, config, on_text, fallback=True, narrow=narrow
                )
            except _ToolsIgnored:
                why, modes = IGNORED_TOOLS, [_AFTER_IGNORED]
                continue
            except _Refused:
                continue
            self._settle(key, config, tried=mode, took=response.tool_mode, why=why)
            return response
        raise AssertionError("unreachable: react mode sends nothing a server could refuse")

    def _settle(
        self,
        key: tuple[str, str],
        config: LLMConfig,
        *,
        tried: ToolMode,
        took: ToolMode,
        why: str | None = None,
    ) -> None:
        """Remember the mode auto mode took for this server and model (`tried` is the mode asked for: a
        json request answered in ReAct settles on react); a change is said once."""
        before = self._auto_mode.get(key, _AUTO_ORDER[0])
        self._auto_mode[key] = took
        if took != before:
            notice_settled(config, took, IGNORED_FORMAT if took != tried else why)

    async def _in_mode(
        self,
        mode: ToolMode,
        messages: Sequence[Message],
        tools: Sequence[ToolSpec],
        config: LLMConfig,
        on_text: TextSink | None,
        *,
        fallback: bool,
        narrow: narrowing.Narrowing = narrowing.NOT_NARROWED,
    ) -> LLMResponse:
        """One mode's request; with `fallback`, a refusal raises `_Refused` instead of an `LLMError`.
        `narrow`: what json mode's grammar holds this turn to (the other modes cannot)."""
        if mode == "json":
            return await self._json(messages, tools, config, on_text, fallback=fallback, narrow=narrow)
        if mode == "native":
            return await self._native(messages, tools, config, on_text, fallback=fallback, narrow=narrow)
        return await self._react(messages, tools, config, on_text)

    async def _react(
        self,
        messages: Sequence[Message],
        tools: Sequence[ToolSpec],
        config: LLMConfig,
        on_text: TextSink | None,
    ) -> LLMResponse:
        payload = _payload(config, reactprompt.render_messages(messages, tools))
        payload["stop"] = list(react.STOP_SEQUENCES)
        done = await self._complete(payload, config, on_text, react.STOP_SEQUENCES, fallback=False)
        cut = done.finish_reason == "length"
        turn = react.parse(done.text, call_id=_new_call_id(), truncated=cut, tools=tools)
        return text_response(done, turn, "react")

    async def _json(
        self,
        messages: Sequence[Message],
        tools: Sequence[ToolSpec],
        config: LLMConfig,
        on_text: TextSink | None,
        *,
        fallback: bool,
        narrow: narrowing.Narrowing = narrowing.NOT_NARROWED,
    ) -> LLMResponse:
        """One schema-constrained turn: OpenAI's `json_schema` form first, `json_object` if refused; the
        form that worked is kept per server and model, as auto mode keeps its mode."""
        key = (config.base_url, config.model)
        form = self._json_form.get(key, "json_schema")
        payload = _payload(config, reactprompt.render_messages(messages, tools, jsonmode.PROTOCOL))
        refusable = fallback or form == "json_schema"
        streamed = Sink(on_text)  # a reply taken as ReAct is streamed whole, as react mode streams
        offered = narrowing.offered(tools, messages, narrow, prune_repeats=config.harness.prune_repeats)
        must_hold = narrow.must_hold
        try:
            done = await self._json_once(payload, offered, form, config, streamed, refusable, must_hold)
        except _FormatRejected:
            if form == "json_object":
                raise
            form = "json_object"
            done = await self._json_once(payload, offered, form, config, streamed, fallback, must_hold)
        self._json_form[key] = form
        turn = jsonmode.parse(done.text, call_id=_new_call_id(), truncated=done.finish_reason == "length")
        if fallback and turn.format_error is not None:
            step = _as_react(done, streamed)
            if step is not None:
                return step
        return text_response(done, turn, "json")

    async def _json_once(
        self,
        payload: dict[str, Any],
        tools: Sequence[ToolSpec],
        form: jsonmode.Form,
        config: LLMConfig,
        on_text: TextSink | None,
        refusable: bool,
        must_hold: Sequence[str] = (),
    ) -> Completion:
        """One request in one form; the caller is streamed only the decoded thought."""
        payload["response_format"] = jsonmode.response_format(tools, form, must_hold)
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
        narrow: narrowing.Narrowing = narrowing.NOT_NARROWED,
    ) -> LLMResponse:
        """One turn with OpenAI `tools`; an answer-only turn keeps them (the prefix cache) and sends
        `tool_choice: "none"`."""
        key = (config.base_url, config.model)
        images = key not in self._text_only and any(m.images for m in messages)
        payload = _payload(config, native.messages(messages, images=images))
        if tools:
            payload["tools"] = [t.to_openai() for t in tools]
            if narrow.answer_only:
                payload["tool_choice"] = "none"
        try:
            done = await self._complete(payload, config, on_text, (), fallback=fallback, images=images)
        except _ImagesRejected:
            self._text_only.add(key)
            notice_images_left_out(config)
            payload["messages"] = native.messages(messages, images=False)
            done = await self._complete(payload, config, on_text, (), fallback=fallback)
        calls = tuple(native.tool_call(raw, _new_call_id) for raw in done.calls)
        if calls:
            return native_response(done, thought=done.text, calls=calls)
        if not done.text.strip():
            return native_response(done, format_error="The reply was empty: no text and no tool call.")
        # any written call shows auto a server that ignored `tools`; native, once the model has results,
        # runs only calls that end the reply (the others are examples in an answer)
        ended = not fallback and native.has_results(messages)
        reading = config.harness.text_calls
        written = native.written_calls(done.text, tools, _new_call_id, ended=ended) if reading else ()
        if written and fallback:  # auto mode: the turn is asked again in a mode the server holds to
            raise _ToolsIgnored
        if written:
            return native_response(done, thought=done.text, calls=written)
        # a call attempt is no answer: auto asks again in ReAct text, native says why
        attempt = native.written_attempt(done.text, tools) if config.harness.text_calls else None
        if attempt is not None and fallback:
            raise _ToolsIgnored
        if attempt is not None:
            return native_response(done, thought=done.text, format_error=attempt)
        return native_response(done, final_answer=done.text)

    async def _complete(
        self,
        payload: dict[str, Any],
        config: LLMConfig,
        on_text: TextSink | None,
        stops: Sequence[str],
        *,
        fallback: bool,
        images: bool = False,
    ) -> Completion:
        """POST with retries; every failure that leaves here is an `LLMError` (or a `_Refused`, or with
        `images`, an `_ImagesRejected`)."""
        url = config.base_url.rstrip("/") + "/chat/completions"
        sink = Sink(on_text)
        body = jsoncodec.dumps(payload)
        try:
            async with asyncio.timeout(config.request_timeout_sec):
                return await self._tries(
                    url, body, payload, config, sink, stops, fallback=fallback, images=images
                )
        except TimeoutError as exc:  # only the overall deadline gets here: a read timeout is an LLMError
            why = (
                f"the request took more than {config.request_timeout_sec:g} s in all and was abandoned "
                "(llm.requestTimeoutSec; raise it for a slow model)"
            )
            raise failure(config, why) from exc

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
        images: bool = False,
    ) -> Completion:
        for attempt in range(config.max_retries + 1):
            last_try = attempt == config.max_retries
            try:
                return await self._attempt(url, body, config, sink, stops)
            except HTTPStatusError as exc:
                too_long, window = overflow(exc.status, exc.body)
                if too_long:  # not a refusal of `tools`, and no retry will make it fit
                    error = failure(config, describe_status(exc), attempt, exc.status)
                    error.context_overflow, error.context_window = True, window
                    raise error from exc
                if images and exc.refuses_images:
                    raise _ImagesRejected from exc
                if fallback and "tools" in payload and exc.refuses_tools:
                    raise _ToolsRejected from exc
                if fallback and "response_format" in payload and exc.refuses_format:
                    raise _FormatRejected from exc
                what = describe_status(exc)
                if last_try or not exc.retryable:
                    raise failure(config, what, attempt, exc.status) from exc
                delay = self._delay(attempt, exc.retry_after)
            except (BadReply, OverLimit) as exc:
                raise failure(config, str(exc), attempt) from exc
            except (TransportError, TimeoutError, StreamCut) as exc:
                what = describe(exc, config)
                refused_nearby = isinstance(exc, TransportError) and exc.refused_nearby
                if last_try or sink.used or refused_nearby:
                    advice = REPOINT if isinstance(exc, TransportError) and exc.unreachable else ""
                    raise failure(config, what, attempt, advice=advice) from exc
                delay = self._delay(attempt, None)
            notice_retry(config, what, delay, attempt)
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
                text = (await read_prefix(resp, ERROR_BODY_LIMIT)).decode(errors="replace")
                raise HTTPStatusError(resp.status, text, parse_retry_after(resp.headers.get("Retry-After")))
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


def _as_react(done: Completion, streamed: Sink) -> LLMResponse | None:
    """A json-mode reply that is a ReAct step instead (a server that ignores `response_format`, a model
    that writes ReAct): that step, in react mode, or None when the reply is not plainly ReAct.

    The text is cut at ReAct's stop strings, as react mode's request would have had it cut; when none of
    it was streamed as a thought, the step's text is streamed now, as react mode streams it.
    """
    text, stopped = cut_at_stop(done.text, react.STOP_SEQUENCES)
    finish = "stop" if stopped else done.finish_reason
    turn = react.parse_marked(text, call_id=_new_call_id(), truncated=finish == "length")
    if turn is None:
        return None
    if not streamed.used:
        streamed(text)
    return text_response(Completion(text, done.calls, done.usage, finish), turn, "react")


def _payload(config: LLMConfig, messages: list[dict[str, Any]]) -> dict[str, Any]:
    payload: dict[str, Any] = {
        "model": config.model,
        "messages": messages,
        "temperature": config.temperature,
        "max_tokens": config.max_tokens,
        "stream": config.stream,
    }
    if config.seed is not None:
        payload["seed"] = config.seed
    if config.stream:
        payload["stream_options"] = {"include_usage": True}
    return payload


def _new_call_id() -> str:
    return f"call_{uuid.uuid4().hex[:16]}"
