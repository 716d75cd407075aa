"""Chat completions as an OpenAI-compatible server sends them, for `llm.fake.FakeTransport`: streamed
(`events`, `sse`) or whole (`whole`)."""

from __future__ import annotations

import json
from typing import Any

from mini_agent.llm.fake import FakeReply


def events(
    *deltas: dict[str, Any], finish: str | None = "stop", usage: tuple[int, int] = (7, 3)
) -> list[bytes]:
    """A streamed completion, one event per delta, then the finish, usage and [DONE] (no finish and
    no usage when `finish` is None: a stream the server dropped), cut into odd network pieces."""
    out = [{"choices": [{"index": 0, "delta": d, "finish_reason": None}]} for d in deltas]
    if finish is not None:
        out.append({"choices": [{"index": 0, "delta": {}, "finish_reason": finish}]})
        out.append({"choices": [], "usage": {"prompt_tokens": usage[0], "completion_tokens": usage[1]}})
    stream = "".join(f"data: {json.dumps(event)}\n\n" for event in out) + "data: [DONE]\n\n"
    raw = stream.encode()
    return [raw[i : i + 37] for i in range(0, len(raw), 37)]


def sse(*texts: str, finish: str | None = "stop", usage: tuple[int, int] = (7, 3)) -> FakeReply:
    pieces = events(*({"content": t} for t in texts), finish=finish, usage=usage)
    return FakeReply(200, pieces, content_type="text/event-stream")


def whole(content: str, tool_calls: list[dict[str, Any]] | None = None, finish: str = "stop") -> FakeReply:
    message: dict[str, Any] = {"content": content}
    if tool_calls is not None:
        message["tool_calls"] = tool_calls
    body = {"choices": [{"message": message, "finish_reason": finish}], "usage": {}}
    return FakeReply(200, json.dumps(body).encode())
