"""In-memory fakes of the core's ports: a scripted model, a tool set, an approver and stores (one that
refuses some sessions, one that breaks), plus shorthands for the replies and calls they trade."""

from __future__ import annotations

import asyncio
import copy
import json
from collections.abc import Sequence
from typing import Any

from mini_agent.core.contracts import (
    LLMConfig,
    LLMResponse,
    Message,
    Observation,
    TextSink,
    TokenUsage,
    ToolCall,
    ToolSpec,
)
from mini_agent.core.session import AgentSession, Decision, StoreUnavailable

ECHO = ToolSpec("echo", "Echo the text.", {"type": "object", "properties": {"text": {"type": "string"}}})
RISKY = ToolSpec("wipe", "Delete things.", {"type": "object", "properties": {}}, requires_approval=True)


def call(name: str, n: int, **arguments: Any) -> ToolCall:
    return ToolCall(f"c{n}", name, arguments, json.dumps(arguments))


def answer(text: str) -> LLMResponse:
    return LLMResponse(content=f"Final Answer: {text}", final_answer=text, usage=TokenUsage(10, 2, 5))


def action(*calls: ToolCall) -> LLMResponse:
    return LLMResponse(
        content=f"Action: {calls[0].name}", thought="thinking", tool_calls=calls, usage=TokenUsage(10, 2, 5)
    )


class ScriptedModel:
    def __init__(self, *replies: LLMResponse | Exception, delay: float = 0.0) -> None:
        self.replies = list(replies)
        self.seen: list[list[Message]] = []
        self.asked: list[dict[str, object]] = []  # each request's keyword arguments (turn_mode, answer_with)
        self.delay = delay

    async def generate(
        self,
        messages: Sequence[Message],
        tools: Sequence[ToolSpec],
        config: LLMConfig,
        on_text: TextSink | None = None,
        **asked: object,
    ) -> LLMResponse:
        self.seen.append(list(messages))
        self.asked.append(asked)
        if self.delay:
            await asyncio.sleep(self.delay)
        reply = self.replies.pop(0)
        if isinstance(reply, Exception):
            raise reply
        if on_text is not None:
            on_text(reply.content)
        return reply


class Tools:
    def __init__(self, *specs: ToolSpec, delay: float = 0.0) -> None:
        self.specs = {spec.name: spec for spec in specs}
        self.ran: list[ToolCall] = []
        self.delay = delay

    def list_tools(self) -> list[ToolSpec]:
        return list(self.specs.values())

    def get(self, name: str) -> ToolSpec | None:
        return self.specs.get(name)

    async def execute(self, call: ToolCall, *, session_id: str) -> Observation:
        self.ran.append(call)
        if self.delay:
            await asyncio.sleep(self.delay)
        return Observation(call.id, call.name, json.dumps(call.arguments))


class Approver:
    def __init__(self, decision: tuple[Decision, str | None] | None) -> None:
        self.decision = decision
        self.asked: list[str] = []

    async def request_permission(
        self, session: AgentSession, call: ToolCall, spec: ToolSpec
    ) -> tuple[Decision, str | None] | None:
        self.asked.append(call.name)
        return self.decision


class MemoryStore:
    """The store port in memory: keeps a deep copy per checkpoint, so a test can 'crash' at any of them."""

    def __init__(self, lease_stale_after: float = 300.0) -> None:
        self.lease_stale_after = lease_stale_after
        self.saved: dict[str, AgentSession] = {}
        self.checkpoints: list[AgentSession] = []
        self.leases: dict[str, str] = {}
        self.heartbeats = 0
        self.forgotten: list[str] = []

    def save(self, *sessions: AgentSession) -> None:
        for session in sessions:
            snapshot = copy.deepcopy(session)
            self.saved[session.session_id] = snapshot
            self.checkpoints.append(snapshot)

    def load(self, session_id: str) -> AgentSession | None:
        saved = self.saved.get(session_id)
        return copy.deepcopy(saved) if saved is not None else None

    def is_current(self, session: AgentSession) -> bool:
        saved = self.saved.get(session.session_id)
        return saved is not None and saved.updated_at == session.updated_at

    def acquire(self, session_id: str, owner: str) -> bool:
        if self.leases.get(session_id, owner) != owner:
            return False
        self.leases[session_id] = owner
        return True

    def heartbeat(self, owner: str) -> int:
        self.heartbeats += 1
        return sum(1 for held in self.leases.values() if held == owner)

    def release(self, session_id: str, owner: str) -> bool:
        if self.leases.get(session_id) != owner:
            return False
        del self.leases[session_id]
        return True

    def forget(self, session_id: str) -> None:
        self.forgotten.append(session_id)


class PickyStore(MemoryStore):
    """Refuses any save that holds the session `bad`, as a store would that cannot take one row."""

    def __init__(self) -> None:
        super().__init__()
        self.bad = ""
        self.groups: list[int] = []

    def save(self, *sessions: AgentSession) -> None:
        self.groups.append(len(sessions))
        if any(session.session_id == self.bad for session in sessions):
            raise StoreUnavailable(f"cannot save {self.bad}")
        super().save(*sessions)


class BrokenStore(MemoryStore):
    """Fails as no store should: not StoreUnavailable, once the session has a step."""

    def save(self, *sessions: AgentSession) -> None:
        if any(session.steps for session in sessions):
            raise RuntimeError("the store broke")
        super().save(*sessions)
