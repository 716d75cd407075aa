"""The script a scripted model server plays: its turns and options, read from JSON and checked.

Script (JSON): a list of turns, or an object

    {"turns": [...], "repeat_last": false, "reject_tools": false, "refuse_formats": {},
     "honour_stop": true, "model": "replay", "context_limit": null, "report_usage": true}

Turns are consumed one per request, in arrival order (an error answer consumes its turn too, so
`[{"status": 429, ...}, {"content": ...}]` scripts a retry). Past the end, the last turn repeats if
`repeat_last`, else the server answers 410. `reject_tools` answers 400 to any request carrying
`tools`, before consuming a turn (as a server validating its input would). `refuse_formats` maps a
`response_format` type to the HTTP status refusing it, also before consuming a turn: 500 plays
llama-cpp-python 0.3.36 refusing `json_schema` (a validation error naming `response_format`), any
other status a plain refusal. The server never enforces a format: what a turn says is what it sends,
so a script can play a server that ignores `response_format`. `honour_stop` cuts the
reply at the earliest of the request's stop strings and drops the string, as vLLM and llama.cpp do;
false plays a server that ignores `stop`. `context_limit` (tokens) refuses, before consuming a turn and as
vLLM does (HTTP 400, its message), a request whose prompt plus `max_tokens` passes it, and `/v1/models`
reports it as `max_model_len`. `report_usage` false sends no `usage` at all, as llama-cpp-python does
when it streams. A turn's keys:

    content        reply text; "{last_user}" becomes the content of the request's last user message,
                   "{last_observation}" the last tool result (a `tool` message, or the text after the
                   last "Observation:" in a message), so a scripted answer can quote a real tool output
    chunks         the reply text as explicit stream pieces (instead of content), e.g. to split a stop
                   string across two network chunks
    tool_calls     [{"name": ..., "arguments": {...} or "raw text", "id"?: ...}]
    status, error  answer with this HTTP status and error message instead (`retry_after`: seconds, sent
                   as Retry-After)
    delay          seconds to wait before answering; chunk_delay: seconds between stream chunks
    cut_stream     stop after the text without finish_reason or [DONE] (non-streamed: half a body)
    finish_reason  reported instead of the computed one ("stop", "length", "tool_calls")
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

_TURN_KEYS = frozenset(
    {
        "content",
        "chunks",
        "tool_calls",
        "status",
        "error",
        "retry_after",
        "delay",
        "chunk_delay",
        "cut_stream",
        "finish_reason",
    }
)
_SCRIPT_KEYS = frozenset(
    {
        "turns",
        "repeat_last",
        "reject_tools",
        "refuse_formats",
        "honour_stop",
        "model",
        "context_limit",
        "report_usage",
    }
)


@dataclass(frozen=True, slots=True)
class ScriptedCall:
    name: str
    arguments: str  # the raw text sent as `function.arguments`
    id: str | None = None


@dataclass(frozen=True, slots=True)
class Turn:
    content: str = ""
    chunks: tuple[str, ...] | None = None
    tool_calls: tuple[ScriptedCall, ...] = ()
    status: int = 200
    error: str = ""
    retry_after: float | None = None
    delay: float = 0.0
    chunk_delay: float = 0.0
    cut_stream: bool = False
    finish_reason: str | None = None

    @classmethod
    def from_json(cls, raw: Mapping[str, Any]) -> Turn:
        _check_keys(raw, _TURN_KEYS, "turn")
        if "chunks" in raw and "content" in raw:
            raise ValueError("a turn gives either content or chunks, not both")
        chunks = raw.get("chunks")
        calls = tuple(_scripted_call(c) for c in raw.get("tool_calls") or ())
        retry_after = raw.get("retry_after")
        return cls(
            content=str(raw.get("content", "")),
            chunks=tuple(str(c) for c in chunks) if chunks is not None else None,
            tool_calls=calls,
            status=int(raw.get("status", 200)),
            error=str(raw.get("error", "")),
            retry_after=float(retry_after) if retry_after is not None else None,
            delay=float(raw.get("delay", 0.0)),
            chunk_delay=float(raw.get("chunk_delay", 0.0)),
            cut_stream=bool(raw.get("cut_stream", False)),
            finish_reason=raw.get("finish_reason"),
        )


@dataclass(frozen=True, slots=True)
class Script:
    turns: tuple[Turn, ...] = ()
    repeat_last: bool = False
    reject_tools: bool = False
    refuse_formats: Mapping[str, int] = field(default_factory=dict)
    honour_stop: bool = True
    model: str = "replay"
    context_limit: int | None = None
    report_usage: bool = True

    @classmethod
    def from_json(cls, raw: Sequence[Any] | Mapping[str, Any]) -> Script:
        """A script from its JSON form: a list of turns, or an object with `turns` and options."""
        if not isinstance(raw, Mapping):
            return cls(turns=tuple(Turn.from_json(t) for t in raw))
        _check_keys(raw, _SCRIPT_KEYS, "script")
        return cls(
            turns=tuple(Turn.from_json(t) for t in raw.get("turns") or ()),
            repeat_last=bool(raw.get("repeat_last", False)),
            reject_tools=bool(raw.get("reject_tools", False)),
            refuse_formats={str(k): int(v) for k, v in (raw.get("refuse_formats") or {}).items()},
            honour_stop=bool(raw.get("honour_stop", True)),
            model=str(raw.get("model", "replay")),
            context_limit=int(raw["context_limit"]) if raw.get("context_limit") is not None else None,
            report_usage=bool(raw.get("report_usage", True)),
        )

    @classmethod
    def load(cls, path: str | Path) -> Script:
        return cls.from_json(json.loads(Path(path).read_text(encoding="utf-8")))


def _check_keys(raw: Mapping[str, Any], allowed: frozenset[str], what: str) -> None:
    unknown = sorted(set(raw) - allowed)
    if unknown:
        raise ValueError(f"unknown {what} key(s) {unknown}; allowed: {sorted(allowed)}")


def _scripted_call(raw: Mapping[str, Any]) -> ScriptedCall:
    arguments = raw.get("arguments", {})
    text = arguments if isinstance(arguments, str) else json.dumps(arguments, ensure_ascii=False)
    return ScriptedCall(name=str(raw["name"]), arguments=text, id=raw.get("id"))
