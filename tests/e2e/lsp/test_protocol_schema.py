"""docs/protocol.schema.json: a valid 2020-12 schema that covers the protocol, and every message of a
real session (both directions, through the real daemon over stdio) fits it."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import pytest
from jsonschema import Draft202012Validator
from mini_agent.cli.demo import SCRIPT as SEED_SCRIPT
from mini_agent.cli.demo import TASK as SEED_TASK
from mini_agent.lsp.capabilities import METHODS
from mini_agent.scripted import ReplayServer
from mini_agent_client import AgentClient
from mini_agent_client.rpc import RpcError
from referencing import Registry, Resource

from ...support.daemon import ROOT, daemon_env
from ...support.schema_check import FrameChecker, SchemaViolation, check, schema, spec, validate


def _refs(node: Any) -> list[str]:
    if isinstance(node, dict):
        own = [node["$ref"]] if isinstance(node.get("$ref"), str) else []
        return own + [ref for value in node.values() for ref in _refs(value)]
    if isinstance(node, list):
        return [ref for value in node for ref in _refs(value)]
    return []


def test_schema_is_valid_2020_12_and_every_ref_resolves() -> None:
    document = schema()
    assert document["$schema"] == "https://json-schema.org/draft/2020-12/schema"
    Draft202012Validator.check_schema(document)
    for table in ("requests", "notifications"):
        for method, entry in document[table].items():
            assert entry["direction"] in ("clientToServer", "serverToClient", "both"), method
            parts = ("params", "result") if table == "requests" else ("params",)
            for part in parts:
                Draft202012Validator.check_schema(entry[part])
    registry: Registry[Any] = Registry().with_resource(document["$id"], Resource.from_contents(document))
    resolver = registry.resolver(document["$id"])
    for ref in _refs(document):
        assert resolver.lookup(ref).contents is not None, ref


def test_schema_covers_every_method_the_daemon_advertises_and_the_docs_name() -> None:
    advertised = {*METHODS, "agent/update", "agent/toolsChanged",
                  "agent/requestPermission", "agent/executeTool"}
    docs = (ROOT / "docs" / "protocol.md").read_text(encoding="utf-8")
    documented = set(re.findall(r"`(agent/[A-Za-z]+)", docs))
    missing = sorted(m for m in advertised | documented if spec(m) is None)
    assert missing == []


def test_checker_names_what_is_wrong() -> None:
    usage = {"promptTokens": 1, "completionTokens": 1, "cachedTokens": 0}
    update = {"kind": "usage_update", "usage": usage, "total": usage}
    params = {"sessionId": "s1", "step": 0, "update": update}
    good = {"jsonrpc": "2.0", "method": "agent/update", "params": params}
    validate("serverToClient", None, good)

    bad_update = json.loads(json.dumps(good))
    del bad_update["params"]["update"]["total"]
    with pytest.raises(SchemaViolation, match="total"):
        validate("serverToClient", None, bad_update)

    unknown_kind = json.loads(json.dumps(good))
    unknown_kind["params"]["update"] = {"kind": "telepathy"}
    assert check("serverToClient", None, unknown_kind)

    assert "clientToServer" in check("clientToServer", None, good)[0]  # wrong direction
    result = {"jsonrpc": "2.0", "id": 4, "result": {"sessionId": "s1", "status": "thinking"}}
    assert any("status" in line for line in check("serverToClient", "agent/startSession", result))
    error = {"jsonrpc": "2.0", "id": 4, "error": {"code": -32602, "message": "bad", "data": {"reason": "x"}}}
    validate("serverToClient", "agent/step", error)


NATIVE_TURNS: list[dict[str, Any]] = [
    {"content": "I will ask the user first.",
     "tool_calls": [{"name": "ask_user", "arguments": {"question": "Which file?"}}]},
    {"tool_calls": [{"name": "count_file_lines", "arguments": {"file_path": "schema.py"}}]},
    {"content": "schema.py has {last_observation} non-empty lines."},
]


@pytest.mark.asyncio
async def test_a_whole_session_fits_the_schema_in_both_directions(workspace: Path) -> None:
    """The seed scenario stepped by hand, then a native-mode run with a client tool, an approval and
    $/progress, plus the session queries and a few error answers: every frame is checked."""
    checker = FrameChecker(strict_client=True)
    async with ReplayServer([*SEED_SCRIPT, *NATIVE_TURNS]) as model:
        options = {"llm": {"baseUrl": model.base_url, "model": "replay"}, "store": {"enabled": False}}
        spawn = AgentClient.spawn(root=workspace, options=options, env=daemon_env(), tap=checker.tap)
        async with spawn as client:
            asked: list[dict[str, Any]] = []

            async def execute(params: dict[str, Any]) -> Any:
                asked.append(params)
                return {"answer": "schema.py"}

            async def permit(params: dict[str, Any]) -> dict[str, Any]:
                asked.append(params)
                return {"decision": "allow_once"}

            client.on_execute_tool(execute)
            client.on_permission(permit)
            await client.register_tool("tools.py")
            seed = await client.start_session(SEED_TASK)
            steps = [await client.step(seed) for _ in range(4)]
            assert steps[-1]["stopReason"] == "end_turn"

            question = {"type": "object", "properties": {"question": {"type": "string"}},
                        "required": ["question"]}
            await client.register_client_tool("ask_user", "Ask the user a question.", question)
            await client.register_tool("tools.py", function="count_file_lines", requires_approval=True)
            assert {t["name"] for t in await client.list_tools()} >= {"ask_user", "count_file_lines"}
            native = await client.start_session("How long is the file the user means?",
                                                llm={"toolMode": "native"})
            result = await client.call("agent/run", {"sessionId": native, "workDoneToken": "progress-1"})
            assert result["stopReason"] == "end_turn", result
            assert [p.get("name") or p["toolCall"]["name"] for p in asked] == ["ask_user", "count_file_lines"]

            await client.get_session(seed)
            await client.list_sessions()
            await client.list_sessions("finished")
            idle = await client.start_session("nothing to do")
            await client.cancel(idle)
            await client.call("agent/unregisterTool", {"name": "ask_user"})
            approve = {"sessionId": idle, "toolCallId": "nope", "decision": "allow_once"}
            for method, params in [("agent/step", {"sessionId": "sess_missing"}), ("agent/approve", approve)]:
                with pytest.raises(RpcError):
                    await client.call(method, params)

    methods = {m.get("method") for _, m in checker.seen}
    assert {"agent/update", "agent/toolsChanged", "agent/requestPermission", "agent/executeTool",
            "$/progress"} <= methods
    kinds = {m["params"]["update"]["kind"] for _, m in checker.seen if m.get("method") == "agent/update"}
    assert kinds == {"agent_thought_chunk", "tool_call", "tool_call_update", "agent_message_chunk",
                     "usage_update", "status"}
    assert checker.errors == []
