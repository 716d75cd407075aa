"""The daemon ⇄ tool host wire: length-prefixed JSON frames on a private pipe pair.

Shared by both sides, and the one place where a message's typed form meets its JSON object: each
message class below writes itself (`wire`) and reads itself (`of`).

fd 0/1/2 are never used for frames: whatever a tool prints cannot corrupt
the protocol. JSON goes through pydantic_core (both processes load pydantic anyway), the faster codec
on the per-call path.
"""

from __future__ import annotations

import os
import struct
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, TypeVar

from pydantic_core import from_json, to_json

from mini_agent.core.contracts import Expansion, Image, ToolOptions, ToolSource

HEADER = struct.Struct(">I")
MAX_FRAME_BYTES = 256 * 1024 * 1024
TRUNCATION_MARKER = "\n[… output truncated: {total} bytes, showing the {part} {shown} bytes]"


class ProtocolError(Exception):
    """A frame that cannot be decoded: the peer is broken or something wrote onto the pipe."""


@dataclass(frozen=True, slots=True)
class Ready:
    """The host's first frame: it runs, and `pid` is the worker that runs the tools."""

    pid: int

    def wire(self) -> dict[str, Any]:
        return {"ready": True, "pid": self.pid}

    @classmethod
    def of(cls, raw: dict[str, Any]) -> Ready:
        return cls(int(raw["pid"]))


@dataclass(frozen=True, slots=True)
class LoadRequest:
    """Import `path` afresh and describe `function` (None: every public one); `name` and
    `description` win over the decorator's and the docstring's."""

    path: str
    function: str | None = None
    name: str | None = None
    description: str | None = None

    def wire(self) -> dict[str, Any]:
        return {
            "op": "load",
            "path": self.path,
            "function": self.function,
            "name": self.name,
            "description": self.description,
        }


@dataclass(frozen=True, slots=True)
class CallRequest:
    """Run `function` of `path` (imported again first when `reload`); `tool` names it in messages."""

    path: str
    function: str
    tool: str
    arguments: Any
    reload: bool = False
    traceparent: str | None = None  # the traced call's W3C context, for the tool's own spans

    def wire(self) -> dict[str, Any]:
        return {
            "op": "call",
            "path": self.path,
            "function": self.function,
            "tool": self.tool,
            "arguments": self.arguments,
            "reload": self.reload,
            **({"traceparent": self.traceparent} if self.traceparent else {}),
        }


Request = LoadRequest | CallRequest


def request_of(raw: dict[str, Any]) -> Request:
    op = raw.get("op")
    if op == "load":
        return LoadRequest(raw["path"], raw.get("function"), raw.get("name"), raw.get("description"))
    if op == "call":
        traceparent = raw.get("traceparent")
        return CallRequest(
            raw["path"],
            raw["function"],
            raw["tool"],
            raw.get("arguments", {}),
            bool(raw.get("reload")),
            traceparent if isinstance(traceparent, str) else None,
        )
    raise ProtocolError(f"unknown request {op!r}")


@dataclass(frozen=True, slots=True)
class DescribedTool:
    """One reflected function as the host reports it; `options` holds what its decorator declared
    about running it (approval, idempotence, timeout), its name and description are the ones chosen."""

    name: str
    description: str
    input_schema: dict[str, Any]
    source: ToolSource
    options: ToolOptions
    output_schema: dict[str, Any] | None = None  # from the return annotation (`returns.py`)
    declared_schema: dict[str, Any] | None = None  # `input_schema` with `$defs` kept, when it has any

    def wire(self) -> dict[str, Any]:
        return {
            "name": self.name,
            "description": self.description,
            "inputSchema": self.input_schema,
            "source": {"path": self.source.path, "function": self.source.function, "line": self.source.line},
            "requiresApproval": self.options.requires_approval,
            "idempotent": self.options.idempotent,
            "timeoutSec": self.options.timeout_sec,
            **_said(
                outputSchema=self.output_schema,
                declaredSchema=self.declared_schema,
                readOnly=self.options.read_only,
                destructive=self.options.destructive,
                openWorld=self.options.open_world,
            ),
        }

    @classmethod
    def of(cls, raw: dict[str, Any]) -> DescribedTool:
        source = raw["source"]
        options = ToolOptions(
            requires_approval=bool(raw["requiresApproval"]),
            idempotent=bool(raw["idempotent"]),
            timeout_sec=raw["timeoutSec"],
            read_only=_hint(raw.get("readOnly")),
            destructive=_hint(raw.get("destructive")),
            open_world=_hint(raw.get("openWorld")),
        )
        return cls(
            raw["name"],
            raw["description"],
            raw["inputSchema"],
            ToolSource(source["path"], source["function"], source["line"]),
            options,
            raw.get("outputSchema"),
            raw.get("declaredSchema"),
        )


@dataclass(frozen=True, slots=True)
class LoadReply:
    """The tools a load found, or `error` (then `tools` is empty); `logs`: what importing printed."""

    tools: tuple[DescribedTool, ...] = ()
    error: str | None = None
    logs: str = ""

    def wire(self) -> dict[str, Any]:
        if self.error is not None:
            return {"ok": False, "error": self.error, "logs": self.logs}
        return {"ok": True, "tools": [tool.wire() for tool in self.tools], "logs": self.logs}

    @classmethod
    def of(cls, raw: dict[str, Any]) -> LoadReply:
        logs = str(raw.get("logs", ""))
        if not raw["ok"]:
            return cls(error=str(raw.get("error")), logs=logs)
        return cls(tuple(DescribedTool.of(tool) for tool in raw["tools"]), logs=logs)


@dataclass(frozen=True, slots=True)
class CallResult:
    """What one call produced: the host's reply, and what every other tool source answers too."""

    output: str
    is_error: bool = False
    truncated: bool = False
    logs: str = ""
    # the value as its output schema describes it: a copy of what `output` says, so not compared
    structured: dict[str, Any] | None = field(default=None, compare=False)
    # the daemon's reading of a refusal by the sandbox (`sandbox.expansion_for`); never on the wire
    expansion: Expansion | None = field(default=None, compare=False)
    # images the tool returned (an MCP tool's image blocks), each within `core.images`' bounds
    images: tuple[Image, ...] = ()

    def wire(self) -> dict[str, Any]:
        return {
            "output": self.output,
            "isError": self.is_error,
            "truncated": self.truncated,
            "logs": self.logs,
            **({"structured": self.structured} if self.structured is not None else {}),
        }

    @classmethod
    def of(cls, raw: dict[str, Any]) -> CallResult:
        structured = raw.get("structured")
        return cls(
            raw["output"], bool(raw["isError"]), bool(raw.get("truncated")), raw["logs"],
            structured if isinstance(structured, dict) else None,
        )  # fmt: skip


@dataclass(frozen=True, slots=True)
class Progress:
    """A running tool's own report (`tools.progress.report`), sent before the call's reply."""

    message: str | None = None
    fraction: float | None = None

    def wire(self) -> dict[str, Any]:
        return {"op": "progress", "message": self.message, "fraction": self.fraction}

    @classmethod
    def of(cls, raw: dict[str, Any]) -> Progress:
        message, fraction = raw.get("message"), raw.get("fraction")
        return cls(
            message if isinstance(message, str) else None,
            float(fraction) if isinstance(fraction, int | float) else None,
        )


def _said(**values: Any) -> dict[str, Any]:
    """The keys whose value is not None (a tool's optional facts, absent while not declared)."""
    return {key: value for key, value in values.items() if value is not None}


def _hint(value: Any) -> bool | None:
    return value if isinstance(value, bool) else None


def is_progress(raw: dict[str, Any]) -> bool:
    return raw.get("op") == "progress"


Message = Ready | LoadRequest | CallRequest | LoadReply | CallResult | Progress
M = TypeVar("M")


def read(raw: dict[str, Any], of: Callable[[dict[str, Any]], M]) -> M:
    """`raw` as a typed message; a frame that lacks a key or holds a wrong type is a ProtocolError."""
    try:
        return of(raw)
    except (KeyError, TypeError, ValueError) as exc:
        raise ProtocolError(f"malformed frame ({type(exc).__name__}: {exc})") from exc


def encode(message: Message) -> bytes:
    body = to_json(message.wire())
    return HEADER.pack(len(body)) + body


def frame_length(header: bytes) -> int:
    (length,) = HEADER.unpack(header)
    if length > MAX_FRAME_BYTES:
        raise ProtocolError(f"frame of {length} bytes exceeds the limit")
    return int(length)


def decode(body: bytes) -> dict[str, Any]:
    try:
        message = from_json(body)
    except ValueError as exc:
        raise ProtocolError(f"undecodable frame: {exc}") from exc
    if not isinstance(message, dict):
        raise ProtocolError("frame is not a JSON object")
    return message


def cap_text(text: str, limit: int) -> tuple[str, bool]:
    """Cut `text` to its first `limit` UTF-8 bytes plus a marker line; say whether it was cut."""
    if len(text) * 4 <= limit:  # no need to encode: UTF-8 takes at most 4 bytes a character
        return text, False
    data = text.encode()
    if len(data) <= limit:
        return text, False
    shown = data[:limit].decode(errors="ignore")
    return shown + TRUNCATION_MARKER.format(total=len(data), part="first", shown=limit), True


def read_log(fd: int, limit: int) -> str:
    """The last `limit` bytes of the capture file behind `fd` (a marker line says if more was cut)."""
    size = os.fstat(fd).st_size
    if size == 0:
        return ""
    text = os.pread(fd, limit, max(0, size - limit)).decode(errors="replace")
    if size <= limit:
        return text
    marker = TRUNCATION_MARKER.format(total=size, part="last", shown=limit).lstrip("\n")
    return marker + "\n" + text
