"""The context keeper: fits each model request of a session into the model's window.

It applies the pure rules of `budget.py` with what only the outside knows: the window (the session's
`llm.contextWindow`, else the model server's answer through `WindowProbe`, else the default, else what
a refusal said), and a summary of older turns, for which it makes one extra model request.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, replace

from mini_agent.core import budget
from mini_agent.core.budget import READER, Window
from mini_agent.core.contracts import (
    Compaction,
    ContextUse,
    LLMConfig,
    LLMError,
    Message,
    Observation,
    Role,
    SessionStatus,
    TokenUsage,
    ToolCall,
    ToolSpec,
)
from mini_agent.core.events import AgentEvent, StatusChanged
from mini_agent.core.ports import LLMClient, WindowProbe
from mini_agent.core.session import AgentSession, StepRecord


@dataclass(frozen=True, slots=True)
class Request:
    """One model request fitted to the window, and what the step records of it."""

    messages: list[Message]
    tools: list[ToolSpec]
    config: LLMConfig
    window: Window
    use: ContextUse
    compaction: Compaction | None


class ContextKeeper:
    def __init__(self, llm: LLMClient, probe: WindowProbe | None, emit: Callable[[AgentEvent], None]) -> None:
        self._llm = llm
        self._probe = probe
        self._emit = emit
        # windows a refusal named, by server, model and the window the options claimed then
        self._learned: dict[tuple[str, str, int | None], int] = {}

    async def window(self, config: LLMConfig) -> Window:
        size = self._learned.get(_key(config)) or config.context_window
        if size is None and self._probe is not None:
            size = await self._probe.context_window(config)
        return Window.of(size or budget.DEFAULT_WINDOW, config.max_tokens)

    def learn(self, config: LLMConfig, refusal: LLMError) -> None:
        """A refusal that named the window is believed over the options and the probe, until the options
        name another window (a larger one set to resume the session)."""
        if refusal.context_window:
            self._learned[_key(config)] = refusal.context_window

    async def prepare(self, session: AgentSession, index: int, config: LLMConfig, *, force: bool) -> Request:
        """The request for the next model turn; compacts older turns first when it would not fit (or,
        with `force`, because the server refused it: then the older turns are summarised)."""
        window = await self.window(config)
        history, reader = budget.view(session), budget.offers_reader(session)
        tools = _tools(session, reader)
        tokens = budget.measure(history, tools, session, reader)
        done: Compaction | None = None
        if force or tokens > window.prompt:
            after_tools = _tools(session, True)
            fixed = budget.tools_cost(after_tools)
            plan = budget.plan(session, history, fixed, window, refit=force)
            if plan is not None:
                wanted = plan.older and (force or not plan.enough)
                summary, usage = (
                    await self._summary(plan.older, config, window) if wanted else (None, TokenUsage())
                )
                done, history = budget.compact(plan, summary, history, fixed, tokens, usage)
                tools, reader, tokens = after_tools, True, done.after
                message = budget.describe(done, window)
                self._emit(StatusChanged(session.session_id, index, SessionStatus.RUNNING, message=message))
        use = ContextUse(len(history), reader, window.size, tokens)
        return Request(history, tools, replace(config, max_tokens=window.reply), window, use, done)

    async def _summary(
        self, older: tuple[Message, ...], config: LLMConfig, window: Window
    ) -> tuple[str | None, TokenUsage]:
        """The model's summary of the older turns and what it cost; None (digests only) when it could
        not write one."""
        room = window.prompt - budget.estimate(budget.SUMMARY_PROMPT) - 4 * budget.MESSAGE_OVERHEAD
        messages = [
            Message(Role.SYSTEM, budget.SUMMARY_PROMPT),
            Message(Role.USER, budget.transcript(older, room)),
        ]
        try:
            response = await self._llm.generate(messages, [], replace(config, max_tokens=window.reply))
        except LLMError:
            return None, TokenUsage()
        text = (response.final_answer or response.content).strip()
        return text or None, response.usage

    def fit(self, session: AgentSession, record: StepRecord, observation: Observation) -> Observation:
        if record.context is None:
            return observation
        return budget.fit(observation, Window.of(record.context.size, session.config.llm.max_tokens))

    def serves(self, session: AgentSession, call: ToolCall) -> bool:
        return call.name == READER and budget.offers_reader(session)

    def read(self, session: AgentSession, record: StepRecord, call: ToolCall) -> Observation:
        """A page of a stored tool result, for the model's `read_observation` call."""
        args = call.arguments
        target, offset, length = args.get("call_id"), args.get("offset", 0), args.get("length")
        size = record.context.size if record.context is not None else budget.DEFAULT_WINDOW
        window = Window.of(size, session.config.llm.max_tokens)
        found = budget.find_observation(session, target) if isinstance(target, str) else None
        if found is None:
            known = [
                obs.call_id for step in session.steps for obs in step.observations if obs.shown is not None
            ]
            text = f"No tool result has call_id {target!r}. Results cut for the window: {known}."
            return Observation(call.id, READER, text, is_error=True)
        if not isinstance(offset, int) or isinstance(offset, bool):
            offset = 0
        if not isinstance(length, int) or isinstance(length, bool):
            length = budget.page_chars(window)
        return budget.read_page(found, offset, length, call.id, window)


def find_observation(session: AgentSession, call_id: str) -> Observation | None:
    return next((obs for step in session.steps for obs in step.observations if obs.call_id == call_id), None)


def _key(config: LLMConfig) -> tuple[str, str, int | None]:
    return config.base_url, config.model, config.context_window


def _tools(session: AgentSession, reader: bool) -> list[ToolSpec]:
    return [*session.tools, budget.reader_spec()] if reader else list(session.tools)
