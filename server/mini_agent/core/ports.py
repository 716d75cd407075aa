"""The runtime's ports: everything outside the agent core it talks to, as small `typing.Protocol`s.

The daemon hands in the real adapters (model client, tool registry, SQLite store, the editor's
permission prompt); tests hand in fakes.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Protocol

from mini_agent.core.contracts import (
    LLMConfig,
    LLMResponse,
    Message,
    NoticeSink,
    Observation,
    TextSink,
    ToolCall,
    ToolSpec,
)
from mini_agent.core.session import AgentSession, Decision, SessionPage


class LLMClient(Protocol):
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
        """One model turn. `turn_mode` is the tool mode the turn's previous reply came in (None on a
        turn's first request): a model adapter that picks modes itself keeps a turn in one form.
        `answer_with`: words this turn's final answer must hold (the final check's left-out results);
        an adapter that can constrain the reply (json mode's grammar) makes this turn that answer.
        `leave_out`: per tool, optional arguments this turn's call may not set (the repair hints'); an
        adapter that can constrain the reply leaves them out of the call, so it takes the defaults.
        `rest`: tools this turn may not call (the repair hints': each failed twice since its result
        came); an adapter that can constrain the reply leaves them out of it.
        `answer_only`: the step budget's last turn (`windup`); an adapter that can constrain the reply
        makes it the final answer, without a call.
        `only`: per tool, per argument, the values this turn's call may give it (`repair.grounded`); an
        adapter that can constrain the reply holds the argument to them."""
        ...


class WindowProbe(Protocol):
    """Asks the model server how many tokens its context window holds; None when it does not say."""

    async def context_window(self, config: LLMConfig) -> int | None: ...


class ToolExecutor(Protocol):
    def list_tools(self) -> list[ToolSpec]: ...

    def get(self, name: str) -> ToolSpec | None: ...

    async def execute(self, call: ToolCall, *, session_id: str) -> Observation: ...


class SessionStore(Protocol):
    """Durable sessions. `save` is called at every checkpoint, with every session whose checkpoint
    fell in the same turn of the event loop: it writes them in one transaction (all or none), and of
    each only what changed; a store that cannot write raises `StoreUnavailable`. A lease keeps two
    daemons from stepping one session at once, and `heartbeat` keeps it fresh for daemons on other
    hosts, which can only judge it by age (`lease_stale_after` seconds). The runtime lets go of
    finished sessions; `forget` tells the store to drop its memory of one (not its rows)."""

    lease_stale_after: float

    def save(self, *sessions: AgentSession) -> None: ...

    def load(self, session_id: str) -> AgentSession | None: ...

    def is_current(self, session: AgentSession) -> bool: ...

    def acquire(self, session_id: str, owner: str) -> bool: ...

    def heartbeat(self, owner: str) -> int: ...

    def release(self, session_id: str, owner: str) -> bool: ...

    def forget(self, session_id: str) -> None: ...

    def list_sessions(self, status: str | None = None, limit: int = 50, offset: int = 0) -> SessionPage: ...

    def delete(self, session_id: str) -> bool: ...


class Approver(Protocol):
    """Asks a person about a tool call; None when nobody answered (the decision may come later)."""

    async def request_permission(
        self, session: AgentSession, call: ToolCall, spec: ToolSpec
    ) -> tuple[Decision, str | None] | None: ...
