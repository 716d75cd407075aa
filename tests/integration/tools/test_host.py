"""The tool host subprocess: output capture, faults, timeouts, cancellation, parallel calls.

Every test drives real host subprocesses on real files. After each fault the next call must work,
and nothing a tool writes may reach this (the daemon's) stdout — checked with capfd, which also
shows the text did not leak to our stderr either: it went into the observation's logs.
"""

from __future__ import annotations

import asyncio
import json
import textwrap
from pathlib import Path

import pytest
from mini_agent.plumbing import tracecontext
from mini_agent.tools.host import CallResult, LoadError, ToolHost

from ...support.host import call, process_gone, wait_until

TOOLS = '''
import ctypes, json, os, subprocess, sys, time
from pathlib import Path

def echo(text: str, times: int = 1) -> str:
    """Repeat text."""
    return text * times

def trace_context() -> str:
    """The TRACEPARENT this call sees, and the one a process it starts sees."""
    child = subprocess.run([sys.executable, "-c", "import os; print(os.environ.get('TRACEPARENT'))"],
                           capture_output=True, text=True, check=True).stdout.strip()
    return f"{os.environ.get('TRACEPARENT')} {child}"

def chatty() -> str:
    print("printed-marker")
    print("stderr-marker", file=sys.stderr)
    return "done"

def raw_write() -> str:
    os.write(1, b"fd1-marker\\n")
    os.write(2, b"fd2-marker\\n")
    return "done"

def child_output() -> str:
    subprocess.run([sys.executable, "-c", "print('child-marker')"], check=True)
    return "done"

def fail() -> None:
    print("before-raise-marker")
    raise ValueError("the input was wrong")

def leave() -> None:
    sys.exit(3)

def vanish() -> None:
    os._exit(0)

def segfault() -> None:
    print("before-crash-marker", flush=True)
    ctypes.string_at(0)

def close_pipe() -> str:
    os.close(int(sys.argv[sys.argv.index("--reply-fd") + 1]))
    return "unreachable"

def hang(pid_file: str) -> None:
    child = subprocess.Popen(["sleep", "60"])
    Path(pid_file).write_text(json.dumps([os.getpid(), child.pid]))
    time.sleep(60)

def big() -> str:
    return "é" * 100_000

def rendezvous(me: str, other: str, folder: str) -> dict:
    """Start, wait until the other call has started too, end; proves the two calls overlapped."""
    start = time.time()
    Path(folder, me).write_text("started")
    deadline = time.monotonic() + 30
    while not Path(folder, other).exists():
        if time.monotonic() > deadline:
            raise TimeoutError("the other call never started")
        time.sleep(0.01)
    return {"start": start, "end": time.time(), "pid": os.getpid()}
'''


@pytest.fixture
def tools_file(tmp_path: Path) -> Path:
    path = tmp_path / "faulty.py"
    path.write_text(TOOLS, encoding="utf-8")
    return path


async def assert_healthy(host: ToolHost, path: Path) -> None:
    result = await call(host, path, "echo", text="ok", times="2")
    assert result == CallResult("okok", False, False, "")


def assert_daemon_stdout_clean(capfd: pytest.CaptureFixture[str], *markers: str) -> None:
    captured = capfd.readouterr()
    assert captured.out == ""
    for marker in markers:
        assert marker not in captured.err


@pytest.mark.asyncio
async def test_load_returns_tool_dicts(host: ToolHost, tools_file: Path) -> None:
    tools = await host.load(tools_file, function="echo")
    assert [tool.wire() for tool in tools] == [
        {
            "name": "echo",
            "description": "Repeat text.",
            "inputSchema": {
                "type": "object",
                "properties": {"text": {"type": "string"}, "times": {"type": "integer", "default": 1}},
                "required": ["text"],
                "additionalProperties": False,
            },
            "source": {"path": str(tools_file), "function": "echo", "line": 5},
            "requiresApproval": False,
            "idempotent": False,
            "timeoutSec": None,
            "outputSchema": {
                "type": "object",
                "title": "echoOutput",
                "properties": {"result": {"type": "string"}},
                "required": ["result"],
            },
        }
    ]


@pytest.mark.asyncio
@pytest.mark.parametrize(
    ("function", "markers"),
    [
        ("chatty", ["printed-marker", "stderr-marker"]),
        ("raw_write", ["fd1-marker", "fd2-marker"]),
        ("child_output", ["child-marker"]),
    ],
)
async def test_output_is_captured_into_logs(
    host: ToolHost, tools_file: Path, capfd: pytest.CaptureFixture[str], function: str, markers: list[str]
) -> None:
    result = await call(host, tools_file, function)
    assert (result.output, result.is_error) == ("done", False)
    for marker in markers:
        assert marker in result.logs
    await assert_healthy(host, tools_file)
    assert_daemon_stdout_clean(capfd, *markers)


@pytest.mark.asyncio
async def test_exception_becomes_error_with_traceback_in_logs(
    host: ToolHost, tools_file: Path, capfd: pytest.CaptureFixture[str]
) -> None:
    result = await call(host, tools_file, "fail")
    assert result.is_error
    assert result.output == "fail raised ValueError: the input was wrong"
    assert "before-raise-marker" in result.logs and 'faulty.py", line' in result.logs
    assert "host_main.py" not in result.logs
    await assert_healthy(host, tools_file)
    assert_daemon_stdout_clean(capfd, "before-raise-marker")


@pytest.mark.asyncio
async def test_sys_exit_is_reported_and_host_survives(
    host: ToolHost, tools_file: Path, capfd: pytest.CaptureFixture[str]
) -> None:
    result = await call(host, tools_file, "leave")
    assert (result.output, result.is_error) == ("leave called sys.exit(3)", True)
    await assert_healthy(host, tools_file)
    assert host.running == 1
    assert_daemon_stdout_clean(capfd)


@pytest.mark.asyncio
async def test_os_exit_names_the_exit_code_and_host_restarts(
    host: ToolHost, tools_file: Path, capfd: pytest.CaptureFixture[str]
) -> None:
    await host.load(tools_file)
    result = await call(host, tools_file, "vanish")
    assert (result.output, result.is_error) == ("vanish crashed: the tool host exited with code 0", True)
    assert host.running == 0
    await assert_healthy(host, tools_file)
    assert host.running == 1
    assert_daemon_stdout_clean(capfd)


@pytest.mark.asyncio
async def test_segfault_names_the_signal_and_keeps_the_logs(
    host: ToolHost, tools_file: Path, capfd: pytest.CaptureFixture[str]
) -> None:
    result = await call(host, tools_file, "segfault")
    assert (result.output, result.is_error) == (
        "segfault crashed: the tool host was killed by signal SIGSEGV",
        True,
    )
    assert "before-crash-marker" in result.logs and "Fatal Python error" in result.logs
    await assert_healthy(host, tools_file)
    assert_daemon_stdout_clean(capfd, "before-crash-marker", "Fatal Python error")


@pytest.mark.asyncio
async def test_closed_pipe_is_a_crash(
    host: ToolHost, tools_file: Path, capfd: pytest.CaptureFixture[str]
) -> None:
    result = await call(host, tools_file, "close_pipe")
    assert result.is_error and result.output.startswith("close_pipe crashed: the tool host")
    await assert_healthy(host, tools_file)
    assert capfd.readouterr().out == ""


@pytest.mark.asyncio
async def test_timeout_kills_the_tool_and_its_children(
    host: ToolHost, tools_file: Path, tmp_path: Path, capfd: pytest.CaptureFixture[str]
) -> None:
    pid_file = tmp_path / "pids.json"
    result = await call(host, tools_file, "hang", timeout=1, pid_file=str(pid_file))
    assert (result.output, result.is_error) == ("hang timed out after 1 s", True)
    host_pid, child_pid = json.loads(pid_file.read_text())
    await wait_until(lambda: process_gone(host_pid) and process_gone(child_pid), "the hung tool to die")
    await assert_healthy(host, tools_file)
    assert_daemon_stdout_clean(capfd)


@pytest.mark.asyncio
async def test_cancellation_kills_the_tool_and_propagates(
    host: ToolHost, tools_file: Path, tmp_path: Path
) -> None:
    pid_file = tmp_path / "pids.json"
    task = asyncio.create_task(call(host, tools_file, "hang", pid_file=str(pid_file)))
    await wait_until(pid_file.exists, "the slow tool to start")
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task
    host_pid, child_pid = json.loads(pid_file.read_text())
    await wait_until(lambda: process_gone(host_pid) and process_gone(child_pid), "the cancelled tool to die")
    await assert_healthy(host, tools_file)


@pytest.mark.asyncio
async def test_large_output_is_truncated(
    host: ToolHost, tools_file: Path, capfd: pytest.CaptureFixture[str]
) -> None:
    result = await call(host, tools_file, "big")
    assert result.truncated and not result.is_error
    head, marker = result.output.rsplit("\n", 1)
    assert head == "é" * (65536 // 2)
    assert marker == "[… output truncated: 200000 bytes, showing the first 65536 bytes]"
    await assert_healthy(host, tools_file)
    assert_daemon_stdout_clean(capfd, "éééé")


@pytest.mark.asyncio
async def test_invalid_arguments_are_reported_by_the_host(host: ToolHost, tools_file: Path) -> None:
    result = await call(host, tools_file, "echo", txt="x", times=2.5)
    assert result.is_error
    assert result.output.splitlines()[:4] == [
        "Invalid arguments for echo:",
        "- unknown argument 'txt' (valid arguments: text, times)",
        "- missing required argument 'text'",
        "- times: Input should be a valid integer, got a number with a fractional part (got 2.5)",
    ]


@pytest.mark.asyncio
async def test_two_parallel_calls_overlap_in_two_hosts(
    host: ToolHost, tools_file: Path, tmp_path: Path
) -> None:
    folder = str(tmp_path)
    first, second = await asyncio.gather(
        call(host, tools_file, "rendezvous", me="a", other="b", folder=folder),
        call(host, tools_file, "rendezvous", me="b", other="a", folder=folder),
    )
    assert not first.is_error and not second.is_error, (first, second)
    a, b = json.loads(first.output), json.loads(second.output)
    assert a["start"] < b["end"] and b["start"] < a["end"]
    assert a["pid"] != b["pid"] and host.running == 2


@pytest.mark.asyncio
async def test_pool_of_one_serialises_calls(tmp_path: Path, tools_file: Path) -> None:
    single = ToolHost(tmp_path, max_hosts=1)
    try:
        results = await asyncio.gather(*(call(single, tools_file, "echo", text=str(i)) for i in range(5)))
        assert [r.output for r in results] == ["0", "1", "2", "3", "4"]
        assert single.running == 1
    finally:
        await single.aclose()


@pytest.mark.asyncio
async def test_module_is_imported_in_the_host_not_here(
    host: ToolHost, tmp_path: Path, capfd: pytest.CaptureFixture[str]
) -> None:
    path = tmp_path / "side_effect.py"
    path.write_text(
        textwrap.dedent("""
            import os
            print("import-time-marker")
            PID = os.getpid()
            def pid() -> int:
                return PID
        """),
        encoding="utf-8",
    )
    await host.load(path)
    result = await call(host, path, "pid")
    assert int(result.output) != __import__("os").getpid()
    assert_daemon_stdout_clean(capfd, "import-time-marker")


@pytest.mark.asyncio
async def test_reload_runs_the_new_code_in_every_host(host: ToolHost, tmp_path: Path) -> None:
    path = tmp_path / "version.py"
    path.write_text("def version() -> int:\n    return 1\n", encoding="utf-8")
    await host.load(path)
    path.write_text("def version() -> int:\n    return 2\n", encoding="utf-8")  # same size, same second
    await host.load(path)
    results = await asyncio.gather(*(call(host, path, "version") for _ in range(3)))
    assert {r.output for r in results} == {"2"}


@pytest.mark.asyncio
async def test_load_errors(host: ToolHost, tmp_path: Path) -> None:
    broken = tmp_path / "broken.py"
    broken.write_text("import json\nx = 1 / 0\n", encoding="utf-8")
    with pytest.raises(LoadError, match=r"^ZeroDivisionError: division by zero$"):
        await host.load(broken)
    bad_syntax = tmp_path / "bad_syntax.py"
    bad_syntax.write_text("def f(:\n", encoding="utf-8")
    with pytest.raises(LoadError, match=r"SyntaxError: .*\(line 1\)"):
        await host.load(bad_syntax)
    empty = tmp_path / "empty.py"
    empty.write_text("X = 1\n", encoding="utf-8")
    with pytest.raises(LoadError, match="defines no public functions"):
        await host.load(empty)
    with pytest.raises(LoadError, match=r"has no function 'nope' \(public functions: none\)"):
        await host.load(empty, function="nope")


@pytest.mark.asyncio
async def test_workspace_modules_cannot_shadow_the_hosts_own(host: ToolHost, tmp_path: Path) -> None:
    def write(name: str, text: str) -> None:
        (tmp_path / name).write_text(textwrap.dedent(text), encoding="utf-8")

    write("json.py", "raise RuntimeError('the workspace json.py was imported')\n")
    write("pydantic.py", "raise RuntimeError('the workspace pydantic.py was imported')\n")
    write("helpers.py", "def shout(text: str) -> str:\n    return text.upper()\n")
    write(
        "uses.py",
        """
        import json
        import helpers
        def encode(text: str) -> str:
            return json.dumps({"text": helpers.shout(text)})
        """,
    )
    path = tmp_path / "uses.py"
    await host.load(path)
    result = await call(host, path, "encode", text="hi")
    assert (result.output, result.is_error) == ('{"text": "HI"}', False)


@pytest.mark.asyncio
async def test_a_traced_call_hands_its_context_to_the_tool_and_only_to_that_call(
    host: ToolHost, tools_file: Path
) -> None:
    traceparent = "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01"
    carried = tracecontext.TRACEPARENT.set(traceparent)
    try:
        traced = await call(host, tools_file, "trace_context")
    finally:
        tracecontext.TRACEPARENT.reset(carried)
    untraced = await call(host, tools_file, "trace_context")  # the same host process, reused
    assert traced.output == f"{traceparent} {traceparent}"
    assert untraced.output == "None None"
