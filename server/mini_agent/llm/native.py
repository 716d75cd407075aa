"""Native tool mode's two edges: the history as OpenAI's chat messages (assistant `tool_calls`, `tool`
results), and the calls of a reply — the server's `tool_calls`, or, for a server that did not take
`tools`, the calls the model wrote as text (`textcalls`). Pure functions, no I/O."""

from __future__ import annotations

import json
from collections.abc import Callable, Sequence
from typing import Any

from mini_agent.core.contracts import Image, Message, Role, ToolCall, ToolSpec, user_turn
from mini_agent.llm import textcalls
from mini_agent.llm.reactprompt import left_out
from mini_agent.llm.replies import RawCall

NewId = Callable[[], str]


TOOL_IMAGES = "The images the tool results above returned:"


def messages(entries: Sequence[Message], *, images: bool = True) -> list[dict[str, Any]]:
    """The history as OpenAI's chat messages, one per entry, and after a run of tool results that
    returned images, one user message with those images: a `tool` message holds text only in OpenAI's
    API (and in the servers that follow it). Without `images` (a server that refused them), images are
    a note in the text of the entry they came with, as react gives them."""
    out: list[dict[str, Any]] = []
    returned: list[Image] = []
    for entry in entries:
        if returned and entry.role is not Role.TOOL:
            out.append(_user_images(TOOL_IMAGES, returned))
            returned = []
        out.append(message(entry, images=images))
        if images and entry.role is Role.TOOL:
            returned += entry.images
    if returned:
        out.append(_user_images(TOOL_IMAGES, returned))
    return out


def has_results(entries: Sequence[Message]) -> bool:
    """Whether the turn under way (since the user's last message) holds a tool result."""
    return any(entry.role is Role.TOOL for entry in entries[user_turn(entries) :])


def written(entry: Message) -> bool:
    """Whether an assistant turn's calls were read from its text (`textcalls`): its text is those
    calls, written the model's way. Sent back as it was, a chat template shows the calls twice, the
    text and its own `<tool_call>` form, and a small model that reads it writes the calls again
    instead of reading their results."""
    return textcalls.holds_calls(entry.content, (call.name for call in entry.tool_calls))


def message(entry: Message, *, images: bool = True) -> dict[str, Any]:
    """One history entry as OpenAI wants it; earlier turns render to the same bytes every time. A tool
    result's images are `messages`' to send; without `images`, they and a turn's are a note."""
    if entry.role is Role.TOOL:
        content = entry.content if images else entry.content + left_out(entry.images)
        if entry.tool_call_id is None:
            return {"role": "user", "content": "Observation: " + content}
        return {"role": "tool", "tool_call_id": entry.tool_call_id, "content": content}
    out: dict[str, Any] = {"role": entry.role.value, "content": entry.content}
    if entry.role is Role.ASSISTANT and entry.tool_calls and written(entry):
        out["content"] = ""  # the calls go once, as `tool_calls`: the form a chat template pairs with results
    if entry.images and not images:
        out["content"] = entry.content + left_out(entry.images)
    elif entry.images:
        out["content"] = _user_images(entry.content, entry.images)["content"]
    if entry.role is Role.ASSISTANT and entry.tool_calls:
        out["tool_calls"] = [
            {
                "id": call.id,
                "type": "function",
                "function": {
                    "name": call.name,
                    "arguments": call.raw_arguments or json.dumps(call.arguments, ensure_ascii=False),
                },
            }
            for call in entry.tool_calls
        ]
    return out


def _user_images(text: str, images: Sequence[Image]) -> dict[str, Any]:
    """A user message of OpenAI's content parts: the words, then each image as a data URL."""
    parts = [{"type": "image_url", "image_url": {"url": f"data:{image.mime_type};base64,{image.data}"}}
             for image in images]
    return {"role": "user", "content": [{"type": "text", "text": text}, *parts]}


def tool_call(raw: RawCall, new_id: NewId) -> ToolCall:
    """A call from the server's `tool_calls`; arguments that are not a JSON object are kept with the
    reason, for the model to see."""
    call_id = raw.id or new_id()
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


WRITTEN_ATTEMPT = (
    "The reply looks like a tool call written as text, but {why}. Call a listed tool with its arguments "
    "as one JSON object, or answer in plain words."
)


def written_attempt(text: str, tools: Sequence[ToolSpec]) -> str | None:
    """The format error for a reply that is nothing but a written call that names no listed tool or
    does not decode (`textcalls.attempted`); None for any other reply."""
    why = textcalls.attempted(text, tools)
    return None if why is None else WRITTEN_ATTEMPT.format(why=why)


def written_calls(
    text: str, tools: Sequence[ToolSpec], new_id: NewId, *, ended: bool = False
) -> tuple[ToolCall, ...]:
    """The calls of listed tools the model wrote in its reply's text (`llm.harness.textCalls`); with
    `ended`, only calls that end the reply (`textcalls`)."""
    written = textcalls.read(text, tools, ended=ended)
    return tuple(ToolCall(new_id(), call.name, call.arguments, call.raw_arguments) for call in written)
