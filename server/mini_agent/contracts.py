"""The values that pass between the runtime, the model adapters, the tools and the store.

Plain dataclasses and enums with no I/O and no wire format: `wire.py` maps them to the camelCase
JSON the protocol carries. Every layer may import this module; it imports nothing of ours.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from enum import StrEnum
from typing import Any, Literal

ToolMode = Literal["react", "native", "json", "auto"]
TOOL_MODES: tuple[ToolMode, ...] = ("react", "native", "json", "auto")


class Role(StrEnum):
    SYSTEM = "system"
    USER = "user"
    ASSISTANT = "assistant"
    TOOL = "tool"


class SessionStatus(StrEnum):
    READY = "ready"
    RUNNING = "running"
    AWAITING_APPROVAL = "awaiting_approval"
    FINISHED = "finished"


class StopReason(StrEnum):
    """Why a step ended the turn (the Agent Client Protocol's names where they fit)."""

    END_TURN = "end_turn"
    MAX_TURN_REQUESTS = "max_turn_requests"
    CANCELLED = "cancelled"
    LOOP_DETECTED = "loop_detected"
    ERROR = "error"


@dataclass(frozen=True, slots=True)
class ToolCall:
    """One call the model asked for.

    `raw_arguments` is the argument text exactly as the model wrote it; `parse_error` says why it
    could not be decoded into `arguments`, so the registry can show the model its own text.
    """

    id: str
    name: str
    arguments: dict[str, Any]
    raw_arguments: str = ""
    parse_error: str | None = None


@dataclass(frozen=True, slots=True)
class Observation:
    call_id: str
    tool_name: str
    output: str
    is_error: bool = False
    execution_time_ms: float = 0.0
    truncated: bool = False
    logs: str = ""  # what the tool printed to stdout/stderr while it ran


@dataclass(frozen=True, slots=True)
class TokenUsage:
    prompt_tokens: int = 0
    completion_tokens: int = 0
    cached_tokens: int = 0

    def __add__(self, other: TokenUsage) -> TokenUsage:
        return TokenUsage(
            self.prompt_tokens + other.prompt_tokens,
            self.completion_tokens + other.completion_tokens,
            self.cached_tokens + other.cached_tokens,
        )


@dataclass(frozen=True, slots=True)
class Message:
    """One entry of a session's history.

    An assistant message holds the model's completion exactly as it arrived, so that rendering the
    history again yields the same bytes (the model server's prefix cache depends on it).
    """

    role: Role
    content: str = ""
    tool_calls: tuple[ToolCall, ...] = ()
    tool_call_id: str | None = None
    name: str | None = None


@dataclass(frozen=True, slots=True)
class LLMResponse:
    """What one model call produced, in mode-independent terms.

    `content` is the completion text exactly as received (what goes back into the history);
    `thought` the reasoning part; `final_answer` is set when the model answered; `format_error` is set
    when a text reply started the ReAct protocol and broke it.
    """

    content: str
    thought: str = ""
    tool_calls: tuple[ToolCall, ...] = ()
    final_answer: str | None = None
    format_error: str | None = None
    usage: TokenUsage = field(default_factory=TokenUsage)
    finish_reason: str | None = None
    tool_mode: ToolMode = "react"


@dataclass(frozen=True, slots=True)
class ToolSource:
    path: str
    function: str
    line: int = 0


@dataclass(frozen=True, slots=True)
class ToolSpec:
    """A tool as the model and the client see it (MCP's `Tool` shape)."""

    name: str
    description: str
    input_schema: dict[str, Any]
    source: ToolSource | None = None
    title: str | None = None
    requires_approval: bool = False
    idempotent: bool = False
    client: bool = False
    timeout_sec: float | None = None
    mcp_server: str | None = None  # the MCP server it comes from

    def to_openai(self) -> dict[str, Any]:
        """The `tools` entry of a chat-completions request."""
        return {
            "type": "function",
            "function": {"name": self.name, "description": self.description, "parameters": self.input_schema},
        }


@dataclass(frozen=True, slots=True)
class LLMConfig:
    base_url: str = "http://127.0.0.1:8000/v1"
    model: str = "default"
    api_key: str | None = None
    tool_mode: ToolMode = "react"
    temperature: float = 0.0
    max_tokens: int = 1024
    stream: bool = True
    max_retries: int = 3
    timeout_sec: float = 120.0  # the longest silence while connecting or reading
    request_timeout_sec: float = 600.0  # the whole request, retries included
    max_reply_bytes: int = 8 * 1024 * 1024  # bytes read off one reply before it is refused


class LLMError(Exception):
    """The model server could not produce a completion (after any retries)."""

    def __init__(self, message: str, *, url: str = "", status: int | None = None) -> None:
        super().__init__(message)
        self.url = url
        self.status = status


TextSink = Callable[[str], None]
