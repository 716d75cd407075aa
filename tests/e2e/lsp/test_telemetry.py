"""Traces of real runs read back from a real Arize Phoenix: the seed scenario through the LSP door (a
client's traceparent parenting it), a turn through the ACP door with `mini-agent mcp` as its MCP tool
source (the MCP server's own span joined to the trace), the stored session exported again with
`mini-agent sessions export --otlp`, and a daemon with no endpoint that loads nothing of OpenTelemetry."""

from __future__ import annotations

import asyncio
import json
import os
import secrets
import subprocess
import sys
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from acp.schema import EnvVariable, McpServerStdio
from mini_agent.cli.demo import SCRIPT as SEED_SCRIPT
from mini_agent.cli.demo import TASK
from mini_agent.scripted import ReplayServer

from ...support.acp import acp_agent, text, workspace_config
from ...support.daemon import daemon_env
from ...support.phoenix import Phoenix, start_phoenix
from ...support.raw import RawDaemon

SPANS_TIMEOUT_SEC = 60.0  # spans leave in batches (OTEL_BSP_SCHEDULE_DELAY below) and Phoenix stores them
Span = dict[str, Any]


@pytest.fixture(scope="session")
def phoenix(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Phoenix]:
    server = start_phoenix(tmp_path_factory.mktemp("phoenix"))
    yield server
    server.process.terminate()
    server.process.wait(timeout=30)


def traced(monkeypatch: pytest.MonkeyPatch, phoenix: Phoenix, *, capture: bool = False) -> str:
    """Every process started from now on sends its spans to `phoenix`, into a project of its own."""
    project = f"test-{secrets.token_hex(4)}"
    monkeypatch.setenv("OTEL_EXPORTER_OTLP_ENDPOINT", phoenix.url)
    monkeypatch.setenv("OTEL_BSP_SCHEDULE_DELAY", "100")
    monkeypatch.setenv("OTEL_RESOURCE_ATTRIBUTES", f"openinference.project.name={project}")
    monkeypatch.setenv("OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT", "true" if capture else "false")
    return project


async def spans_of(phoenix: Phoenix, project: str, ready: Callable[[list[Span]], bool]) -> list[Span]:
    found: list[Span] = []

    def check() -> bool:
        found[:] = phoenix.spans(project)
        return ready(found)

    async with asyncio.timeout(SPANS_TIMEOUT_SEC):
        while not await asyncio.to_thread(check):
            await asyncio.sleep(0.2)
    return found


def named(spans: list[Span], prefix: str) -> list[Span]:
    return sorted((s for s in spans if s["name"].startswith(prefix)), key=lambda s: s["start_time"])


def children(spans: list[Span], parent: Span) -> list[Span]:
    mine = [s for s in spans if s["parent_id"] == parent["context"]["span_id"]]
    return sorted(mine, key=lambda s: s["start_time"])


def attrs(span: Span) -> dict[str, Any]:
    """Phoenix gives attributes flat (`gen_ai.tool.name`) or nested by dots; either way, flat here."""
    out: dict[str, Any] = {}

    def walk(prefix: str, value: Any) -> None:
        if isinstance(value, dict):
            for key, item in value.items():
                walk(f"{prefix}.{key}" if prefix else key, item)
        else:
            out[prefix] = value

    walk("", span["attributes"])
    return out


SAME = (  # what the live run and the export of its stored session agree on, span by span
    "gen_ai.operation.name", "gen_ai.conversation.id", "gen_ai.tool.name", "gen_ai.tool.call.id",
    "gen_ai.tool.type", "gen_ai.request.model", "gen_ai.response.finish_reasons",
    "gen_ai.usage.input_tokens", "gen_ai.usage.output_tokens", "gen_ai.response.time_to_first_chunk",
    "error.type", "mini_agent.stop_reason",
)


def shape(spans: list[Span]) -> list[Any]:
    """Each agent span and its children in order: name, status and the attributes in SAME."""

    def one(span: Span) -> tuple[str, str, dict[str, Any]]:
        return span["name"], span["status_code"], {k: v for k, v in attrs(span).items() if k in SAME}

    return [(one(agent), [one(s) for s in children(spans, agent)]) for agent in named(spans, "invoke_agent")]


@pytest.mark.asyncio
async def test_the_seed_scenario_as_a_trace_and_its_export(
    workspace: Path, daemon_factory: Callable[..., Any], phoenix: Phoenix, monkeypatch: pytest.MonkeyPatch
) -> None:
    project = traced(monkeypatch, phoenix)
    trace_id, parent_id = secrets.token_hex(16), secrets.token_hex(8)
    async with ReplayServer(SEED_SCRIPT) as model:
        client = await daemon_factory({"llm": {"baseUrl": model.base_url, "model": "replay"}})
        await client.request("agent/registerTool", {"path": "tools.py"})
        session_id = (await client.request("agent/startSession", {"task": TASK}))["sessionId"]
        meta = {"traceparent": f"00-{trace_id}-{parent_id}-01"}
        result = await client.request("agent/run", {"sessionId": session_id, "_meta": meta})
        assert result["stopReason"] == "end_turn"
        spans = await spans_of(phoenix, project, lambda found: len(found) >= 8)

    [agent] = named(spans, "invoke_agent")
    assert agent["context"]["trace_id"] == trace_id and agent["parent_id"] == parent_id  # the client's
    assert {s["context"]["trace_id"] for s in spans} == {trace_id}  # one trace for the turn
    top = attrs(agent)
    assert top["gen_ai.operation.name"] == "invoke_agent" and top["gen_ai.agent.name"] == "mini-agent"
    assert top["gen_ai.conversation.id"] == session_id and top["mini_agent.stop_reason"] == "end_turn"
    kids = children(spans, agent)
    assert [s["name"] for s in kids] == [
        "chat replay",
        "execute_tool list_python_files",
        "chat replay",
        "execute_tool count_file_lines",
        "chat replay",
        "execute_tool count_file_lines",
        "chat replay",
    ]
    chat = attrs(kids[0])
    assert chat["gen_ai.operation.name"] == "chat" and chat["gen_ai.provider.name"] == "openai"
    assert chat["gen_ai.request.model"] == "replay" and chat["server.address"] == "127.0.0.1"
    assert f":{chat['server.port']}/" in model.base_url and chat["gen_ai.conversation.id"] == session_id
    assert "gen_ai.response.finish_reasons" in chat and "gen_ai.response.time_to_first_chunk" in chat
    tool = attrs(kids[1])
    assert tool["gen_ai.tool.type"] == "function" and tool["gen_ai.tool.call.id"]
    assert [s["status_code"] for s in kids[1::2]] == ["UNSET", "ERROR", "UNSET"]  # the self-repair step
    assert attrs(kids[3])["error.type"] == "tool_error"
    assert TASK not in json.dumps(spans) and "gen_ai.input.messages" not in top  # no content by default

    exported = traced(monkeypatch, phoenix)
    command = [sys.executable, "-m", "mini_agent.cli", "sessions", "export", "--otlp", session_id]
    done = subprocess.run(
        command, env=daemon_env(), cwd=workspace, capture_output=True, text=True, timeout=60, check=False
    )
    assert done.returncode == 0, done.stderr
    again = await spans_of(phoenix, exported, lambda found: len(found) >= 8)
    assert shape(again) == shape(spans)
    [stored] = named(again, "invoke_agent")
    assert attrs(stored)["gen_ai.conversation.id"] == session_id
    assert stored["context"]["trace_id"] != trace_id  # a trace of its own, not the live one


def served_and_answered(spans: list[Span]) -> bool:
    return bool(named(spans, "tools/call")) and len(named(spans, "chat")) >= 2


def allow_once(request: dict[str, Any]) -> str:
    return next(str(o["optionId"]) for o in request["options"] if o["kind"] == "allow_once")


@pytest.mark.asyncio
async def test_an_acp_turn_with_an_mcp_tool_joins_the_mcp_servers_span(
    workspace: Path, phoenix: Phoenix, monkeypatch: pytest.MonkeyPatch
) -> None:
    project = traced(monkeypatch, phoenix, capture=True)
    passed = {k: v for k, v in daemon_env().items() if k.startswith(("OTEL_", "PYTHON"))}
    mcp_env = [EnvVariable(name=k, value=v) for k, v in passed.items()]
    server = McpServerStdio(
        name="ws",
        command=sys.executable,
        args=["-m", "mini_agent.cli", "mcp", "--tools", "tools.py", "--root", str(workspace)],
        env=mcp_env,
    )
    action = 'Action: ws_count_file_lines\nAction Input: {"file_path": "schema.py"}'
    count = {"content": f"Thought: count.\n{action}"}
    script = [count, {"content": "Final Answer: {last_observation} lines"}]
    trace_id, parent_id = secrets.token_hex(16), secrets.token_hex(8)
    async with ReplayServer(script) as model:
        workspace_config(workspace, model.base_url, tools="")
        async with acp_agent(workspace, trust=True) as (conn, process, recorder):
            recorder.answer = allow_once
            session = await conn.new_session(cwd=str(workspace), mcp_servers=[server])
            words = "how long is schema.py?"
            answer = await conn.prompt(
                session_id=session.session_id, prompt=text(words), traceparent=f"00-{trace_id}-{parent_id}-01"
            )
            assert answer.stop_reason == "end_turn"
            spans = await spans_of(phoenix, project, served_and_answered)
            process.terminate()
            await process.wait()

    [agent] = named(spans, "invoke_agent")
    assert agent["parent_id"] == parent_id and agent["context"]["trace_id"] == trace_id
    kids = children(spans, agent)
    assert [s["name"] for s in kids] == ["chat replay", "execute_tool ws_count_file_lines", "chat replay"]
    tool = attrs(kids[1])
    assert tool["gen_ai.tool.type"] == "extension" and tool["mcp.method.name"] == "tools/call"
    [served] = named(spans, "tools/call")  # the MCP SDK's server span in `mini-agent mcp`
    assert served["context"]["trace_id"] == trace_id
    assert served["parent_id"] == kids[1]["context"]["span_id"]
    assert attrs(served)["gen_ai.tool.name"] == "count_file_lines"
    assert words in attrs(agent)["gen_ai.input.messages"]  # captured: the switch is on
    assert "schema.py" in tool["gen_ai.tool.call.arguments"]


@pytest.mark.asyncio
@pytest.mark.parametrize("endpoint", [False, True])
async def test_no_endpoint_loads_nothing_of_opentelemetry(
    workspace: Path, phoenix: Phoenix, monkeypatch: pytest.MonkeyPatch, endpoint: bool
) -> None:
    if endpoint:
        traced(monkeypatch, phoenix)
    else:
        for name in [n for n in os.environ if n.startswith("OTEL_")]:
            monkeypatch.delenv(name)
    script = [{"content": "Final Answer: done"}]
    async with ReplayServer(script) as model:
        daemon = RawDaemon(workspace, PYTHONPROFILEIMPORTTIME="1")  # every import, as it happens, on stderr
        await asyncio.to_thread(daemon.initialize, {"llm": {"baseUrl": model.base_url}})
        started = await asyncio.to_thread(daemon.request, "agent/startSession", {"task": "finish"})
        sid = started["result"]["sessionId"]
        ran = await asyncio.to_thread(daemon.request, "agent/run", {"sessionId": sid})
        assert ran["result"]["stopReason"] == "end_turn"
        assert await asyncio.to_thread(daemon.close) == 0
    lines = daemon.stderr_path.read_text(encoding="utf-8").splitlines()
    modules = {line.rsplit("|", 1)[-1].strip() for line in lines if line.startswith("import time:")}
    loaded = sorted(m for m in modules if m.startswith("opentelemetry"))
    if endpoint:
        assert "opentelemetry.sdk.trace" in loaded
    else:
        assert loaded == []
