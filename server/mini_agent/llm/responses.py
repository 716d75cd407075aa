"""A completion as the `LLMResponse` the runtime reads: a text mode's parsed turn, native mode's calls
or answer, and the model's refusal (whatever mode asked) as its final answer."""

from __future__ import annotations

from mini_agent.core.contracts import LLMResponse, ToolCall, ToolMode
from mini_agent.llm import react
from mini_agent.llm.replies import Completion

FILTERED = "The model server withheld the reply (finish_reason: content_filter)."


def text_response(done: Completion, turn: react.ReactTurn, mode: ToolMode) -> LLMResponse:
    refused = refused_response(done, mode)
    if refused is not None:
        return refused
    return LLMResponse(
        content=done.text,
        thought=turn.thought,
        tool_calls=(turn.call,) if turn.call is not None else (),
        final_answer=turn.final_answer,
        format_error=turn.format_error,
        usage=done.usage,
        finish_reason=done.finish_reason,
        tool_mode=mode,
    )


def native_response(
    done: Completion,
    *,
    thought: str = "",
    calls: tuple[ToolCall, ...] = (),
    final_answer: str | None = None,
    format_error: str | None = None,
) -> LLMResponse:
    refused = refused_response(done, "native")
    if refused is not None:
        return refused
    return LLMResponse(
        content=done.text,
        thought=thought,
        tool_calls=calls,
        final_answer=final_answer,
        format_error=format_error,
        usage=done.usage,
        finish_reason=done.finish_reason,
        tool_mode="native",
    )


def refused_response(done: Completion, mode: ToolMode) -> LLMResponse | None:
    """A reply the server marks as the model's refusal (OpenAI's `refusal`, or finish_reason
    `content_filter` as OpenAI, Azure and vLLM's guardrails send it): its words are the final answer,
    whatever mode asked; None for any other reply."""
    if done.refusal is None and done.finish_reason != "content_filter":
        return None
    words = done.refusal or done.text.strip() or FILTERED
    return LLMResponse(
        content=done.text,
        final_answer=words,
        usage=done.usage,
        finish_reason=done.finish_reason,
        tool_mode=mode,
        refusal=words,
    )
