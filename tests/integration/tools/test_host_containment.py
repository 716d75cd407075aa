"""What a tool may not do to the daemon: leave processes behind, eat its memory, read its model key,
or kill its host with a string that has no UTF-8 form.

Real host subprocesses on real files, and the real daemon over stdio for the settings and for the
daemon's own death; leftover processes are looked up in /proc.
"""

from __future__ import annotations

import asyncio
import json
import os
import signal
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from mini_agent.scripted import ReplayServer
from mini_agent.tools.host import LoadError, ToolHost

from ...support.host import call, process_gone, wait_until
from ...support.scripted import action

TOOLS = '''
import json, os, subprocess, sys, time
from pathlib import Path

def _detached() -> int:
    """A sleeper in a session of its own: out of reach of the host's process group."""
    return subprocess.Popen(["sleep", "300"], start_new_session=True).pid

def _daemonized() -> int:
    """The classic double fork: the sleeper's parent exits, so it is nobody's child any more."""
    read, write = os.pipe()
    if os.fork() == 0:
        os.setsid()
        if os.fork() == 0:
            os.execvp("sleep", ["sleep", "300"])
        os.write(write, str(os.getpid()).encode())
        os._exit(0)
    os.close(write)
    os.waitpid(-1, 0)
    first = int(os.read(read, 64))
    for entry in os.listdir("/proc"):  # the grandchild: the one whose session is `first`
        if entry.isdigit() and entry != str(first):
            try:
                fields = Path(f"/proc/{entry}/stat").read_text().rsplit(")", 1)[1].split()
            except OSError:
                continue
            if int(fields[3]) == first:
                return int(entry)
    raise RuntimeError("the grandchild vanished")

def _publish(pid_file: str, pids: list) -> None:
    """Whole or not at all: the test waits for the file to exist, then reads it."""
    Path(pid_file + ".part").write_text(json.dumps(pids))
    os.replace(pid_file + ".part", pid_file)

def leave_behind(pid_file: str) -> str:
    _publish(pid_file, [_detached(), _daemonized()])
    return "left"

def hang(pid_file: str) -> None:
    _publish(pid_file, [os.getpid(), _detached(), _daemonized()])
    time.sleep(300)

def die_holding_the_pipe(pid_file: str) -> None:
    """A forked child keeps every descriptor, the reply pipe included; then the host is killed."""
    child = os.fork()
    if child == 0:
        time.sleep(300)
        os._exit(0)
    _publish(pid_file, [os.getpid(), child])
    os.kill(os.getpid(), 9)

def hog(mb: int) -> str:
    chunks = [bytearray(1 << 20) for _ in range(mb)]
    return f"allocated {len(chunks)} MiB"

def surrogate() -> str:
    return "bytes: \\udc80"

def environment(name: str) -> str:
    return repr(os.environ.get(name))

def echo(text: str) -> str:
    return text
'''

BAD_DOC = 'def f() -> str:\n    """Undecodable \\udc80 docstring."""\n    return "x"\n'


@pytest.fixture
def tools_file(tmp_path: Path) -> Path:
    path = tmp_path / "hostile.py"
    path.write_text(TOOLS, encoding="utf-8")
    return path


async def assert_all_gone(pids: list[int], what: str) -> None:
    await wait_until(lambda: all(process_gone(pid) for pid in pids), what)


@pytest.fixture
def sleepers() -> Any:
    """Kills, at the end, whatever a failing test left running."""
    pids: list[int] = []
    yield pids
    for pid in pids:
        if not process_gone(pid):
            os.kill(pid, signal.SIGKILL)


def read_pids(pid_file: Path, into: list[int]) -> list[int]:
    pids: list[int] = json.loads(pid_file.read_text())
    into += pids
    return pids


@pytest.mark.asyncio
async def test_nothing_a_call_started_outlives_it(
    host: ToolHost, tools_file: Path, tmp_path: Path, sleepers: list[int]
) -> None:
    pid_file = tmp_path / "pids.json"
    result = await call(host, tools_file, "leave_behind", pid_file=str(pid_file))
    assert (result.output, result.is_error) == ("left", False)
    detached, daemonized = read_pids(pid_file, sleepers)
    # Gone by the time the reply arrives, not eventually.
    assert process_gone(detached) and process_gone(daemonized)
    assert (await call(host, tools_file, "echo", text="ok")).output == "ok"


@pytest.mark.asyncio
@pytest.mark.parametrize("how", ["timeout", "cancel"])
async def test_ending_a_call_ends_its_whole_tree(
    host: ToolHost, tools_file: Path, tmp_path: Path, sleepers: list[int], how: str
) -> None:
    pid_file = tmp_path / "pids.json"
    task = asyncio.create_task(call(host, tools_file, "hang", timeout=3, pid_file=str(pid_file)))
    await wait_until(pid_file.exists, "the tool to start")
    if how == "cancel":
        task.cancel()
        with pytest.raises(asyncio.CancelledError):
            await task
    else:
        assert (await task).output == "hang timed out after 3 s"
    await assert_all_gone(read_pids(pid_file, sleepers), "the tool's whole tree to die")


@pytest.mark.asyncio
async def test_closing_the_pool_ends_a_running_tree(
    tools_file: Path, tmp_path: Path, sleepers: list[int]
) -> None:
    host = ToolHost(tmp_path)
    pid_file = tmp_path / "pids.json"
    task = asyncio.create_task(call(host, tools_file, "hang", pid_file=str(pid_file)))
    await wait_until(pid_file.exists, "the tool to start")
    await host.aclose()
    await assert_all_gone(read_pids(pid_file, sleepers), "the tree to die with the pool")
    result = await task  # ended by the close, not left waiting for its 30 s timeout
    assert result.is_error
    assert result.output == "hang crashed: the tool host was killed by signal SIGKILL"


@pytest.mark.asyncio
async def test_a_host_killed_while_its_child_holds_the_pipe_is_a_crash_not_a_timeout(
    host: ToolHost, tools_file: Path, tmp_path: Path, sleepers: list[int]
) -> None:
    pid_file = tmp_path / "pids.json"
    result = await call(host, tools_file, "die_holding_the_pipe", timeout=20, pid_file=str(pid_file))
    assert result.is_error
    assert result.output == "die_holding_the_pipe crashed: the tool host was killed by signal SIGKILL"
    await assert_all_gone(read_pids(pid_file, sleepers), "the forked child to die with its host")
    assert (await call(host, tools_file, "echo", text="ok")).output == "ok"


@pytest.mark.asyncio
async def test_a_tool_that_eats_memory_gets_an_error_and_the_host_goes_on(
    host: ToolHost, tools_file: Path
) -> None:
    result = await call(host, tools_file, "hog", mb=2048)
    assert result.is_error
    assert result.output == "hog ran out of memory (the limit is tools.maxMemoryMB = 512)"
    assert (await call(host, tools_file, "hog", mb=16)).output == "allocated 16 MiB"


@pytest.mark.asyncio
async def test_a_lone_surrogate_is_an_error_not_a_dead_host(
    host: ToolHost, tools_file: Path, tmp_path: Path
) -> None:
    result = await call(host, tools_file, "surrogate")
    assert result.is_error
    assert result.output == (
        "surrogate returned a string with a lone surrogate '\\udc80' at index 7, which has no UTF-8 form "
        "(decode bytes with errors='replace' or return them as base64)"
    )
    bad_doc = tmp_path / "bad_doc.py"
    bad_doc.write_text(BAD_DOC, encoding="utf-8")
    with pytest.raises(LoadError, match=r"^the tool host cannot send its reply: .*surrogates not allowed"):
        await host.load(bad_doc)
    assert (await call(host, tools_file, "echo", text="ok")).output == "ok"
    assert host.running == 1  # the same host answered throughout


@pytest.mark.asyncio
async def test_arguments_with_a_lone_surrogate_are_refused_not_raised(
    host: ToolHost, tools_file: Path
) -> None:
    """A model may send the JSON escape `\\udc80`; parsed, it is a string with no UTF-8 form."""
    result = await call(host, tools_file, "echo", text="a\udc80")
    assert result.is_error
    assert result.output.startswith("Invalid arguments for echo: ")
    assert "surrogates not allowed" in result.output
    assert (await call(host, tools_file, "echo", text="ok")).output == "ok"
    assert host.running == 1


@pytest.mark.asyncio
async def test_tools_do_not_see_the_models_key_unless_allowed(
    daemon_factory: Callable[..., Any], workspace: Path, tools_file: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    (workspace / "hostile.py").write_text(TOOLS, encoding="utf-8")
    monkeypatch.setenv("OPENAI_API_KEY", "sk-from-the-environment")
    monkeypatch.setenv("EDITOR_MODEL_KEY", "sk-from-the-options")  # the value given as llm.apiKey
    monkeypatch.setenv("UNRELATED_SETTING", "kept")
    names = ["OPENAI_API_KEY", "EDITOR_MODEL_KEY", "UNRELATED_SETTING"]
    script = [action("environment", {"name": name}) for name in names] * 2
    async with ReplayServer(script) as model:
        seen = []
        for inherit in (False, True):
            options = {
                "llm": {"baseUrl": model.base_url, "apiKey": "sk-from-the-options"},
                "store": {"enabled": False},
                "tools": {"inheritSecrets": inherit},
            }
            client = await daemon_factory(options)
            await client.request("agent/registerTool", {"path": "hostile.py", "function": "environment"})
            session_id = (await client.request("agent/startSession", {"task": "look"}))["sessionId"]
            for _ in names:
                step = await client.request("agent/step", {"sessionId": session_id})
                seen.append(step["observations"][0]["output"])
    assert seen[:3] == ["None", "None", "'kept'"]
    assert seen[3:] == ["'sk-from-the-environment'", "'sk-from-the-options'", "'kept'"]


@pytest.mark.asyncio
async def test_the_memory_limit_is_a_daemon_option(
    daemon_factory: Callable[..., Any], workspace: Path
) -> None:
    (workspace / "hostile.py").write_text(TOOLS, encoding="utf-8")
    async with ReplayServer([action("hog", {"mb": 400})]) as model:
        options = {
            "llm": {"baseUrl": model.base_url},
            "store": {"enabled": False},
            "tools": {"maxMemoryMB": 200},
        }
        client = await daemon_factory(options)
        await client.request("agent/registerTool", {"path": "hostile.py", "function": "hog"})
        session_id = (await client.request("agent/startSession", {"task": "eat"}))["sessionId"]
        step = await client.request("agent/step", {"sessionId": session_id})
    observation = step["observations"][0]
    assert observation["isError"]
    assert observation["output"] == "hog ran out of memory (the limit is tools.maxMemoryMB = 200)"


@pytest.mark.asyncio
async def test_a_killed_daemon_leaves_no_tool_process_behind(
    daemon_factory: Callable[..., Any], workspace: Path, sleepers: list[int]
) -> None:
    (workspace / "hostile.py").write_text(TOOLS, encoding="utf-8")
    pid_file = workspace / "pids.json"
    async with ReplayServer([action("hang", {"pid_file": str(pid_file)})]) as model:
        client = await daemon_factory({"llm": {"baseUrl": model.base_url}, "store": {"enabled": False}})
        await client.request("agent/registerTool", {"path": "hostile.py", "function": "hang"})
        session_id = (await client.request("agent/startSession", {"task": "hang"}))["sessionId"]
        step = asyncio.ensure_future(client.request("agent/step", {"sessionId": session_id}))
        await wait_until(pid_file.exists, "the tool to start")
        server = client.lsp._server
        server.kill()
        await server.wait()
        step.cancel()
    await assert_all_gone(read_pids(pid_file, sleepers), "the tool's tree to die with the daemon")
