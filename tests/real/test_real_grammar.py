"""The json mode grammars that leave out spent calls (`llm.harness.pruneRepeats`) and that make the
answer after the final check hold the left-out words (`llm.harness.finalCheck`), compiled by a real
llama.cpp: the patterns it writes must be ones llama-cpp-python's compiler turns into a grammar its
parser takes. A pattern it refuses is worse than none: llama-cpp-python 0.3.36 then samples with a null
grammar and the whole server dies (SIGSEGV), so this is checked on the real server, not on paper.

Set-up: `scripts/real-model.sh`; without it the test fails rather than skips.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Iterator

import pytest
from mini_agent.core.contracts import LLMConfig, Message, Role, ToolCall, ToolSpec
from mini_agent.llm import narrowing
from mini_agent.llm.client import OpenAICompatibleClient

from ..support.llama import MODEL_ALIAS, REQUEST_TIMEOUT, LlamaServer, start_llama, within

pytestmark = pytest.mark.real_model

OPEN = ToolSpec(
    "open_file",
    "Open a file and return its text.",
    {"type": "object", "properties": {"path": {"type": "string", "default": "."}}},
)
NOW = ToolSpec("now", "The time.", {"type": "object", "properties": {}})
# every character a pruned value may hold, the ones a regex escapes included
SPENT = [".", "a b.txt", "x-y@z:1+2", "dir/sub_1", "-", "src"]


@pytest.fixture(scope="module")
def llama(tmp_path_factory: pytest.TempPathFactory) -> Iterator[LlamaServer]:
    server = start_llama(tmp_path_factory.mktemp("llama-grammar"), interrupt_requests=False)
    yield server
    server.stop()


@pytest.mark.asyncio
async def test_the_grammar_without_spent_calls_compiles_on_llama_cpp_and_holds(llama: LlamaServer) -> None:
    calls = [ToolCall(f"c{n}", "open_file", {"path": path}) for n, path in enumerate(SPENT)]
    history = [
        Message(Role.SYSTEM, "You open files."),
        Message(Role.USER, "Open the file a b.txt again, then tell me the time."),
        Message(Role.ASSISTANT, "opening", tool_calls=(*calls, ToolCall("t", "now", {}))),
        *(Message(Role.TOOL, "text", tool_call_id=call.id) for call in [*calls, ToolCall("t", "now", {})]),
    ]
    offered = narrowing.unspent([OPEN, NOW], history)
    assert [tool.name for tool in offered] == ["open_file"] and "pattern" in str(offered[0].input_schema)
    config = LLMConfig(base_url=llama.base_url, model=MODEL_ALIAS, tool_mode="json", max_tokens=48,
                       timeout_sec=REQUEST_TIMEOUT)
    async with OpenAICompatibleClient() as client:
        for seed in range(3):
            seeded = dataclasses.replace(config, seed=seed)
            reply = await within(client.generate(history, [OPEN, NOW], seeded))
            assert reply.format_error is None or "cut off" in reply.format_error, reply.content
            for call in reply.tool_calls:
                assert call.name == "open_file" and call.arguments.get("path") not in SPENT, reply.content
        # the turn after the final check: the answer, holding the left-out words within the gap
        holding = dataclasses.replace(config, max_tokens=200, seed=0)
        reply = await within(client.generate(history, [OPEN, NOW], holding, answer_with=("a.txt", "12:00")))
        assert reply.tool_calls == (), reply.content
        assert reply.final_answer is not None or reply.format_error, reply.content
        if reply.final_answer is not None:
            assert reply.final_answer.index("a.txt") < reply.final_answer.index("12:00"), reply.content
    log = llama.log.read_text(errors="replace")
    assert "failed to parse grammar" not in log and "error parsing grammar" not in log
    assert llama.process.poll() is None, llama.log_tail()


COUNT = ToolSpec(
    "count_lines",
    "Count the lines of a file.",
    {
        "type": "object",
        "properties": {"path": {"type": "string"}, "ignore_empty": {"type": "boolean", "default": True}},
        "required": ["path"],
        "additionalProperties": False,
    },
)


@pytest.mark.asyncio
async def test_a_spent_call_of_a_tool_with_more_arguments_compiles_and_is_not_written_again(
    llama: LlamaServer,
) -> None:
    spent = ToolCall("c", "count_lines", {"path": "a.txt"})
    history = [
        Message(Role.SYSTEM, "You count lines."),
        Message(Role.USER, "Count the lines of a.txt, then count them again."),
        Message(Role.ASSISTANT, "counting", tool_calls=(spent,)),
        Message(Role.TOOL, "12", tool_call_id="c"),
    ]
    (offered,) = narrowing.unspent([COUNT], history)
    assert "anyOf" in offered.input_schema
    config = LLMConfig(base_url=llama.base_url, model=MODEL_ALIAS, tool_mode="json", max_tokens=64,
                       timeout_sec=REQUEST_TIMEOUT)
    async with OpenAICompatibleClient() as client:
        for seed in range(3):
            reply = await within(client.generate(history, [COUNT], dataclasses.replace(config, seed=seed)))
            assert reply.format_error is None or "cut off" in reply.format_error, reply.content
            for call in reply.tool_calls:
                repeated = call.arguments.get("path") == "a.txt" and call.arguments.get("ignore_empty", True)
                assert not repeated, reply.content
    log = llama.log.read_text(errors="replace")
    assert "failed to parse grammar" not in log and "error parsing grammar" not in log
    assert llama.process.poll() is None, llama.log_tail()


@pytest.mark.asyncio
async def test_a_grounded_argument_compiles_and_takes_only_a_value_the_turn_has_seen(
    llama: LlamaServer,
) -> None:
    """`groundedValues`: after a made-up path, the argument is an enum of the paths seen (a spent one
    left out of it), and the server's grammar holds the call to them."""
    listed = ToolCall("l", "list_files", {})
    made_up = ToolCall("m", "count_lines", {"path": "your-file.txt"})
    spent = ToolCall("s", "count_lines", {"path": "a b.txt"})
    history = [
        Message(Role.SYSTEM, "You count lines."),
        Message(Role.USER, "Count the lines of every file."),
        Message(Role.ASSISTANT, "listing", tool_calls=(listed,)),
        Message(Role.TOOL, '["a b.txt", "dir/x-y.md", "notes_1.txt"]', tool_call_id="l"),
        Message(Role.ASSISTANT, "counting", tool_calls=(made_up,)),
        Message(Role.TOOL, "no file named 'your-file.txt'", tool_call_id="m"),
        Message(Role.ASSISTANT, "counting", tool_calls=(spent,)),
        Message(Role.TOOL, "12", tool_call_id="s"),
    ]
    only = {"count_lines": {"path": ("a b.txt", "dir/x-y.md", "notes_1.txt")}}
    config = LLMConfig(base_url=llama.base_url, model=MODEL_ALIAS, tool_mode="json", max_tokens=64,
                       timeout_sec=REQUEST_TIMEOUT)
    async with OpenAICompatibleClient() as client:
        for seed in range(3):
            reply = await within(
                client.generate(history, [COUNT], dataclasses.replace(config, seed=seed), only=only)
            )
            assert reply.format_error is None or "cut off" in reply.format_error, reply.content
            for call in reply.tool_calls:
                path, again = call.arguments.get("path"), call.arguments.get("ignore_empty", True)
                fresh = path in ("dir/x-y.md", "notes_1.txt") or (path == "a b.txt" and not again)
                assert fresh, reply.content
    log = llama.log.read_text(errors="replace")
    assert "failed to parse grammar" not in log and "error parsing grammar" not in log
    assert llama.process.poll() is None, llama.log_tail()
