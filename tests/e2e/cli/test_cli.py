"""The `mini-agent` command line as a person and a script use it: a real terminal (pty), NDJSON on a
pipe, exit codes, Ctrl-C, approvals; the daemon, tool host and model server are all real processes."""

from __future__ import annotations

import asyncio
import fcntl
import json
import os
import pty
import re
import select
import shutil
import signal
import socket
import struct
import subprocess
import termios
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from mini_agent.cli.demo import ANSWER as SEED_ANSWER
from mini_agent.cli.demo import SCRIPT as SEED_SCRIPT
from mini_agent.cli.demo import TASK as SEED_TASK
from mini_agent.scripted import ReplayServer
from mini_agent_client import AgentClient

from ...support.cli import CLI, cli_env, run_cli
from ...support.daemon import EXAMPLE, ROOT, daemon_env

ANSI = re.compile(r"\x1b\[[0-9;?]*[A-Za-z]|\x1b\][^\x07]*\x07")
ANSWER = re.compile(re.escape(SEED_ANSWER).replace(r"\{count\}", r"\d+"))

DANGER = '''"""A tool that needs approval."""
import os

from mini_agent import tool


@tool(requires_approval=True)
def delete_file(path: str) -> str:
    """Delete a file of the workspace.

    Args:
        path: The file to delete.
    """
    os.remove(path)
    return f"deleted {path}"
'''
DELETE_SCRIPT: list[dict[str, Any]] = [
    {"content": 'Thought: I delete it.\nAction: delete_file\nAction Input: {"path": "victim.txt"}'},
    {"content": "Final Answer: {last_observation}"},
]


def run_in_pty(args: list[str], cwd: Path, *, on_output: Callable[[str], bytes | None] | None = None,
               timeout: float = 120) -> tuple[int, str]:
    """Run the CLI on a pseudo-terminal it controls (so ^C is a real terminal interrupt); returns
    (exit code, screen text without escape codes). `on_output(text so far)` may answer with keystrokes."""
    master, slave = pty.openpty()
    fcntl.ioctl(slave, termios.TIOCSWINSZ, struct.pack("HHHH", 40, 120, 0, 0))
    process = subprocess.Popen(
        [*CLI, *args], cwd=cwd, env=cli_env(), stdin=slave, stdout=slave, stderr=slave,
        start_new_session=True, preexec_fn=lambda: fcntl.ioctl(0, termios.TIOCSCTTY, 0),
    )
    os.close(slave)
    raw, deadline = b"", time.monotonic() + timeout
    try:
        while process.poll() is None or select.select([master], [], [], 0.2)[0]:
            if time.monotonic() > deadline:
                raise TimeoutError(ANSI.sub("", raw.decode(errors="replace")))
            if not select.select([master], [], [], 0.2)[0]:
                continue
            try:
                chunk = os.read(master, 65536)
            except OSError:  # EIO: every writer of the terminal has gone
                break
            if not chunk:
                break
            raw += chunk
            keys = on_output(ANSI.sub("", raw.decode(errors="replace"))) if on_output else None
            if keys:
                os.write(master, keys)
    finally:
        os.close(master)
        if process.poll() is None:
            process.kill()
    return process.wait(), ANSI.sub("", raw.decode(errors="replace"))


def closed_port_url() -> str:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    return f"http://127.0.0.1:{port}/v1"


@pytest.mark.asyncio
async def test_terminal_shows_the_streamed_steps_and_the_answer(workspace: Path) -> None:
    async with ReplayServer(SEED_SCRIPT) as model:
        code, screen = await asyncio.to_thread(
            run_in_pty, ["ask", SEED_TASK, "--tools", "tools.py", "--base-url", model.base_url], workspace)
    assert code == 0, screen
    assert ANSWER.search(screen), screen
    assert "→ list_python_files" in screen and "→ count_file_lines" in screen
    assert "unknown argument 'path'" in screen  # the failed call's observation is shown
    assert "finished (end_turn) · 4 steps" in screen


@pytest.mark.asyncio
async def test_json_prints_every_event_in_order_and_ends_with_the_result(workspace: Path) -> None:
    async with ReplayServer(SEED_SCRIPT) as model:
        done = await asyncio.to_thread(run_cli, ["ask", "-", "--tools", "tools.py", "--json"], workspace,
                                       stdin=SEED_TASK + "\n", OPENAI_BASE_URL=model.base_url,
                                       MINI_AGENT_MODEL="replay-model")
        assert model.requests[0]["model"] == "replay-model"
        first_user = next(m for m in model.requests[0]["messages"] if m["role"] == "user")
    assert done.returncode == 0, done.stderr
    events = [json.loads(line) for line in done.stdout.splitlines()]
    assert SEED_TASK in first_user["content"]
    assert events[-1]["kind"] == "result" and events[-1]["stopReason"] == "end_turn"
    assert ANSWER.fullmatch(events[-1]["finalAnswer"])
    assert [e["kind"] for e in events].count("result") == 1
    assert len({e["sessionId"] for e in events}) == 1
    steps = [e["step"] for e in events[:-1]]
    assert steps == sorted(steps) and steps[-1] == 3
    calls = [e for e in events if e["kind"] in ("tool_call", "tool_call_update")]
    for call_id in {e["toolCallId"] for e in calls}:
        assert next(e["status"] for e in calls if e["toolCallId"] == call_id) == "pending"
    chatter = ("agent_thought_chunk", "usage_update", "status")
    assert [e["kind"] for e in events if e["kind"] not in chatter] == \
        ["tool_call", "tool_call_update", "tool_call_update"] * 3 + ["agent_message_chunk", "result"]


@pytest.mark.asyncio
async def test_tokens_a_server_does_not_report_are_said_to_be_not_reported(workspace: Path) -> None:
    """A server that sends no `usage` (llama-cpp-python streaming): the summary says so instead of
    counting 0 in / 0 out, and the result's usage says `reported: false`; a server that counts is shown."""
    turns = [{"content": "Final Answer: hello"}]
    async with ReplayServer({"turns": turns, "repeat_last": True, "report_usage": False}) as silent, \
            ReplayServer({"turns": turns}) as counting:
        (code, screen), done, (_, counted) = await asyncio.gather(
            asyncio.to_thread(run_in_pty, ["ask", "hi", "--base-url", silent.base_url], workspace),
            asyncio.to_thread(run_cli, ["ask", "hi", "--json"], workspace, OPENAI_BASE_URL=silent.base_url),
            asyncio.to_thread(run_in_pty, ["ask", "hi", "--base-url", counting.base_url], workspace),
        )
    assert code == 0 and done.returncode == 0, screen
    assert "tokens: not reported by the server" in screen and " in / " not in screen, screen
    usage = json.loads(done.stdout.splitlines()[-1])["usage"]
    assert usage["reported"] is False and usage["promptTokens"] == 0
    exchange = counting.exchanges[0]
    assert f"tokens {exchange.prompt_tokens} in / {exchange.completion_tokens} out" in counted, counted
    assert "not reported" not in counted


@pytest.mark.parametrize("args", [
    [],
    ["ask"],
    ["ask", "task", "--tool-mode", "telepathy"],
    ["ask", "task", "--max-steps", "0"],
    ["ask", "task", "--tools", "missing.py"],
    ["ask", "   "],
    ["ask", "task", "--approve", "ask", "--json"],
    ["sessions", "approve", "s1", "c1", "maybe"],
])
def test_bad_usage_exits_2(args: list[str], workspace: Path) -> None:
    done = run_cli(args, workspace, stdin="")
    assert done.returncode == 2, done.stderr
    assert done.stderr.strip()


@pytest.mark.asyncio
async def test_an_unreachable_model_server_is_reported_once_and_exits_1(workspace: Path) -> None:
    """The daemon words the failure (llm/client.py); the terminal shows its message once, not once
    from the trace and again from the exit."""
    url = closed_port_url()
    args = ["ask", "hello", "--base-url", url]
    done, (code, screen) = await asyncio.gather(
        asyncio.to_thread(run_cli, [*args, "--json"], workspace),
        asyncio.to_thread(run_in_pty, args, workspace),
    )
    assert done.returncode == 1 and code == 1, screen
    message = json.loads(done.stdout.splitlines()[-1])["error"]
    assert url in message
    assert " ".join(message.split()) in " ".join(done.stderr.split())
    assert " ".join(screen.split()).count(" ".join(message.split())) == 1, screen


def test_a_refused_tool_file_exits_1_with_the_reason_said_once(workspace: Path) -> None:
    (workspace / "broken.py").write_text("import does_not_exist_anywhere\n")
    done = run_cli(["ask", "hello", "--tools", "broken.py", "--base-url", closed_port_url()], workspace)
    assert done.returncode == 1
    assert (done.stdout + done.stderr).count("does_not_exist_anywhere") == 1, done.stderr


@pytest.mark.asyncio
async def test_sigint_cancels_the_session_and_exits_130(workspace: Path) -> None:
    async with ReplayServer([{"delay": 60, "content": "Final Answer: too late"}]) as model:
        process = await asyncio.create_subprocess_exec(
            *CLI, "ask", "wait for it", "--json", "--base-url", model.base_url, cwd=workspace, env=cli_env(),
            stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.PIPE)
        assert process.stdout is not None and process.stderr is not None
        lines = [json.loads(await asyncio.wait_for(process.stdout.readline(), 60))]
        assert lines[0] == {**lines[0], "kind": "status", "status": "running"}
        while not model.exchanges:  # the model request is in flight
            await asyncio.sleep(0.05)
        process.send_signal(signal.SIGINT)
        out, err = await asyncio.wait_for(process.communicate(), 60)
    lines += [json.loads(line) for line in out.decode().splitlines()]
    assert process.returncode == 130, err.decode()
    result = lines[-1]
    assert result["kind"] == "result" and result["stopReason"] == "cancelled" and result["status"] == "ready"
    assert "cancelled" in err.decode()


@pytest.mark.asyncio
async def test_ctrl_c_in_the_terminal_cancels_and_exits_130(workspace: Path) -> None:
    sent: list[bytes] = []

    def interrupt_once_waiting(screen: str) -> bytes | None:
        if model.exchanges and not sent:  # the model request is in flight
            sent.append(b"\x03")
            return b"\x03"
        return None

    async with ReplayServer([{"delay": 60, "content": "Final Answer: too late"}]) as model:
        code, screen = await asyncio.to_thread(
            run_in_pty, ["ask", "wait for it", "--base-url", model.base_url], workspace,
            on_output=interrupt_once_waiting)
    assert code == 130, screen
    assert "ready (cancelled)" in screen  # the run's summary: the session is left ready, not killed


@pytest.mark.asyncio
@pytest.mark.parametrize(("policy", "deleted"), [("all", True), ("none", False)])
async def test_approve_flag_decides_for_tools_that_need_approval(policy: str, deleted: bool,
                                                                 workspace: Path) -> None:
    (workspace / "danger.py").write_text(DANGER)
    (workspace / "victim.txt").write_text("x")
    async with ReplayServer(DELETE_SCRIPT) as model:
        done = await asyncio.to_thread(
            run_cli, ["ask", "delete victim.txt", "--tools", "danger.py", "--json", "--approve", policy,
                      "--base-url", model.base_url], workspace)
    assert done.returncode == 0, done.stderr
    events = [json.loads(line) for line in done.stdout.splitlines()]
    decisions = [e for e in events if e["kind"] == "permission"]
    expected = "allow_once" if deleted else "reject_once"
    assert [(d["tool"], d["decision"]) for d in decisions] == [("delete_file", expected)]
    assert (workspace / "victim.txt").exists() is not deleted


@pytest.mark.asyncio
async def test_the_terminal_asks_before_a_tool_that_needs_approval(workspace: Path) -> None:
    (workspace / "danger.py").write_text(DANGER)
    (workspace / "victim.txt").write_text("x")
    answered: list[bytes] = []

    def allow(screen: str) -> bytes | None:
        if "decision [o/a/r/n]" in screen and not answered:
            answered.append(b"o\n")
            return b"o\n"
        return None

    async with ReplayServer(DELETE_SCRIPT) as model:
        code, screen = await asyncio.to_thread(
            run_in_pty, ["ask", "delete victim.txt", "--tools", "danger.py", "--base-url", model.base_url],
            workspace, on_output=allow)
    assert code == 0, screen
    assert "approve tool call: delete_file" in screen and '"path": "victim.txt"' in screen
    assert "deleted victim.txt" in screen
    assert not (workspace / "victim.txt").exists()


def test_tools_prints_the_reflected_schemas(workspace: Path) -> None:
    done = run_cli(["tools", "tools.py", "metrics.py"], workspace)
    assert done.returncode == 0, done.stderr
    tools = {tool["name"]: tool for tool in json.loads(done.stdout)}
    assert set(tools) == {"list_python_files", "count_file_lines", "average"}
    assert tools["count_file_lines"]["inputSchema"]["required"] == ["file_path"]
    assert tools["average"]["inputSchema"]["properties"]["values"]["items"]["type"] == "number"
    assert not (workspace / ".mini-agent").exists()  # listing schemas leaves no state behind


@pytest.mark.asyncio
async def test_sessions_list_show_approve_and_resume_a_stored_session(workspace: Path) -> None:
    """A session left waiting for approval by one daemon is listed, shown, approved and finished by
    the command line's own daemons (the store keeps it in the workspace)."""
    (workspace / "danger.py").write_text(DANGER)
    (workspace / "victim.txt").write_text("x")

    async def no_decision(params: dict[str, Any]) -> dict[str, Any]:
        raise RuntimeError("decide later")

    async with ReplayServer(DELETE_SCRIPT) as model:
        llm = {"llm": {"baseUrl": model.base_url, "model": "replay"}}
        async with AgentClient.spawn(root=workspace, options=llm, env=daemon_env()) as client:
            client.on_permission(no_decision)
            await client.register_tool("danger.py")
            session_id = await client.start_session("delete victim.txt")
            step = await client.step(session_id)
        assert step["status"] == "awaiting_approval"
        call_id = step["pendingApprovals"][0]["toolCall"]["id"]

        waiting = ["sessions", "--status", "awaiting_approval", "--json"]
        listed = await asyncio.to_thread(run_cli, waiting, workspace)
        assert [s["sessionId"] for s in json.loads(listed.stdout)] == [session_id], listed.stderr
        table = await asyncio.to_thread(run_cli, ["sessions"], workspace)
        assert session_id in table.stdout and "awaiting_approval" in table.stdout
        shown = await asyncio.to_thread(run_cli, ["sessions", "show", session_id], workspace)
        assert "delete victim.txt" in shown.stdout and "→ delete_file" in shown.stdout, shown.stderr

        approve = ["sessions", "approve", session_id, call_id, "allow_once"]
        approved = await asyncio.to_thread(run_cli, approve, workspace)
        assert approved.returncode == 0, approved.stderr
        resumed = await asyncio.to_thread(
            run_cli, ["sessions", "resume", session_id, "--json", "--trust", "--base-url", model.base_url],
            workspace)  # --trust: the session's tool was registered by the first daemon, and is restored
    assert resumed.returncode == 0, resumed.stderr
    result = json.loads(resumed.stdout.splitlines()[-1])
    assert result["stopReason"] == "end_turn" and result["finalAnswer"] == "deleted victim.txt"
    assert not (workspace / "victim.txt").exists()


@pytest.mark.asyncio
async def test_what_the_daemon_shows_the_user_is_said_once(workspace: Path) -> None:
    """A store that cannot be opened reaches the command as `window/showMessage` (its log is quiet
    under the command); the run still answers."""
    (workspace / ".mini-agent").write_text("a file where the store's folder would go")
    async with ReplayServer([{"content": "Final Answer: ok"}]) as model:
        done = await asyncio.to_thread(run_cli, ["ask", "hello", "--base-url", model.base_url], workspace)
    assert done.returncode == 0, done.stderr
    assert done.stderr.count("sessions will not be saved") == 1, done.stderr


@pytest.mark.asyncio
async def test_tools_takes_one_file_per_flag_and_never_the_task(workspace: Path) -> None:
    async with ReplayServer(SEED_SCRIPT) as model:
        done = await asyncio.to_thread(
            run_cli, ["ask", "--tools", "tools.py", "--tools", "metrics.py", SEED_TASK, "--json",
                      "--base-url", model.base_url], workspace)
        first = json.dumps(model.requests[0])
    assert done.returncode == 0, done.stderr
    assert all(name in first for name in ("list_python_files", "count_file_lines", "average"))
    assert json.loads(done.stdout.splitlines()[-1])["stopReason"] == "end_turn"


@pytest.mark.asyncio
@pytest.mark.parametrize("trust", [True, False])
async def test_trust_flag_tells_the_daemon_the_workspace_is_trusted(trust: bool, workspace: Path) -> None:
    """What the daemon received, from its own log (MINI_AGENT_LOG reaches the command's daemon)."""
    flag = ["--trust"] if trust else []
    async with ReplayServer([{"content": "Final Answer: ok"}]) as model:
        done = await asyncio.to_thread(
            run_cli, ["ask", "hello", *flag, "--base-url", model.base_url], workspace, MINI_AGENT_LOG="debug")
    assert done.returncode == 0, done.stderr
    received = re.search(r"initialization_options=(\{.*?\}), trace=", done.stderr)
    assert received is not None, done.stderr
    assert ("'workspaceTrusted': True" in received.group(1)) is trust


@pytest.mark.asyncio
@pytest.mark.parametrize("trusted", [True, False])
async def test_the_client_library_sends_workspace_trusted(trusted: bool, workspace: Path) -> None:
    sent: list[dict[str, Any]] = []
    llm = {"llm": {"baseUrl": closed_port_url()}}
    async with AgentClient.spawn(root=workspace, options=llm, env=daemon_env(), workspace_trusted=trusted,
                                 tap=lambda direction, message: sent.append(message)) as client:
        assert "agent/registerTool" in client.methods  # the daemon took the options and answered
    options = next(m for m in sent if m.get("method") == "initialize")["params"]["initializationOptions"]
    assert options == {**llm, **({"workspaceTrusted": True} if trusted else {})}


@pytest.mark.fresh_clone
def test_demo_script_sets_itself_up_from_a_fresh_clone(tmp_path: Path) -> None:
    """`./scripts/demo.sh` in a copy of the checkout with no .venv: it makes one, installs the
    checkout and runs the demo with the arguments it was given; a second run reuses that .venv."""
    clone = tmp_path / "clone"
    clone.mkdir()
    for name in ("pyproject.toml", "README.md", "LICENSE", "server", "clients", "scripts"):
        source = ROOT / name
        if source.is_dir():
            shutil.copytree(source, clone / name, ignore=shutil.ignore_patterns("__pycache__", "*.egg-info"))
        else:
            shutil.copy2(source, clone / name)
    env = {key: value for key, value in os.environ.items() if key not in ("PYTHONPATH", "VIRTUAL_ENV")}

    def demo(*args: str) -> str:
        done = subprocess.run(["./scripts/demo.sh", *args], cwd=clone, env=env, capture_output=True,
                              text=True, timeout=600, check=False)
        assert done.returncode == 0, done.stdout + done.stderr
        return done.stdout

    lines = sum(1 for line in (EXAMPLE / "schema.py").read_text().splitlines() if line.strip())
    native = demo("--tool-mode", "native")
    assert f"schema.py and tools.py; schema.py has {lines} non-empty lines." in native
    assert "Action:" not in native  # the argument reached `mini-agent demo`: no ReAct text
    where = "import mini_agent; print(mini_agent.__file__)"
    python = clone / ".venv" / "bin" / "python"
    installed = subprocess.run([python, "-c", where], env=env, capture_output=True, text=True,
                               check=True).stdout
    assert installed.startswith(str(clone / "server")), installed
    (clone / ".venv" / "kept").touch()
    react = demo()
    answer = f"schema.py and tools.py; schema.py has {lines} non-empty lines."
    assert "Action: count_file_lines" in react and answer in react
    assert (clone / ".venv" / "kept").exists()
