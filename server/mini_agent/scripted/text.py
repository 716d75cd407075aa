"""What the scripted model server reads of a request: message text, placeholders filled from it, what
it refuses before generating, and a lossless tokenization for its usage and prefix-cache accounting."""

from __future__ import annotations

import json
import re
from collections.abc import Mapping, Sequence
from typing import Any

# Lossless: every character belongs to exactly one token, and whitespace sticks to the word after it.
_TOKEN = re.compile(r"\s*(?:\w+|[^\w\s])|\s+")
_OBSERVATION = re.compile(r"Observation[:：]")


def tokens_of(text: str) -> list[str]:
    return _TOKEN.findall(text)


def _text(content: Any) -> str:
    if isinstance(content, str):
        return content
    if isinstance(content, list):  # content parts
        return "".join(str(part.get("text", "")) for part in content if isinstance(part, dict))
    return ""


def cut_at_stops(text: str, stops: Sequence[str]) -> str:
    """What a server that honours `stop` sends: the text before the earliest stop string, which is left
    out. Written here apart from the client's own cut (`llm.stream`), so the oracle the client is tested
    against does not share its mistakes."""
    ends = [at for at in (text.find(stop) for stop in stops if stop) if at >= 0]
    return text[: min(ends)] if ends else text


def fill(template: str, messages: list[Any]) -> str:
    if "{last_user}" in template:
        template = template.replace("{last_user}", _last_user(messages))
    if "{last_observation}" in template:
        template = template.replace("{last_observation}", _last_observation(messages))
    return template


def _last_user(messages: list[Any]) -> str:
    return next((_text(m.get("content")) for m in reversed(messages) if m.get("role") == "user"), "")


def _last_observation(messages: list[Any]) -> str:
    for message in reversed(messages):
        text = _text(message.get("content"))
        if message.get("role") == "tool":
            return text
        markers = list(_OBSERVATION.finditer(text))
        if markers:
            return text[markers[-1].end() :].strip()
    return ""


def prompt_tokens(body: dict[str, Any]) -> list[str]:
    tokens: list[str] = []
    if body.get("tools"):
        schemas = json.dumps(body["tools"], ensure_ascii=False, sort_keys=True)
        tokens += ["<|tools|>", *tokens_of(schemas)]
    for message in body["messages"]:
        tokens += [f"<|{message.get('role')}|>", *tokens_of(_text(message.get("content")))]
        tokens += call_tokens(message.get("tool_calls") or [])
        tokens.append("<|end|>")
    return [*tokens, "<|assistant|>"]


def call_tokens(calls: list[dict[str, Any]]) -> list[str]:
    tokens: list[str] = []
    for call in calls:
        function = call.get("function") or {}
        arguments = function.get("arguments")
        text = arguments if isinstance(arguments, str) else json.dumps(arguments)
        tokens += ["<|tool_call|>", *tokens_of(str(function.get("name", ""))), *tokens_of(text)]
    return tokens


def refusal_of(
    body: dict[str, Any], refuse_formats: Mapping[str, int], context_limit: int | None
) -> tuple[int, str] | None:
    """What a validating server refuses before it generates: a `response_format` it cannot take, and
    (as vLLM words it) a prompt that with the reply's `max_tokens` passes its window."""
    response_format = body.get("response_format")
    kind = response_format.get("type") if isinstance(response_format, dict) else None
    status = refuse_formats.get(kind) if isinstance(kind, str) else None
    if status == 500:  # llama-cpp-python's pydantic error, passed on as an internal error
        where = "'loc': ('body', 'response_format', 'type')"
        return status, f"1 validation error:\n  {{'type': 'literal_error', {where}, 'input': {kind!r}}}"
    if status is not None:
        return status, f"response_format type {kind!r} is not supported by this server"
    if context_limit is None:
        return None
    prompt = len(prompt_tokens(body))
    reply = body.get("max_tokens") or body.get("max_completion_tokens") or 0
    if prompt + reply <= context_limit:
        return None
    return 400, (
        f"This model's maximum context length is {context_limit} tokens. However, you requested "
        f"{prompt + reply} tokens ({prompt} in the messages, {reply} in the completion). Please reduce the "
        "length of the messages or completion."
    )
