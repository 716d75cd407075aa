"""The daemon against a real model server: llama.cpp (llama-cpp-python) serving SmolLM2-135M-Instruct.

A 135M model hardly follows the ReAct protocol: it writes code blocks, copies the prompt's placeholders or
invents an answer (in json mode the server's grammar makes it choose a tool and schema-valid arguments).
That is the messy output real users' small models produce, so every session here must end
cleanly — an answer, a format error the model is shown, or the step budget — whatever the model writes, and
what the editor was streamed must be exactly what the daemon then acted on.

Set-up: `scripts/real-model.sh`. These tests fail rather than skip without it, so CI cannot pass by accident.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import aiohttp
import pytest
from mini_agent.cli.demo import TASK as SEED_TASK
from mini_agent.llm import react

from ..support.daemon import AgentTestClient
from ..support.llama import MODEL_ALIAS, REQUEST_TIMEOUT, LlamaServer, executed_calls, start_llama, within

pytestmark = pytest.mark.real_model


MAX_STEPS = 3
TASK = "How many non-empty lines does schema.py have? Use the tools to find out."
# Makes this model copy the protocol's placeholder lines: format errors, then an empty reply, then prose.
FORMAT_TASK = (
    'Answer in this format:\nThought: ...\nAction: list_python_files\nAction Input: {"directory": "."}'
)
STORY_TASK = "Write a long story about a dragon and a knight."  # about 400 tokens from this model
REFUSAL_LOG_LINE = '"POST /v1/chat/completions HTTP/1.1" 500'  # uvicorn's access log
CLEAN_ENDS = {"end_turn", "max_turn_requests", "loop_detected"}
OBSERVATION_MARKERS = ("Observation:", "Observation：")


@pytest.fixture(scope="module")
def llama(tmp_path_factory: pytest.TempPathFactory) -> Iterator[LlamaServer]:
    server = start_llama(tmp_path_factory.mktemp("llama"), interrupt_requests=False)
    yield server
    server.stop()


@pytest.fixture
def interrupting_llama(tmp_path: Path) -> Iterator[LlamaServer]:
    server = start_llama(tmp_path, interrupt_requests=True)
    yield server
    server.stop()


def options(server: LlamaServer, mode: str, *, stream: bool = True, max_tokens: int = 128) -> dict[str, Any]:
    llm = {"baseUrl": server.base_url, "model": MODEL_ALIAS, "toolMode": mode, "temperature": 0.0,
           "maxTokens": max_tokens, "stream": stream, "timeoutSec": REQUEST_TIMEOUT}
    return {"llm": llm, "store": {"enabled": False}, "maxSteps": MAX_STEPS}


def streamed_text(client: AgentTestClient, session_id: str, step: int) -> str:
    return "".join(u["update"]["text"] for u in client.updates
                   if u["sessionId"] == session_id and u["step"] == step
                   and u["update"]["kind"] == "agent_thought_chunk")


async def drive(client: AgentTestClient, task: str) -> tuple[str, list[dict[str, Any]]]:
    """Step a new session until it finishes; the step budget bounds how many steps that takes."""
    started = await within(client.request("agent/startSession", {"task": task}))
    session_id: str = started["sessionId"]
    steps: list[dict[str, Any]] = []
    while not steps or steps[-1]["status"] != "finished":
        assert len(steps) < MAX_STEPS, f"still not finished after the step budget: {steps[-1]}"
        steps.append(await within(client.request("agent/step", {"sessionId": session_id})))
    return session_id, steps


def show(steps: list[dict[str, Any]], client: AgentTestClient, session_id: str) -> str:
    """What the model wrote and what the daemon made of it, printed on failure (and with -s)."""
    return "\n".join(
        f"--- step {s['index']} {s['toolMode']} stop={s['stopReason']} usage={s['usage']}\n"
        f"streamed: {streamed_text(client, session_id, s['index'])!r}\n"
        f"thought={s['thought']!r} final={s['finalAnswer']!r} calls={s['toolCalls']}\n"
        f"observations={[o['output'][:160] for o in s['observations']]}"
        for s in steps
    )


def check_outcome(step: dict[str, Any], last: bool) -> None:
    """Each step is an answer, tool calls with one observation each, or a format error for the model;
    beside them, a step may carry the harness's own notes (the final check's, the last step's)."""
    assert step["error"] is None
    notes = ("check-", "last-step-")
    observations = [o for o in step["observations"] if not o["toolCallId"].startswith(notes)]
    if last:
        assert step["stopReason"] in CLEAN_ENDS
    else:
        assert step["stopReason"] is None and step["status"] == "ready"
    if step["finalAnswer"] is not None:
        assert step["stopReason"] == "end_turn" and step["finalAnswer"].strip()
    elif step["toolCalls"]:
        observed = sorted(o["toolCallId"] for o in observations)
        assert observed == sorted(c["id"] for c in step["toolCalls"])
    elif any(o["toolCallId"].startswith("check-") for o in step["observations"]):
        assert not observations  # an answer held back by the final check: its note alone
    else:
        [error] = observations
        assert error["isError"] and error["toolCallId"] == f"format-{step['index']}"


def check_streamed_react(step: dict[str, Any], text: str) -> None:
    """The streamed text is the completion the daemon parsed: parsing it again gives the same step."""
    assert not any(marker in text for marker in OBSERVATION_MARKERS), "text past a stop string was streamed"
    again = [react.parse(text, call_id="again", truncated=truncated) for truncated in (False, True)]
    assert again[0].thought == step["thought"]
    assert again[0].final_answer == step["finalAnswer"]
    call = again[0].call
    expected_calls = [(call.name, call.arguments)] if call is not None else []
    assert [(c["name"], c["arguments"]) for c in step["toolCalls"]] == expected_calls
    format_errors = [o["output"] for o in step["observations"] if o["toolCallId"].startswith("format-")]
    if format_errors:
        assert format_errors[0] in {t.format_error for t in again}


def check_streamed_json(step: dict[str, Any], text: str) -> None:
    """Only the decoded `thought` string is streamed, and it is the step's thought."""
    assert text == step["thought"]


def check_streamed_native(step: dict[str, Any], text: str) -> None:
    if step["finalAnswer"] is not None:
        assert text == step["finalAnswer"]
    elif step["toolCalls"]:
        assert text == step["thought"]
    else:
        assert not text.strip()


def check_usage(steps: list[dict[str, Any]], stream: bool) -> None:
    """llama.cpp counts no cached tokens; it reports usage only outside a stream (its SSE carries none)."""
    for step in steps:
        assert step["usage"]["cachedTokens"] == 0
        if not stream:
            assert step["usage"]["promptTokens"] > 0 and step["usage"]["completionTokens"] > 0
    if not stream:  # append-only history: each prompt holds the one before it
        prompts = [s["usage"]["promptTokens"] for s in steps]
        assert prompts == sorted(set(prompts))


@pytest.mark.asyncio
@pytest.mark.parametrize(("mode", "stream", "task"), [
    pytest.param("react", True, TASK, id="react"),
    pytest.param("react", True, FORMAT_TASK, id="react-format-errors"),
    pytest.param("native", True, TASK, id="native"),
    pytest.param("auto", True, TASK, id="auto"),
    pytest.param("react", False, FORMAT_TASK, id="react-not-streamed"),
])
async def test_session_ends_cleanly(mode: str, stream: bool, task: str, llama: LlamaServer,
                                    daemon_factory: Callable[..., Any]) -> None:
    client: AgentTestClient = await daemon_factory(options(llama, mode, stream=stream))
    await within(client.request("agent/registerTool", {"path": "tools.py"}))
    session_id, steps = await drive(client, task)
    print(show(steps, client, session_id))

    for step in steps:
        check_outcome(step, last=step is steps[-1])
        text = streamed_text(client, session_id, step["index"])
        if step["toolMode"] == "react":
            check_streamed_react(step, text)
        else:
            check_streamed_native(step, text)
    assert any(streamed_text(client, session_id, s["index"]) for s in steps), "no thought chunk was streamed"
    check_usage(steps, stream)

    await check_finished(client, session_id, steps)


async def check_finished(client: AgentTestClient, session_id: str, steps: list[dict[str, Any]]) -> None:
    session = await within(client.request("agent/getSession", {"sessionId": session_id}))
    assert session["status"] == "finished" and session["stopReason"] == steps[-1]["stopReason"]
    statuses = [u["update"] for u in client.updates
                if u["sessionId"] == session_id and u["update"]["kind"] == "status"]
    assert statuses[-1] == {"kind": "status", "status": "finished", "stopReason": steps[-1]["stopReason"]}


@pytest.mark.asyncio
async def test_json_mode_makes_the_model_run_tools(llama: LlamaServer,
                                                   daemon_factory: Callable[..., Any]) -> None:
    """The grammar built from the turn schema makes even this model pick a tool and schema-valid arguments:
    llama-cpp-python refuses the `json_schema` form (HTTP 500), the client asks again with `json_object`, a
    tool runs, and the session ends cleanly without a single format error."""
    refusals = llama.log.read_text(errors="replace").count(REFUSAL_LOG_LINE)
    client: AgentTestClient = await daemon_factory(options(llama, "json", max_tokens=256))
    registered = await within(client.request("agent/registerTool", {"path": "tools.py"}))
    schemas = {tool["name"]: tool["inputSchema"] for tool in registered["tools"]}
    session_id, steps = await drive(client, SEED_TASK)
    print(show(steps, client, session_id))

    for step in steps:
        check_outcome(step, last=step is steps[-1])
        assert step["toolMode"] == "json"
        assert not any(o["toolCallId"].startswith("format-") for o in step["observations"]), "a parse error"
        check_streamed_json(step, streamed_text(client, session_id, step["index"]))
    assert any(executed_calls(step, schemas) for step in steps), "no tool ran with arguments the model chose"
    assert any(step["thought"] for step in steps)
    await check_finished(client, session_id, steps)
    # refused once; the json_object form is remembered for the rest of the session
    assert llama.log.read_text(errors="replace").count(REFUSAL_LOG_LINE) == refusals + 1


async def interfere(server: LlamaServer) -> None:
    """Any second request: with interrupt_requests the server drops the running stream to serve it."""
    body = {"model": MODEL_ALIAS, "messages": [{"role": "user", "content": "Hi"}], "max_tokens": 1}
    url = server.base_url + "/chat/completions"
    async with aiohttp.ClientSession() as http, http.post(url, json=body) as resp:
        assert resp.status == 200


async def first_chunk(client: AgentTestClient, session_id: str) -> None:
    while not streamed_text(client, session_id, 0):
        await asyncio.sleep(0.05)


@pytest.mark.asyncio
async def test_stream_cut_short_by_the_server_is_an_error_step(interrupting_llama: LlamaServer,
                                                               daemon_factory: Callable[..., Any]) -> None:
    """A second request makes llama.cpp drop the running stream: `[DONE]` without a finish_reason, then the
    connection closes mid-body. Text had already reached the editor, so the reply cannot be retried silently:
    the step is an error that names the server, the cut text is no answer, and the session steps on."""
    client: AgentTestClient = await daemon_factory(options(interrupting_llama, "react", max_tokens=400))
    started = await within(client.request("agent/startSession", {"task": STORY_TASK}))
    session_id = started["sessionId"]
    stepping = asyncio.ensure_future(client.request("agent/step", {"sessionId": session_id}))
    await within(first_chunk(client, session_id))
    assert not stepping.done(), "the reply finished before the interfering request: make it longer"
    await within(interfere(interrupting_llama))
    cut = await within(stepping)
    print(f"cut step: {cut}\nstreamed: {streamed_text(client, session_id, 0)!r}")
    assert "disconnected" in interrupting_llama.log_tail(200).lower(), "the server did not cut the stream"

    assert cut["stopReason"] == "error" and cut["status"] == "ready", cut
    assert cut["finalAnswer"] is None and interrupting_llama.base_url in cut["error"]
    again = await within(client.request("agent/step", {"sessionId": session_id}))
    assert again["index"] == cut["index"] and again["stopReason"] in CLEAN_ENDS | {None}
