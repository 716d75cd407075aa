"""The context budget's parts without a server: the token estimate, the ReAct allowance, recognising a
length refusal, and a compaction and a cut result surviving the store."""

from __future__ import annotations

from pathlib import Path

import pytest
from mini_agent.core.budget import MESSAGE_OVERHEAD, estimate, tools_cost
from mini_agent.core.contracts import Message, Role, ToolSpec
from mini_agent.llm import reactprompt
from mini_agent.llm.window import overflow
from mini_agent.scripted.text import tokens_of

from ...support.corpus import corpus, under


def test_the_estimate_is_never_under_the_scripted_servers_tokenizer() -> None:
    assert len(corpus()) > 50
    assert under(lambda text: len(tokens_of(text))) == []


def test_the_react_allowance_covers_the_instructions_a_text_mode_request_adds() -> None:
    schema = {"type": "object", "properties": {"path": {"type": "string"}}, "required": ["path"]}
    for count in (1, 2, 8):
        tools = [ToolSpec(f"tool_{i}", "Reads a file of the workspace.", schema) for i in range(count)]
        base = "You are a careful assistant."
        added = estimate(reactprompt.build_system_prompt(base, tools)) - estimate(base)
        assert added + MESSAGE_OVERHEAD <= tools_cost(tools)


@pytest.mark.parametrize(
    ("status", "body", "window"),
    [
        (
            400,
            "This model's maximum context length is 2048 tokens. However, you requested 2100 tokens "
            "(1600 in the messages, 500 in the completion).",
            2048,
        ),  # vLLM
        (400, "Requested tokens (1200) exceed context window of 1024", 1024),  # llama-cpp-python
        (
            400,
            '{"error":{"code":400,"message":"the request exceeds the available context size, try increasing '
            'it","type":"exceed_context_size_error","n_prompt_tokens":5000,"n_ctx":4096}}',
            4096,
        ),  # llama.cpp
        (400, "prompt is too long: 210000 tokens > 200000 maximum", None),
    ],
)
def test_a_length_refusal_is_recognised_with_the_window_it_names(
    status: int, body: str, window: int | None
) -> None:
    assert overflow(status, body) == (True, window)


def test_other_errors_are_not_length_refusals() -> None:
    assert overflow(400, "this server does not support tools: remove the `tools` field") == (False, None)
    assert overflow(429, "maximum context length is 2048 tokens") == (False, None)


def test_a_compaction_and_a_cut_result_survive_the_store(tmp_path: Path) -> None:
    """The model's view is rebuilt from the store alone: the compaction rides on its step's record."""
    from mini_agent.core import budget
    from mini_agent.core.contracts import Compaction, ContextUse, Observation, TokenUsage, ToolCall
    from mini_agent.core.session import AgentConfig, AgentSession, StepRecord
    from mini_agent.store.sqlite import SqliteStore

    session = AgentSession("sess_ctx", "task", AgentConfig(), [])
    session.messages += [Message(Role.SYSTEM, "system"), Message(Role.USER, "task")]
    call = ToolCall("c1", "big", {})
    shown = budget.cut("x" * 5000, 5000, "c1", budget.Window.of(1024, 256))
    observation = Observation("c1", "big", "x" * 5000, shown=shown)
    digest = budget.digest(Message(Role.TOOL, shown, tool_call_id="c1", name="big"), 5000)
    session.steps.append(
        StepRecord(
            0,
            tool_calls=[call],
            observations=[observation],
            usage=TokenUsage(300, 20),
            context=ContextUse(2, False, 1024, 700),
            compaction=Compaction(2, (digest,), digested=1, before=900, after=400),
        )
    )
    session.messages += [
        Message(Role.ASSISTANT, "a", tool_calls=(call,)),
        Message(Role.TOOL, shown, tool_call_id="c1", name="big"),
    ]
    with SqliteStore(tmp_path / "s.db") as store:
        store.save(session)
    with SqliteStore(tmp_path / "s.db") as store:
        loaded = store.load("sess_ctx")
    assert loaded is not None and loaded.steps == session.steps
    assert budget.view(loaded) == budget.view(session) and budget.view(loaded)[2] == digest
    assert budget.find_observation(loaded, "c1") == observation
