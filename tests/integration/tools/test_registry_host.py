"""ToolRegistry through real tool hosts: registration, reload, routing and isolation of workspace files.

`workspace` (conftest) is a fresh copy of the example workspace in tmp_path.
"""

from __future__ import annotations

import asyncio
import json
import sys
from pathlib import Path

import pytest
from mini_agent.core.contracts import ToolCall, ToolOptions, ToolSource
from mini_agent.tools.registry import RegistrationError, ToolRegistry

from ...support.tools import run, tool_call, write

COUNT_SCHEMA = {
    "type": "object",
    "properties": {
        "file_path": {"type": "string", "description": "The file to count, relative to the workspace root."},
        "ignore_empty": {
            "type": "boolean",
            "default": True,
            "description": "Leave out lines that hold only whitespace.",
        },
    },
    "required": ["file_path"],
    "additionalProperties": False,
}


def non_empty_lines(path: Path) -> int:
    return sum(1 for line in path.read_text(encoding="utf-8").splitlines() if line.strip())


def def_line(registry: ToolRegistry, file: str, function: str) -> int:
    lines = (registry._root / file).read_text(encoding="utf-8").splitlines()
    return next(i for i, line in enumerate(lines, 1) if line.startswith(f"def {function}("))


# --- the example workspace ---------------------------------------------------------------------


@pytest.mark.asyncio
async def test_example_tools_register_with_their_schemas(registry: ToolRegistry) -> None:
    specs = await registry.register_file("tools.py")
    assert [s.name for s in specs] == ["list_python_files", "count_file_lines"]
    count = registry.get("count_file_lines")
    assert count is not None
    assert count.input_schema == COUNT_SCHEMA
    assert count.description == "Count the lines of a text file."
    assert count.source == ToolSource(
        "tools.py", "count_file_lines", def_line(registry, "tools.py", "count_file_lines")
    )
    assert (count.client, count.requires_approval, count.timeout_sec) == (False, False, None)
    listing = registry.get("list_python_files")
    assert listing is not None
    assert listing.input_schema["properties"]["directory"]["default"] == "."
    assert listing.input_schema["required"] == []


@pytest.mark.asyncio
async def test_seed_scenario_with_the_example_tools(registry: ToolRegistry, workspace: Path) -> None:
    await registry.register_file("tools.py")
    listing = await run(registry, "list_python_files", directory=".")
    assert json.loads(listing.output) == ["metrics.py", "schema.py", "tools.py"]
    typo = await run(registry, "count_file_lines", path="schema.py", ignore_empty=True)
    assert typo.is_error
    assert "- unknown argument 'path' (valid arguments: file_path, ignore_empty)" in typo.output
    assert "- missing required argument 'file_path'" in typo.output
    fixed = await run(registry, "count_file_lines", file_path="schema.py", ignore_empty="true")
    assert (fixed.output, fixed.is_error) == (str(non_empty_lines(workspace / "schema.py")), False)
    assert fixed.call_id == "call-count_file_lines" and fixed.tool_name == "count_file_lines"
    assert fixed.execution_time_ms > 0
    all_lines = await run(registry, "count_file_lines", file_path="schema.py", ignore_empty=False)
    assert int(all_lines.output) > int(fixed.output)


@pytest.mark.asyncio
async def test_tool_exception_is_an_error_observation(registry: ToolRegistry) -> None:
    await registry.register_file("tools.py")
    missing = await run(registry, "list_python_files", directory="no_such_dir")
    assert missing.is_error
    assert missing.output == "list_python_files raised FileNotFoundError: no directory named 'no_such_dir'"
    assert "Traceback" in missing.logs


@pytest.mark.asyncio
async def test_unknown_tool_lists_the_available_ones(registry: ToolRegistry) -> None:
    await registry.register_file("tools.py")
    result = await run(registry, "search_google", q="x")
    assert result.is_error
    assert (
        result.output == "unknown tool 'search_google'. Available tools: list_python_files, count_file_lines"
    )


@pytest.mark.asyncio
async def test_parse_error_shows_the_raw_text(registry: ToolRegistry) -> None:
    await registry.register_file("tools.py")
    broken = ToolCall(
        "c1", "count_file_lines", {}, raw_arguments='{"file_path": "a.py"', parse_error="unterminated"
    )
    result = await registry.execute(broken, session_id="s1")
    assert result.is_error
    assert "unterminated" in result.output and 'Raw arguments: {"file_path": "a.py"' in result.output


# --- registration rules ------------------------------------------------------------------------


@pytest.mark.asyncio
async def test_nothing_is_imported_before_registration(registry: ToolRegistry, workspace: Path) -> None:
    marker = workspace / "imported.txt"
    write(workspace, "side.py", f"open({str(marker)!r}, 'w').close()\ndef noop() -> None: ...\n")
    await asyncio.sleep(0)
    assert not marker.exists()
    await registry.register_file("side.py")
    assert marker.exists()
    assert not any("side" in name for name in sys.modules if name.startswith("mini_agent_workspace"))


@pytest.mark.asyncio
async def test_symlink_inside_the_workspace_is_fine(registry: ToolRegistry, workspace: Path) -> None:
    (workspace / "alias.py").symlink_to(workspace / "metrics.py")
    [spec] = await registry.register_file("alias.py")
    assert spec.source == ToolSource("metrics.py", "average", def_line(registry, "metrics.py", "average"))


@pytest.mark.asyncio
async def test_import_failure_gives_last_line_and_leaves_registry_unchanged(
    registry: ToolRegistry, workspace: Path
) -> None:
    await registry.register_file("tools.py")
    before = registry.list_tools()
    write(workspace, "broken.py", "import json\nCONFIG = json.loads('{oops')\ndef f() -> None: ...\n")
    with pytest.raises(RegistrationError) as caught:
        await registry.register_file("broken.py")
    assert str(caught.value) == (
        "cannot register broken.py: json.decoder.JSONDecodeError: "
        "Expecting property name enclosed in double quotes: line 1 column 2 (char 1)"
    )
    assert registry.list_tools() == before
    assert (await run(registry, "count_file_lines", file_path="tools.py")).is_error is False


@pytest.mark.asyncio
async def test_unknown_function_is_refused(registry: ToolRegistry) -> None:
    with pytest.raises(RegistrationError, match=r"has no function 'nope' \(public functions: average\)"):
        await registry.register_file("metrics.py", function="nope")
    assert registry.list_tools() == []


@pytest.mark.asyncio
async def test_one_function_with_overrides(registry: ToolRegistry) -> None:
    [spec] = await registry.register_file(
        "tools.py",
        function="count_file_lines",
        options=ToolOptions(
            "count_lines", "Count lines.", requires_approval=True, idempotent=True, timeout_sec=5
        ),
    )
    assert (spec.name, spec.description, spec.requires_approval, spec.idempotent, spec.timeout_sec) == (
        "count_lines",
        "Count lines.",
        True,
        True,
        5,
    )
    assert [s.name for s in registry.list_tools()] == ["count_lines"]
    assert (await run(registry, "count_lines", file_path="metrics.py")).is_error is False


@pytest.mark.asyncio
async def test_name_override_needs_one_function(registry: ToolRegistry) -> None:
    with pytest.raises(RegistrationError, match="only be set for one function"):
        await registry.register_file("tools.py", options=ToolOptions("both"))
    with pytest.raises(RegistrationError, match="invalid tool name 'two words'"):
        await registry.register_file(
            "tools.py", function="count_file_lines", options=ToolOptions("two words")
        )


@pytest.mark.asyncio
async def test_registering_again_replaces(registry: ToolRegistry, workspace: Path) -> None:
    await registry.register_file("tools.py")
    await registry.register_file("tools.py", function="count_file_lines", options=ToolOptions("count_lines"))
    assert [s.name for s in registry.list_tools()] == ["list_python_files", "count_lines"]
    await registry.register_file("tools.py", function="count_file_lines", options=ToolOptions("lines"))
    assert [s.name for s in registry.list_tools()] == ["list_python_files", "lines"]
    await registry.register_file("tools.py")
    assert sorted(s.name for s in registry.list_tools()) == ["count_file_lines", "list_python_files"]
    assert registry.registrations() == [
        {
            "path": "tools.py",
            "function": None,
            "name": None,
            "description": None,
            "requires_approval": False,
            "idempotent": False,
            "timeout_sec": None,
        }
    ]


@pytest.mark.asyncio
async def test_name_clash_with_another_file_is_refused(registry: ToolRegistry, workspace: Path) -> None:
    await registry.register_file("tools.py")
    write(workspace, "other.py", "def count_file_lines(file_path: str) -> int:\n    return 0\n")
    with pytest.raises(RegistrationError, match=r"already registered from tools\.py:count_file_lines"):
        await registry.register_file("other.py")
    assert registry.get("count_file_lines") is not None
    assert registry.get("count_file_lines").source.path == "tools.py"  # type: ignore[union-attr]


@pytest.mark.asyncio
async def test_decorator_options_reach_the_spec(registry: ToolRegistry, workspace: Path) -> None:
    write(
        workspace,
        "guarded.py",
        "from mini_agent import tool\n\n"
        "@tool(name='wipe', requires_approval=True, timeout_sec=2)\n"
        "def wipe_cache() -> str:\n    '''Delete the cache.'''\n    return 'wiped'\n",
    )
    [spec] = await registry.register_file("guarded.py")
    assert (spec.name, spec.requires_approval, spec.timeout_sec) == ("wipe", True, 2)
    assert (await run(registry, "wipe")).output == "wiped"


@pytest.mark.asyncio
async def test_unregister(registry: ToolRegistry) -> None:
    await registry.register_file("tools.py")
    removed = registry.unregister("list_python_files")
    assert removed.name == "list_python_files"
    assert [s.name for s in registry.list_tools()] == ["count_file_lines"]
    assert [r["function"] for r in registry.registrations()] == ["count_file_lines"]
    with pytest.raises(RegistrationError, match="no tool named 'list_python_files'"):
        registry.unregister("list_python_files")


@pytest.mark.asyncio
async def test_registrations_restore_in_a_new_registry(registry: ToolRegistry, workspace: Path) -> None:
    await registry.register_file(
        "tools.py", function="count_file_lines", options=ToolOptions("lines", requires_approval=True)
    )
    await registry.register_file("metrics.py")
    registry.register_client_tool("ask_user", "Ask the user.", {"type": "object", "properties": {}})
    records = json.loads(json.dumps(registry.registrations()))
    fresh = ToolRegistry(workspace)
    try:
        assert await fresh.restore([*records, {"path": "gone.py"}]) == [
            "gone.py: no such file in the workspace"
        ]
        assert fresh.list_tools() == registry.list_tools()
    finally:
        await fresh.aclose()


# --- reload ------------------------------------------------------------------------------------


@pytest.mark.asyncio
async def test_reload_after_edit_shows_the_new_signature(registry: ToolRegistry, workspace: Path) -> None:
    path = write(workspace, "greet.py", "def greet(name: str) -> str:\n    return 'hi ' + name\n")
    await registry.register_file("greet.py")
    assert (await run(registry, "greet", name="ann")).output == "hi ann"
    path.write_text("def greet(person: str) -> str:\n    return 'hello ' + person\n", encoding="utf-8")
    [spec] = await registry.reload(str(path)) or []
    assert list(spec.input_schema["properties"]) == ["person"]
    assert (await run(registry, "greet", person="bo")).output == "hello bo"
    assert "unknown argument 'name'" in (await run(registry, "greet", name="bo")).output


@pytest.mark.asyncio
async def test_reload_of_unregistered_or_broken_file(registry: ToolRegistry, workspace: Path) -> None:
    assert await registry.reload("tools.py") is None
    assert await registry.reload("/somewhere/else.py") is None
    path = write(workspace, "flaky.py", "def ok() -> int:\n    return 1\n")
    await registry.register_file("flaky.py")
    path.write_text("def ok() -> int\n", encoding="utf-8")
    with pytest.raises(RegistrationError, match="SyntaxError"):
        await registry.reload("flaky.py")
    assert [s.name for s in registry.list_tools()] == ["ok"]


# --- client tools ------------------------------------------------------------------------------


@pytest.mark.asyncio
async def test_client_tool_cannot_take_a_file_tools_name(registry: ToolRegistry) -> None:
    await registry.register_file("tools.py")
    with pytest.raises(RegistrationError, match=r"already registered from tools\.py:count_file_lines"):
        registry.register_client_tool("count_file_lines", "x", {"type": "object"})


# --- faults and cancellation through execute -------------------------------------------------


@pytest.mark.asyncio
async def test_execute_survives_a_crash_and_a_timeout(
    registry: ToolRegistry, workspace: Path, capfd: pytest.CaptureFixture[str]
) -> None:
    write(
        workspace,
        "faults.py",
        "import os, time\n"
        "def die() -> None:\n    print('dying-marker')\n    os._exit(7)\n"
        "def stall() -> None:\n    time.sleep(60)\n",
    )
    await registry.register_file("faults.py")
    await registry.register_file("tools.py")
    died = await run(registry, "die")
    assert (died.output, died.is_error) == ("die crashed: the tool host exited with code 7", True)
    assert "dying-marker" in died.logs
    fast = ToolRegistry(workspace, timeout_sec=1)
    try:
        await fast.register_file("faults.py")
        stalled = await fast.execute(tool_call("stall"), session_id="s")
        assert (stalled.output, stalled.is_error) == ("stall timed out after 1 s", True)
    finally:
        await fast.aclose()
    assert (await run(registry, "count_file_lines", file_path="tools.py")).is_error is False
    assert capfd.readouterr().out == ""


@pytest.mark.asyncio
async def test_cancelled_execute_propagates_and_the_next_call_works(
    registry: ToolRegistry, workspace: Path
) -> None:
    started = workspace / "started"
    write(
        workspace,
        "slow.py",
        "import pathlib, time\n"
        f"def slow() -> None:\n    pathlib.Path({str(started)!r}).touch()\n    time.sleep(60)\n",
    )
    await registry.register_file("slow.py")
    await registry.register_file("tools.py")
    task = asyncio.create_task(run(registry, "slow"))
    for _ in range(1000):
        if started.exists():
            break
        await asyncio.sleep(0.01)
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task
    assert (await run(registry, "count_file_lines", file_path="tools.py")).is_error is False


@pytest.mark.asyncio
async def test_large_output_sets_truncated(workspace: Path) -> None:
    write(workspace, "big.py", "def big() -> str:\n    return 'x' * 200_000\n")
    registry = ToolRegistry(workspace, max_output_bytes=1000)
    try:
        await registry.register_file("big.py")
        result = await run(registry, "big")
        assert result.truncated and not result.is_error
        assert result.output.startswith("x" * 1000 + "\n[… output truncated: 200000 bytes")
    finally:
        await registry.aclose()
