"""ToolRegistry without a tool host: registration rules that refuse before any import, confinement of
paths, client tools and their argument checks.

`workspace` (conftest) is a fresh copy of the example workspace in tmp_path.
"""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

import pytest
from mini_agent.core.contracts import ToolCall, ToolSpec
from mini_agent.tools.registry import RegistrationError, ToolRegistry

from ...support.tools import run, tool_call, write

# --- the example workspace ---------------------------------------------------------------------


# --- registration rules ------------------------------------------------------------------------


@pytest.mark.asyncio
@pytest.mark.parametrize("escape", ["../outside.py", "absolute", "symlink"])
async def test_files_outside_the_workspace_are_refused(
    registry: ToolRegistry, workspace: Path, escape: str
) -> None:
    outside = write(workspace.parent, "outside.py", "def steal() -> str:\n    return 'secret'\n")
    path = {"../outside.py": "../outside.py", "absolute": str(outside), "symlink": "link.py"}[escape]
    if escape == "symlink":
        (workspace / "link.py").symlink_to(outside)
    with pytest.raises(RegistrationError, match="is outside the workspace"):
        await registry.register_file(path)
    assert registry.list_tools() == []


@pytest.mark.asyncio
async def test_missing_and_non_python_files_are_refused(registry: ToolRegistry, workspace: Path) -> None:
    with pytest.raises(RegistrationError, match=r"nope\.py: no such file"):
        await registry.register_file("nope.py")
    write(workspace, "notes.txt", "def f(): ...\n")
    with pytest.raises(RegistrationError, match=r"notes.txt is not a Python file \(.py\)"):
        await registry.register_file("notes.txt")
    with pytest.raises(RegistrationError, match="is not a file"):
        await registry.register_file(".")


# --- reload ------------------------------------------------------------------------------------


# --- client tools ------------------------------------------------------------------------------

ASK_SCHEMA = {
    "type": "object",
    "properties": {"question": {"type": "string"}, "choices": {"type": "array", "items": {"type": "string"}}},
    "required": ["question"],
    "additionalProperties": False,
}


@pytest.mark.asyncio
async def test_client_tool_round_trip(workspace: Path) -> None:
    seen: list[tuple[str, ToolCall]] = []

    async def caller(session_id: str, tool_call: ToolCall) -> Any:
        seen.append((session_id, tool_call))
        return {"answer": "yes", "choice": tool_call.arguments.get("choices", [None])[0]}

    registry = ToolRegistry(workspace, client_caller=caller)
    spec = registry.register_client_tool("ask_user", "Ask the user.", ASK_SCHEMA, requires_approval=True)
    assert spec == ToolSpec("ask_user", "Ask the user.", ASK_SCHEMA, requires_approval=True, client=True)
    result = await registry.execute(tool_call("ask_user", question="ok?", choices=["a"]), session_id="s9")
    assert (result.output, result.is_error) == ('{"answer":"yes","choice":"a"}', False)
    assert seen[0][0] == "s9" and seen[0][1].arguments == {"question": "ok?", "choices": ["a"]}
    bad = await registry.execute(tool_call("ask_user", choices=[1], extra=True), session_id="s9")
    assert bad.is_error and len(seen) == 1
    assert bad.output.splitlines()[:4] == [
        "Invalid arguments for ask_user:",
        "- arguments: 'question' is a required property",
        "- arguments: Additional properties are not allowed ('extra' was unexpected)",
        "- choices[0]: 1 is not of type 'string'",
    ]
    await registry.aclose()


@pytest.mark.asyncio
async def test_client_tool_errors_and_timeouts(workspace: Path) -> None:
    async def caller(session_id: str, tool_call: ToolCall) -> Any:
        if tool_call.arguments["question"] == "fail":
            raise RuntimeError("the editor said no")
        await asyncio.sleep(30)

    registry = ToolRegistry(workspace, timeout_sec=0.2, client_caller=caller)
    registry.register_client_tool("ask_user", "Ask.", ASK_SCHEMA)
    failed = await registry.execute(tool_call("ask_user", question="fail"), session_id="s")
    assert (failed.output, failed.is_error) == ("ask_user failed in the client: the editor said no", True)
    slow = await registry.execute(tool_call("ask_user", question="wait"), session_id="s")
    assert (slow.output, slow.is_error) == ("ask_user timed out after 0.2 s", True)
    await registry.aclose()


@pytest.mark.asyncio
async def test_client_tool_without_a_caller(registry: ToolRegistry) -> None:
    registry.register_client_tool("ask_user", "Ask.", ASK_SCHEMA)
    result = await run(registry, "ask_user", question="x")
    assert (result.output, result.is_error) == (
        "ask_user runs in the client, and no client is connected",
        True,
    )


@pytest.mark.asyncio
@pytest.mark.parametrize(
    ("schema", "message"),
    [
        ({"type": "object", "properties": {"a": {"type": "strin"}}}, "not a valid JSON Schema"),
        ({"type": "string"}, "must describe an object"),
        ([], "must be a JSON object"),
    ],
)
async def test_bad_client_schema_is_refused(registry: ToolRegistry, schema: Any, message: str) -> None:
    with pytest.raises(RegistrationError, match=message):
        registry.register_client_tool("bad", "Bad.", schema)
    assert registry.list_tools() == []


# --- faults and cancellation through execute -------------------------------------------------
