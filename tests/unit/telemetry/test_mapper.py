"""The span mapper over the real runtime with fakes: a live run and the replay of its stored session
give the same span tree; content only when captured; a model failure and a loop stop are marked; the
settings come from the options and the OTEL_* environment."""

from __future__ import annotations

import time
from contextlib import AbstractContextManager, nullcontext
from dataclasses import dataclass, field
from typing import Any

import pytest
from mini_agent.core.contracts import LLMError
from mini_agent.core.events import AgentEvent
from mini_agent.core.runtime import AgentRuntime
from mini_agent.core.session import AgentConfig
from mini_agent.telemetry.config import Settings, settings
from mini_agent.telemetry.mapper import Attributes, SpanMapper
from mini_agent.telemetry.replay import replay

from ...support.fakes import ECHO, ScriptedModel, Tools, action, answer, call


@dataclass
class FakeSpan:
    name: str
    start: int
    attributes: Attributes
    parent: FakeSpan | None
    traceparent: str | None
    events: list[str] = field(default_factory=list)
    error: str | None = None
    ended: int | None = None

    def event(self, name: str, at_ns: int, attributes: Attributes | None = None) -> None:
        self.events.append(name)

    def set(self, attributes: Attributes) -> None:
        self.attributes.update(attributes)

    def end(self, at_ns: int, error: str | None = None, message: str | None = None) -> None:
        self.ended, self.error = at_ns, error

    def current(self) -> AbstractContextManager[None]:
        return nullcontext()


class FakeSpans:
    def __init__(self) -> None:
        self.made: list[FakeSpan] = []

    def start(
        self,
        name: str,
        at_ns: int,
        attributes: Attributes,
        *,
        parent: Any = None,
        traceparent: str | None = None,
        client: bool = False,
    ) -> FakeSpan:
        span = FakeSpan(name, at_ns, dict(attributes), parent, traceparent)
        self.made.append(span)
        return span


KEYS = ("gen_ai.tool.name", "gen_ai.tool.call.id", "gen_ai.usage.input_tokens", "mini_agent.stop_reason")


def tree(spans: FakeSpans) -> list[Any]:
    agents = [s for s in spans.made if s.parent is None]
    out = []
    for agent in agents:
        kids = sorted((s for s in spans.made if s.parent is agent), key=lambda s: s.start)
        out.append([(s.name, s.error, {k: v for k, v in s.attributes.items() if k in KEYS}) for s in kids])
        out.append((agent.name, agent.error, agent.attributes.get("mini_agent.stop_reason")))
    return out


async def live_run(
    *replies: Any, capture: bool = False, **config: Any
) -> tuple[FakeSpans, AgentRuntime, str]:
    spans = FakeSpans()
    holder: list[SpanMapper] = []

    def tap(event: AgentEvent) -> None:
        holder[0].observe(event, time.time_ns())

    runtime = AgentRuntime(ScriptedModel(*replies), Tools(ECHO), defaults=AgentConfig(**config), events=tap)
    holder.append(SpanMapper(spans, runtime.get, capture=capture))
    session = runtime.start_session("say the secret word")
    holder[0].parent(session.session_id, "00-" + "a" * 32 + "-" + "b" * 16 + "-01")
    await runtime.run(session.session_id)
    return spans, runtime, session.session_id


@pytest.mark.asyncio
async def test_a_live_run_and_its_replay_give_the_same_spans() -> None:
    spans, runtime, sid = await live_run(action(call("echo", 1, text="a")), answer("done"))
    assert tree(spans) == [
        [
            ("chat default", None, {"gen_ai.usage.input_tokens": 10}),
            ("execute_tool echo", None, {"gen_ai.tool.name": "echo", "gen_ai.tool.call.id": "c1"}),
            ("chat default", None, {"gen_ai.usage.input_tokens": 10}),
        ],
        ("invoke_agent mini-agent", None, "end_turn"),
    ]
    agent = spans.made[0]
    assert agent.traceparent is not None and agent.attributes["gen_ai.conversation.id"] == sid
    assert all(s.ended is not None for s in spans.made)
    assert not any("say the secret word" in str(s.attributes) for s in spans.made)  # not captured

    stored = FakeSpans()
    replay(SpanMapper(stored, {sid: runtime.get(sid)}.get), runtime.get(sid))
    assert tree(stored) == tree(spans)
    assert stored.made[0].traceparent is None  # a trace of its own


@pytest.mark.asyncio
async def test_captured_content_and_a_failed_model_request() -> None:
    spans, _, _ = await live_run(action(call("echo", 1, text="a")), LLMError("boom"), capture=True)
    agent = spans.made[0]
    assert "say the secret word" in str(agent.attributes["gen_ai.input.messages"])
    tool = next(s for s in spans.made if s.name == "execute_tool echo")
    assert tool.attributes["gen_ai.tool.call.arguments"] == '{"text": "a"}'
    failed = spans.made[-1]
    assert failed.name == "chat default" and failed.error == "LLMError" and agent.error == "agent_error"


@pytest.mark.asyncio
async def test_a_loop_stop_is_an_event_of_the_agent_span() -> None:
    same = [action(call("echo", n, text="x")) for n in range(1, 6)]
    spans, _, _ = await live_run(*same, answer("x"), loop_threshold=2)
    agent = spans.made[0]
    assert "mini_agent.loop_detected" in agent.events
    assert agent.attributes["mini_agent.stop_reason"] == "loop_detected"


def test_settings_come_from_the_option_or_the_environment() -> None:
    assert settings(None, None, {}) is None
    assert settings("http://h:6006/", None, {}) == Settings("http://h:6006/v1/traces", False)
    env = {"OTEL_EXPORTER_OTLP_ENDPOINT": "http://h:4318"}
    assert settings(None, None, env) == Settings(None, False)
    captured = {**env, "OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT": "true"}
    assert settings(None, None, captured) == Settings(None, True)
    assert settings(None, None, {**env, "OTEL_SDK_DISABLED": "true"}) is None
    assert settings("http://h", None, {"OTEL_TRACES_EXPORTER": "none"}) is None
