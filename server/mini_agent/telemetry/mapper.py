"""The core's events as spans, after the OpenTelemetry GenAI semantic conventions: one mapper for a
live run (each event timed as it arrives) and for a stored session (`replay`, timed from the store).

Names follow the `opentelemetry-semantic-conventions` package 0.66b2 (`_incubating` `gen_ai` and
`mcp` attributes; the GenAI names are still "development"). Per prompt turn an `invoke_agent
mini-agent` span; under it a `chat {model}` span per model request, built from the step's record, and
an `execute_tool {name}` span per call, open from the model's asking to the outcome. Compactions and
loop stops are events on the agent span, retries events on the chat span, an approval asked for an
event on the call's span. Contents (prompts, completions, arguments, results) only with `capture`.
Imports nothing of OpenTelemetry: spans are made through the `Spans` factory it is handed.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from contextlib import AbstractContextManager
from dataclasses import dataclass, field
from typing import Protocol
from urllib.parse import urlsplit

from mini_agent.core.contracts import SessionStatus, StopReason, ToolCall, ToolSpec
from mini_agent.core.events import (
    AgentEvent,
    StatusChanged,
    ToolCallFinished,
    ToolCallPending,
    ToolCallStarted,
    UsageReported,
    UserTurn,
)
from mini_agent.core.session import AgentSession, StepRecord

AGENT_NAME = "mini-agent"
PROVIDER = "openai"  # the API the model client speaks (any OpenAI-compatible server)
SEMCONV_VERSION = "0.66b2"
TOOL_ERROR = "tool_error"  # error.type of a call that failed (the MCP SDK's word for it)
MODEL_ERROR = "LLMError"  # error.type of a model request that failed after its retries

AttributeValue = str | int | float | bool | list[str]
Attributes = dict[str, AttributeValue]


class Span(Protocol):
    def event(self, name: str, at_ns: int, attributes: Attributes | None = None) -> None: ...

    def set(self, attributes: Attributes) -> None: ...

    def end(self, at_ns: int, error: str | None = None, message: str | None = None) -> None: ...

    def current(self) -> AbstractContextManager[None]:
        """The span as the current trace context while the block runs."""
        ...


class Spans(Protocol):
    """Makes spans: a root (or a child of the client's `traceparent`) when `parent` is None."""

    def start(
        self,
        name: str,
        at_ns: int,
        attributes: Attributes,
        *,
        parent: Span | None = None,
        traceparent: str | None = None,
        client: bool = False,
    ) -> Span: ...


SessionLookup = Callable[[str], AgentSession | None]


@dataclass
class _Turn:
    agent: Span
    tools: dict[str, Span] = field(default_factory=dict)
    step_began: int = 0
    retries: list[tuple[int, str]] = field(default_factory=list)
    chatted: set[int] = field(default_factory=set)


def ns(seconds: float) -> int:
    return int(seconds * 1_000_000_000)


class SpanMapper:
    """Turns each session's events into spans as they come; `end_open` closes what a stored session
    left open (a turn awaiting approval)."""

    def __init__(self, spans: Spans, sessions: SessionLookup, *, capture: bool = False) -> None:
        self._spans = spans
        self._sessions = sessions
        self._capture = capture
        self._turns: dict[str, _Turn] = {}
        self._parents: dict[str, str] = {}

    def parent(self, session_id: str, traceparent: str) -> None:
        """The client's trace context for the session's next turn (kept until that turn opens)."""
        if session_id not in self._turns:
            self._parents[session_id] = traceparent

    def tool_span(self, session_id: str, call_id: str) -> Span | None:
        turn = self._turns.get(session_id)
        return turn.tools.get(call_id) if turn is not None else None

    def observe(self, event: AgentEvent, at_ns: int) -> None:
        session = self._sessions(event.session_id)
        if session is None:
            return
        turn = self._turns.get(event.session_id)
        if turn is None:
            if not _opens_turn(event):
                return
            turn = self._open(session, event, at_ns)
        match event:
            case StatusChanged():
                self._status(session, turn, event, at_ns)
            case UsageReported() if event.step < len(session.steps):
                self._chat(session, turn, session.steps[event.step], at_ns)
            case ToolCallPending():
                self._pending(session, turn, event.call, at_ns)
            case ToolCallStarted() if event.call_id in turn.tools:
                turn.tools[event.call_id].event("mini_agent.tool.started", at_ns)
            case ToolCallFinished() if event.observation.call_id in turn.tools:
                obs = event.observation
                span = turn.tools.pop(obs.call_id)
                span.set({"mini_agent.tool.outcome": "failed" if obs.is_error else "completed"})
                if self._capture:
                    span.set({"gen_ai.tool.call.result": obs.output})
                if obs.is_error:
                    span.end(at_ns, TOOL_ERROR, obs.output)
                else:
                    span.end(at_ns)

    def end_open(self, at_ns: int) -> None:
        for session_id in list(self._turns):
            self._close(session_id, self._turns[session_id], at_ns, None, None)

    # -- the spans ---------------------------------------------------------------------------------

    def _open(self, session: AgentSession, event: AgentEvent, at_ns: int) -> _Turn:
        attributes: Attributes = {
            "gen_ai.operation.name": "invoke_agent",
            "gen_ai.agent.name": AGENT_NAME,
            "gen_ai.provider.name": PROVIDER,
            "gen_ai.conversation.id": session.session_id,
            "gen_ai.request.model": session.config.llm.model,
        }
        if self._capture:
            text = event.text if isinstance(event, UserTurn) else (None if session.steps else session.task)
            if text is not None:
                attributes["gen_ai.input.messages"] = _messages("user", text)
        traceparent = self._parents.pop(session.session_id, None)
        agent = self._spans.start(f"invoke_agent {AGENT_NAME}", at_ns, attributes, traceparent=traceparent)
        turn = self._turns[session.session_id] = _Turn(agent, step_began=at_ns)
        return turn

    def _status(self, session: AgentSession, turn: _Turn, event: StatusChanged, at_ns: int) -> None:
        if event.stop_reason is None and event.status is SessionStatus.RUNNING:
            if event.message is None:
                turn.step_began = at_ns
            else:  # said while the model request is retried
                turn.retries.append((at_ns, event.message))
            return
        if event.status is SessionStatus.AWAITING_APPROVAL:
            for span in turn.tools.values():
                span.event("mini_agent.approval.requested", at_ns)
            return
        if event.stop_reason is None:
            return
        if event.stop_reason is StopReason.ERROR and event.step not in turn.chatted and event.message:
            self._failed_chat(session, turn, event.message, at_ns)
        if event.stop_reason is StopReason.LOOP_DETECTED:
            turn.agent.event("mini_agent.loop_detected", at_ns, {"mini_agent.step": event.step})
        self._close(session.session_id, turn, at_ns, event.stop_reason, event.message)

    def _close(
        self, session_id: str, turn: _Turn, at_ns: int, reason: StopReason | None, message: str | None
    ) -> None:
        for span in turn.tools.values():
            span.set({"mini_agent.tool.outcome": "not_run"})
            span.end(at_ns)
        if reason is not None:
            stopped: Attributes = {"gen_ai.response.finish_reasons": [reason.value]}
            turn.agent.set(stopped | {"mini_agent.stop_reason": reason.value})
        failed = reason is StopReason.ERROR
        turn.agent.end(at_ns, "agent_error" if failed else None, message if failed else None)
        del self._turns[session_id]

    def _chat(self, session: AgentSession, turn: _Turn, record: StepRecord, at_ns: int) -> None:
        turn.chatted.add(record.index)
        start = ns(record.started_at) if record.started_at else turn.step_began
        end = start + ns(record.model_ms / 1000.0) if record.model_ms else at_ns
        attributes = self._chat_attributes(session) | _usage(record)
        attributes["mini_agent.step"] = record.index
        if record.tool_mode:
            attributes["mini_agent.tool_mode"] = record.tool_mode
        if record.finish_reason:
            attributes["gen_ai.response.finish_reasons"] = [record.finish_reason]
        if record.first_chunk_ms is not None:
            attributes["gen_ai.response.time_to_first_chunk"] = record.first_chunk_ms / 1000.0
        if self._capture:
            attributes["gen_ai.output.messages"] = _messages("assistant", record.completion)
        chat = self._spans.start(
            f"chat {session.config.llm.model}", start, attributes, parent=turn.agent, client=True
        )
        self._retries(turn, chat)
        chat.end(end)
        if record.compaction is not None:
            c = record.compaction
            turn.agent.event(
                "mini_agent.compaction",
                start,
                {
                    "mini_agent.step": record.index,
                    "mini_agent.compaction.digested": c.digested,
                    "mini_agent.compaction.summarised": c.summarised,
                    "mini_agent.compaction.tokens_before": c.before,
                    "mini_agent.compaction.tokens_after": c.after,
                },
            )

    def _failed_chat(self, session: AgentSession, turn: _Turn, message: str, at_ns: int) -> None:
        chat = self._spans.start(
            f"chat {session.config.llm.model}",
            turn.step_began,
            self._chat_attributes(session),
            parent=turn.agent,
            client=True,
        )
        self._retries(turn, chat)
        chat.end(at_ns, MODEL_ERROR, message)

    def _retries(self, turn: _Turn, chat: Span) -> None:
        for at, message in turn.retries:
            chat.event("mini_agent.retry", at, {"mini_agent.retry.message": message})
        turn.retries.clear()

    def _chat_attributes(self, session: AgentSession) -> Attributes:
        llm = session.config.llm
        attributes: Attributes = {
            "gen_ai.operation.name": "chat",
            "gen_ai.provider.name": PROVIDER,
            "gen_ai.conversation.id": session.session_id,
            "gen_ai.request.model": llm.model,
            "gen_ai.response.model": llm.model,
            "gen_ai.request.temperature": llm.temperature,
            "gen_ai.request.max_tokens": llm.max_tokens,
            "gen_ai.request.stream": llm.stream,
        }
        return attributes | _server(llm.base_url)

    def _pending(self, session: AgentSession, turn: _Turn, call: ToolCall, at_ns: int) -> None:
        spec = next((tool for tool in session.tools if tool.name == call.name), None)
        attributes: Attributes = {
            "gen_ai.operation.name": "execute_tool",
            "gen_ai.conversation.id": session.session_id,
            "gen_ai.tool.name": call.name,
            "gen_ai.tool.call.id": call.id,
            "gen_ai.tool.type": "extension" if spec is not None and spec.mcp_server else "function",
        } | _tool_source(spec)
        if self._capture:
            attributes["gen_ai.tool.call.arguments"] = call.raw_arguments or json.dumps(call.arguments)
        span = self._spans.start(f"execute_tool {call.name}", at_ns, attributes, parent=turn.agent)
        turn.tools[call.id] = span


def _opens_turn(event: AgentEvent) -> bool:
    """Whatever a turn does opens one, but a status at rest (a step's end, a session's report)."""
    if isinstance(event, StatusChanged):
        return event.status is SessionStatus.RUNNING or event.stop_reason is not None
    return isinstance(event, UserTurn | ToolCallPending | UsageReported)


def _tool_source(spec: ToolSpec | None) -> Attributes:
    if spec is None:
        return {}
    if spec.mcp_server:
        return {"mcp.method.name": "tools/call", "mini_agent.mcp.server": spec.mcp_server}
    return {"mini_agent.tool.client": spec.client}


def _usage(record: StepRecord) -> Attributes:
    usage = record.usage
    if not usage.reported:
        return {}
    attributes: Attributes = {
        "gen_ai.usage.input_tokens": usage.prompt_tokens,
        "gen_ai.usage.output_tokens": usage.completion_tokens,
    }
    if usage.cached_tokens:
        attributes["gen_ai.usage.cache_read.input_tokens"] = usage.cached_tokens
    return attributes


def _server(base_url: str) -> Attributes:
    parts = urlsplit(base_url)
    attributes: Attributes = {}
    if parts.hostname:
        attributes["server.address"] = parts.hostname
    try:
        port = parts.port or (443 if parts.scheme == "https" else 80)
    except ValueError:
        return attributes
    attributes["server.port"] = port
    return attributes


def _messages(role: str, text: str) -> str:
    """A message as the conventions' `gen_ai.input.messages` / `gen_ai.output.messages` hold it."""
    return json.dumps([{"role": role, "parts": [{"type": "text", "content": text}]}], ensure_ascii=False)
