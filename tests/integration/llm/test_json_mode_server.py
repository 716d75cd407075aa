"""JSON tool mode against the scripted HTTP model server: the turn schema in the request, the
refusal-and-retry path, the streamed thought, and replies that break the schema, through the client and
through the real daemon."""

from __future__ import annotations

import json
from collections.abc import AsyncIterator, Callable
from itertools import pairwise
from pathlib import Path
from typing import Any

import pytest
import pytest_asyncio
from mini_agent.cli.demo import ANSWER, TASK
from mini_agent.core.contracts import LLMConfig, Message, Role, ToolMode, ToolSpec
from mini_agent.llm import jsonmode
from mini_agent.llm.client import OpenAICompatibleClient
from mini_agent.scripted import ReplayServer

ADD = ToolSpec(
    name="add",
    description="Add two numbers.",
    input_schema={"type": "object", "properties": {"a": {"type": "number"}, "b": {"type": "number"}}},
)
HISTORY = (Message(Role.SYSTEM, "You are terse."), Message(Role.USER, "What is 2 + 3?"))


def turn(thought: str, tool: str | None = None, answer: str | None = None, **arguments: Any) -> str:
    action = {"final_answer": answer} if tool is None else {"tool": tool, "arguments": arguments}
    return json.dumps({"thought": thought, "action": action}, ensure_ascii=False)


# --- the thought scanner and the parser (pure) ---------------------------------------------------


# --- the client against the scripted server ------------------------------------------------------


@pytest_asyncio.fixture
async def client() -> AsyncIterator[OpenAICompatibleClient]:
    async with OpenAICompatibleClient(backoff_base=0.001, backoff_cap=0.01) as llm:
        yield llm


def config(server: ReplayServer, mode: ToolMode = "json", **changes: Any) -> LLMConfig:
    return LLMConfig(base_url=server.base_url, model="m", tool_mode=mode, **changes)


def forms(server: ReplayServer) -> list[str | None]:
    return [f["type"] if f else None for f in server.response_formats]


@pytest.mark.asyncio
@pytest.mark.parametrize("status", [500, 400, 422])
async def test_a_refused_json_schema_is_asked_again_as_json_object_and_remembered(
    client: OpenAICompatibleClient, status: int
) -> None:
    script = {
        "turns": [{"content": turn("adding", "add", a=2, b=3)}, {"content": turn("ok", answer="5")}],
        "refuse_formats": {"json_schema": status},
    }
    async with ReplayServer(script) as server:
        first = await client.generate(HISTORY, [ADD], config(server))
        second = await client.generate(HISTORY, [ADD], config(server))
    assert [e.status for e in server.exchanges] == [status, 200, 200]
    assert forms(server) == ["json_schema", "json_object", "json_object"]
    assert server.response_formats[1] == {"type": "json_object", "schema": jsonmode.turn_schema([ADD])}
    assert first.tool_mode == second.tool_mode == "json"
    assert first.tool_calls[0].arguments == {"a": 2, "b": 3} and second.final_answer == "5"


@pytest.mark.asyncio
async def test_a_500_not_naming_the_format_is_retried_as_it_was(client: OpenAICompatibleClient) -> None:
    turns = [{"status": 500, "error": "out of memory"}, {"content": turn("ok", answer="5")}]
    async with ReplayServer(turns) as server:
        response = await client.generate(HISTORY, [ADD], config(server))
    assert response.final_answer == "5"
    assert forms(server) == ["json_schema", "json_schema"]


@pytest.mark.asyncio
async def test_json_mode_gives_up_when_both_forms_are_refused(client: OpenAICompatibleClient) -> None:
    script = {"turns": [{"content": "unused"}], "refuse_formats": {"json_schema": 500, "json_object": 400}}
    async with ReplayServer(script) as server:
        with pytest.raises(Exception, match="HTTP 400") as caught:
            await client.generate(HISTORY, [ADD], config(server))
    assert type(caught.value).__name__ == "LLMError"
    assert forms(server) == ["json_schema", "json_object"]


@pytest.mark.asyncio
async def test_auto_learns_native_then_json_then_react(client: OpenAICompatibleClient) -> None:
    answer = {"content": turn("ok", answer="5")}
    json_only = {
        "turns": [answer],
        "repeat_last": True,
        "reject_tools": True,
        "refuse_formats": {"json_schema": 500},
    }
    async with ReplayServer(json_only) as server:
        first = await client.generate(HISTORY, [ADD], config(server, "auto"))
        second = await client.generate(HISTORY, [ADD], config(server, "auto"))
    assert first.tool_mode == second.tool_mode == "json" and second.final_answer == "5"
    assert ["tools" in body for body in server.requests] == [True, False, False, False]
    assert forms(server) == [None, "json_schema", "json_object", "json_object"]

    text_only = {
        "turns": [{"content": "Final Answer: 5"}],
        "repeat_last": True,
        "reject_tools": True,
        "refuse_formats": {"json_schema": 400, "json_object": 400},
    }
    async with ReplayServer(text_only) as server:
        first = await client.generate(HISTORY, [ADD], config(server, "auto"))
        second = await client.generate(HISTORY, [ADD], config(server, "auto"))
    assert first.tool_mode == second.tool_mode == "react" and second.final_answer == "5"
    assert forms(server) == [None, "json_schema", "json_object", None, None]


@pytest.mark.asyncio
@pytest.mark.parametrize("stream", [True, False])
async def test_only_the_thought_is_streamed_and_it_rejoins_to_the_thought(
    client: OpenAICompatibleClient, stream: bool
) -> None:
    chunks = [
        '{"thought": "caf',
        "\\u00",
        'e9 \\"x\\" \\ud83d',
        '\\ude00", "action": {"tool": "add", ',
        '"arguments": {"a": 2, "b": 3}}}',
    ]
    async with ReplayServer([{"chunks": chunks}]) as server:
        pieces: list[str] = []
        response = await client.generate(HISTORY, [ADD], config(server, stream=stream), pieces.append)
    assert response.thought == 'café "x" 😀' == "".join(pieces)
    assert response.content == "".join(chunks) and response.tool_calls[0].name == "add"
    if stream:
        assert pieces == ["caf", 'é "x" ', "😀"]  # the high surrogate waited for its pair


# --- the daemon, end to end ----------------------------------------------------------------------

SEED_TURNS = [
    {"content": turn("First the Python files.", "list_python_files", directory=".")},
    {"content": turn('Now count "schema.py".', "count_file_lines", path="schema.py", ignore_empty=True)},
    {"content": turn("It is file_path.", "count_file_lines", file_path="schema.py", ignore_empty=True)},
    {"content": turn("That is the count.", answer=ANSWER.format(count="{last_observation}"))},
]


def json_options(model: ReplayServer) -> dict[str, Any]:
    llm = {"baseUrl": model.base_url, "model": "replay", "toolMode": "json"}
    return {"llm": llm, "store": {"enabled": False}}


def thought_chunks(client: Any, session_id: str, step: int) -> str:
    return "".join(
        u["update"]["text"]
        for u in client.updates
        if u["sessionId"] == session_id and u["step"] == step and u["update"]["kind"] == "agent_thought_chunk"
    )


def non_empty_lines(path: Path) -> int:
    return sum(1 for line in path.read_text(encoding="utf-8").splitlines() if line.strip())


@pytest.mark.asyncio
async def test_seed_scenario_in_json_mode(workspace: Path, daemon_factory: Callable[..., Any]) -> None:
    """Each request carries the schema of every registered tool; arguments that break the tool's schema
    get the registry's error; the streamed thought is each step's thought; the history is append-only."""
    async with ReplayServer({"turns": SEED_TURNS, "refuse_formats": {"json_schema": 500}}) as model:
        client = await daemon_factory(json_options(model))
        registered = await client.request("agent/registerTool", {"path": "tools.py"})
        started = await client.request("agent/startSession", {"task": TASK})
        session_id = started["sessionId"]
        steps = [await client.request("agent/step", {"sessionId": session_id}) for _ in range(4)]

    expected_count = non_empty_lines(workspace / "schema.py")
    assert [s["toolMode"] for s in steps] == ["json"] * 4
    assert [s["toolCalls"][0]["name"] for s in steps[:3]] == ["list_python_files", *["count_file_lines"] * 2]
    assert steps[1]["observations"][0]["isError"] and "file_path" in steps[1]["observations"][0]["output"]
    assert steps[2]["observations"][0]["output"] == str(expected_count)
    assert steps[3]["finalAnswer"] == ANSWER.format(count=expected_count)
    assert steps[3]["stopReason"] == "end_turn"
    for step in steps:
        assert step["thought"] == thought_chunks(client, session_id, step["index"]) != ""
    assert steps[1]["thought"] == 'Now count "schema.py".'

    # refused once with llama-cpp-python's 500, then json_object for the rest of the session
    assert [e.status for e in model.exchanges] == [500, 200, 200, 200, 200]
    schema = jsonmode.turn_schema([])
    sent = [f for f in model.response_formats[1:] if f is not None]
    assert len(sent) == 4 and all(f["type"] == "json_object" for f in sent)
    refused = model.response_formats[0]
    assert refused is not None and refused["type"] == "json_schema"
    assert refused["json_schema"] == {"name": "agent_turn", "schema": sent[0]["schema"], "strict": False}
    branches = sent[0]["schema"]["properties"]["action"]["anyOf"]
    tools = {t["name"]: t["inputSchema"] for t in registered["tools"]}
    assert {b["properties"]["tool"]["const"]: b["properties"]["arguments"] for b in branches[:-1]} == tools
    assert branches[-1] == schema["properties"]["action"]["anyOf"][-1]
    system = model.requests[1]["messages"][0]["content"]
    assert all(f"### {name}" in system for name in tools) and '"final_answer"' in system

    # append-only: each request extends the one before it with the model's reply, byte for byte
    requests = [r["messages"] for r in model.requests[1:]]
    for (before, after), reply in zip(pairwise(requests), SEED_TURNS, strict=False):
        assert after[: len(before)] == before
        assert after[len(before)] == {"role": "assistant", "content": reply["content"]}
        assert after[len(before) + 1]["content"].startswith("Observation: ")
    assert all(e.cached_tokens > 0 for e in model.exchanges[2:])


@pytest.mark.asyncio
async def test_a_server_that_ignores_the_schema_gives_format_errors_the_model_repairs(
    daemon_factory: Callable[..., Any],
) -> None:
    turns = [
        {"content": "Sure! I will list the files with list_python_files."},
        {"content": '{"thought": "listing", "action": {"tool": "list_python_files"}}'},
        {"content": turn("listing", "list_python_files", directory=".")},
        {"content": turn("done", answer="Listed.")},
    ]
    async with ReplayServer(turns) as model:
        client = await daemon_factory(json_options(model))
        await client.request("agent/registerTool", {"path": "tools.py"})
        started = await client.request("agent/startSession", {"task": "List the Python files."})
        run = await client.request("agent/run", {"sessionId": started["sessionId"]})
        steps = (await client.request("agent/getSession", {"sessionId": started["sessionId"]}))["steps"]

    assert run["stopReason"] == "end_turn" and run["finalAnswer"] == "Listed." and run["error"] is None
    errors = [s["observations"][0] for s in steps[:2]]
    assert [e["toolCallId"] for e in errors] == ["format-0", "format-1"]
    assert all(e["isError"] for e in errors)
    assert "the reply is not a JSON object" in errors[0]["output"]
    assert "`action.arguments` for `list_python_files` must be a JSON object" in errors[1]["output"]
    assert not steps[2]["observations"][0]["isError"]
    # the model saw its own reply and the error, so it can repair
    repaired_request = model.requests[2]["messages"]
    assert repaired_request[-2] == {"role": "assistant", "content": turns[1]["content"]}
    assert repaired_request[-1]["content"] == "Observation: " + errors[1]["output"]


@pytest.mark.asyncio
async def test_auto_mode_takes_a_react_reply_to_a_json_request_as_react_and_stays_there(
    daemon_factory: Callable[..., Any],
) -> None:
    """A server that refuses `tools` and ignores `response_format`, with a model that writes ReAct: the
    json request's reply runs as the ReAct step it is, and the session goes on in react mode."""
    listing = 'Thought: I list them.\nAction: list_python_files\nAction Input: {"directory": "."}'
    turns = [
        {"content": listing + "\nObservation: (invented by the model)\nFinal Answer: invented"},
        {"content": "Thought: I have them.\nFinal Answer: Listed."},
    ]
    async with ReplayServer({"turns": turns, "reject_tools": True}) as model:
        options = {"llm": {"baseUrl": model.base_url, "model": "replay", "toolMode": "auto"}}
        client = await daemon_factory({**options, "store": {"enabled": False}})
        await client.request("agent/registerTool", {"path": "tools.py"})
        started = await client.request("agent/startSession", {"task": "List the Python files."})
        session_id = started["sessionId"]
        run = await client.request("agent/run", {"sessionId": session_id})
        steps = (await client.request("agent/getSession", {"sessionId": session_id}))["steps"]

    assert run["stopReason"] == "end_turn" and run["finalAnswer"] == "Listed." and run["error"] is None
    assert [s["toolMode"] for s in steps] == ["react", "react"]
    assert [c["name"] for c in steps[0]["toolCalls"]] == ["list_python_files"]
    observations = [o for s in steps for o in s["observations"]]
    assert [o["isError"] for o in observations] == [False]
    assert not any(o["toolCallId"].startswith("format-") for o in observations)
    assert "invented" not in steps[0]["thought"]
    # native refused, json asked once, then react with its stop strings; the history holds the cut reply
    assert [e.status for e in model.exchanges] == [400, 200, 200]
    assert forms(model) == [None, "json_schema", None] and "stop" in model.requests[2]
    assert model.requests[2]["messages"][-2] == {"role": "assistant", "content": listing}
    assert thought_chunks(client, session_id, 0) == listing
    said = [u["update"].get("message", "") for u in client.updates if u["update"]["kind"] == "status"]
    settled = [m for m in said if m.startswith("Auto tool mode")]
    assert len(settled) == 1 and "ignored `response_format`" in settled[0], said


@pytest.mark.asyncio
async def test_a_loaded_session_replays_the_thought_not_the_raw_json(
    daemon_factory: Callable[..., Any],
) -> None:
    turns = [
        {"content": turn("Listing first.", "list_python_files", directory=".")},
        {"content": turn("Done.", answer="ok")},
    ]
    async with ReplayServer(turns) as model:
        options = {"llm": {"baseUrl": model.base_url, "model": "replay", "toolMode": "json"}}
        live = await daemon_factory(options)
        await live.request("agent/registerTool", {"path": "tools.py"})
        started = await live.request("agent/startSession", {"task": "List the Python files."})
        session_id = started["sessionId"]
        await live.request("agent/run", {"sessionId": session_id})
        fresh = await daemon_factory(options)
        await fresh.request("agent/loadSession", {"sessionId": session_id})

    def thoughts(client: Any) -> list[str]:
        return [thought_chunks(client, session_id, step) for step in (0, 1)]

    assert thoughts(live) == ["Listing first.", "Done."] == thoughts(fresh)


@pytest.mark.asyncio
@pytest.mark.parametrize("repair_hints", [True, False])
async def test_an_optional_argument_that_failed_twice_is_left_out_of_the_next_grammar(
    workspace: Path, daemon_factory: Callable[..., Any], repair_hints: bool
) -> None:
    """Repair hints through the daemon: each failed call that set `directory` away from its default is
    told it may leave it out; after two, the next turn's schema cannot set it, so the call takes the
    default (the prompt's tool list stays as it was)."""
    made_up = [turn("look there", "list_python_files", directory=f"./workspace{n}") for n in range(2)]
    turns = [
        {"content": text}
        for text in [*made_up, turn("the root", "list_python_files"), turn("ok", answer="3")]
    ]
    async with ReplayServer({"turns": turns}) as model:
        options = json_options(model)
        options["llm"]["harness"] = {"repairHints": repair_hints}
        client = await daemon_factory(options)
        await client.request("agent/registerTool", {"path": "tools.py"})
        session_id = (await client.request("agent/startSession", {"task": "Which Python files are there?"}))[
            "sessionId"
        ]
        steps = [await client.request("agent/step", {"sessionId": session_id}) for _ in range(4)]

    outputs = [step["observations"][0]["output"] for step in steps[:3]]
    hint = 'Note: `directory` (default ".") is optional; leaving it out uses its default.'
    assert [hint in output for output in outputs[:2]] == [repair_hints] * 2
    assert "schema.py" in outputs[2] and steps[3]["finalAnswer"] == "3"

    def directory_settable(request: int) -> bool:
        branches = model.response_formats[request]["json_schema"]["schema"]["properties"]["action"]["anyOf"]
        lister = next(
            b for b in branches if b["properties"].get("tool", {}).get("const") == "list_python_files"
        )
        return "directory" in lister["properties"]["arguments"]["properties"]

    assert [directory_settable(n) for n in range(4)] == [True, True, not repair_hints, True]
    systems = {request["messages"][0]["content"] for request in model.requests}
    assert len(systems) == 1


@pytest.mark.asyncio
@pytest.mark.parametrize("repair_hints", [True, False])
async def test_a_tool_that_failed_twice_after_its_result_came_is_not_offered_by_the_next_grammar(
    workspace: Path, daemon_factory: Callable[..., Any], repair_hints: bool
) -> None:
    """The model has the file list, then makes up two folders for the same tool: the next turn's
    schema offers the other tool and the answer, not that one (the prompt's tool list unchanged)."""
    made_up = [turn("look there", "list_python_files", directory=f"./made_up{n}") for n in range(2)]
    turns = [
        {"content": text}
        for text in [
            turn("the root", "list_python_files"),
            *made_up,
            turn("count", "count_file_lines", file_path="schema.py"),
            turn("ok", answer="3 files; schema.py has 21 lines"),
        ]
    ]
    async with ReplayServer({"turns": turns}) as model:
        options = json_options(model)
        options["llm"]["harness"] = {"repairHints": repair_hints}
        client = await daemon_factory(options)
        await client.request("agent/registerTool", {"path": "tools.py"})
        task = "Which Python files are there, and how many lines has schema.py?"
        session_id = (await client.request("agent/startSession", {"task": task}))["sessionId"]
        steps = [await client.request("agent/step", {"sessionId": session_id}) for _ in range(5)]

    assert [step["observations"][0]["isError"] for step in steps[:4]] == [False, True, True, False]

    def offered(request: int) -> set[str]:
        branches = model.response_formats[request]["json_schema"]["schema"]["properties"]["action"]["anyOf"]
        return {b["properties"]["tool"]["const"] for b in branches if "tool" in b["properties"]}

    both = {"list_python_files", "count_file_lines"}
    assert [offered(n) for n in range(4)] == [
        both,
        both,
        both,
        {"count_file_lines"} if repair_hints else both,
    ]
    assert len({request["messages"][0]["content"] for request in model.requests}) == 1
