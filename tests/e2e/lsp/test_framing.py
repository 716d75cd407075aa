"""Framing attacks over the real daemon's stdio: every broken frame is answered with an error, the
connection resumes at the next frame, sizes are capped, and an editor that leaves without waiting
ends the daemon quietly."""

from __future__ import annotations

import asyncio
import io
import json
import os
import socket
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest
from mini_agent.lsp.readahead import InBuffer
from mini_agent.plumbing.pipes import SafeWriter

from ...support.daemon import DAEMON, daemon_env
from ...support.raw import RawDaemon, error_of

LIST_TOOLS = b'{"jsonrpc": "2.0", "id": 99, "method": "agent/listTools", "params": {}}'


@pytest.fixture
def daemons() -> Any:
    started: list[RawDaemon] = []
    yield started
    for daemon in started:
        if daemon.process.poll() is None:
            daemon.process.kill()
            daemon.process.wait()


def start(daemons: list[RawDaemon], workspace: Path, **kwargs: Any) -> RawDaemon:
    daemon = RawDaemon(workspace, **kwargs)
    daemons.append(daemon)
    return daemon


def write(daemon: RawDaemon, raw: bytes) -> None:
    assert daemon.process.stdin is not None
    daemon.process.stdin.write(raw)
    daemon.process.stdin.flush()


@pytest.mark.parametrize(
    ("header", "named"),
    [
        (b"Content-Type: application/json\r\n", b"missing"),
        (b"Content-Length: -5\r\n", b"-5"),
        (b"Content-Length: twelve\r\n", b"twelve"),
        (b"this is no header\r\n", b"this is no header"),
    ],
)
def test_a_malformed_header_is_answered_and_the_next_frame_is_served(
    daemons: list[RawDaemon], workspace: Path, header: bytes, named: bytes
) -> None:
    raw = start(daemons, workspace)
    raw.initialize()
    body = b'{"jsonrpc": "2.0", "id": 50, "method": "agent/listTools"}'
    # the broken frame's body runs straight into the next frame's header, as a stream would carry it
    write(raw, header + b"\r\n" + body)
    raw.send_bytes(LIST_TOOLS)
    error = error_of(raw.answer_to(None))
    assert error["code"] == -32700 and "header" in error["message"]
    assert named.decode() in error["message"]
    assert raw.answer_to(99)["result"] == {"tools": []}
    assert raw.close() == 0


def test_an_oversized_frame_is_refused_and_skipped_without_losing_the_next(
    daemons: list[RawDaemon], workspace: Path
) -> None:
    raw = start(daemons, workspace, MINI_AGENT_MAX_FRAME_BYTES="65536")
    raw.initialize()
    big = json.dumps({"jsonrpc": "2.0", "id": 7, "method": "agent/listTools", "params": {"x": "y" * 200_000}})
    raw.send_bytes(big.encode())
    raw.send_bytes(LIST_TOOLS)
    error = error_of(raw.answer_to(None))
    assert error["code"] == -32600
    assert "65536" in error["message"] and "MINI_AGENT_MAX_FRAME_BYTES" in error["message"]
    assert raw.answer_to(99)["result"] == {"tools": []}
    assert raw.close() == 0


def test_an_absurd_content_length_does_not_kill_the_daemon(daemons: list[RawDaemon], workspace: Path) -> None:
    raw = start(daemons, workspace)
    raw.initialize()
    write(raw, b"Content-Length: 100000000000\r\n\r\n{}")
    error = error_of(raw.answer_to(None))
    assert error["code"] == -32600 and "100000000000" in error["message"]
    assert raw.process.poll() is None
    assert raw.process.stdin is not None
    raw.process.stdin.close()  # the rest of the declared body never comes: end of input ends it
    assert raw.process.wait(timeout=20) == 0


def test_deeply_nested_json_is_an_invalid_request_with_id_null(
    daemons: list[RawDaemon], workspace: Path
) -> None:
    """The depth rule of `plumbing.jsonrpc`, the same on all three doors (was -32700 here)."""
    raw = start(daemons, workspace)
    raw.initialize()
    raw.send_bytes(b"[" * 200_000 + b"]" * 200_000)
    answer = raw.answer_to(None)
    assert answer["id"] is None and error_of(answer)["code"] == -32600
    assert "nested deeper than 200 levels" in error_of(answer)["message"]
    assert raw.request("agent/listTools", {})["result"] == {"tools": []}
    assert raw.close() == 0


def test_an_ndjson_line_over_the_cap_is_refused_and_the_next_line_served(
    daemons: list[RawDaemon], workspace: Path
) -> None:
    cli = [sys.executable, "-m", "mini_agent.cli", "serve", "--ndjson"]
    raw = start(daemons, workspace, command=cli, MINI_AGENT_MAX_FRAME_BYTES="4096")
    assert raw.process.stdout is not None

    def answer() -> dict[str, Any]:
        assert raw.process.stdout is not None
        message: dict[str, Any] = json.loads(raw.process.stdout.readline())
        return message

    init = {"processId": None, "rootUri": workspace.as_uri(), "capabilities": {}}
    write(
        raw, json.dumps({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": init}).encode() + b"\n"
    )
    assert "capabilities" in answer()["result"]
    write(raw, b'{"jsonrpc": "2.0", "method": "initialized", "params": {}}\n')
    write(
        raw,
        b'{"jsonrpc": "2.0", "id": 2, "method": "agent/listTools", "params": {"x": "'
        + b"y" * 50_000
        + b'"}}\n',
    )
    write(raw, LIST_TOOLS + b"\n")
    error = error_of(answer())
    assert error["code"] == -32600 and "4096" in error["message"]
    assert answer()["id"] == 99
    assert raw.process.stdin is not None
    raw.process.stdin.close()
    assert raw.process.wait(timeout=20) == 0


def test_end_of_input_right_after_shutdown_is_a_quiet_normal_exit(
    daemons: list[RawDaemon], workspace: Path
) -> None:
    """Neovim 0.11 sends `shutdown` and exits without reading the answer."""
    with socket.socket() as probe:  # a model server that is not there: the HTTP session still opens
        probe.bind(("127.0.0.1", 0))
        url = f"http://127.0.0.1:{probe.getsockname()[1]}/v1"
    raw = start(daemons, workspace)
    raw.initialize({"llm": {"baseUrl": url}})
    assert raw.request("agent/registerTool", {"path": "tools.py"})["result"]["tools"]
    session_id = raw.request("agent/startSession", {"task": "hi"})["result"]["sessionId"]
    assert raw.request("agent/step", {"sessionId": session_id})["result"]["stopReason"] == "error"
    raw.send_bytes(b'{"jsonrpc": "2.0", "id": 40, "method": "shutdown"}')
    assert raw.process.stdin is not None and raw.process.stdout is not None
    raw.process.stdin.close()
    raw.process.stdout.close()  # nobody reads the answer: it meets a broken pipe
    assert raw.process.wait(timeout=20) == 0
    raw.stderr.close()
    log = raw.stderr_path.read_text()
    for noise in ("Traceback", "ERROR", "CancelledError", "Unclosed"):
        assert noise not in log, log


class CountingStream(io.BytesIO):
    def __init__(self) -> None:
        super().__init__()
        self.writes = 0

    def write(self, data: Any) -> int:
        self.writes += 1
        return super().write(data)


@pytest.mark.asyncio
async def test_notifications_wait_for_the_next_response_and_leave_with_it_in_order() -> None:
    stream = CountingStream()
    writer = SafeWriter(stream, newline=True)
    writer.LINGER_SEC = 60.0  # longer than the test: only the response lets them out
    writer.write(b"n1", linger=True)
    writer.write(b"n2", linger=True)
    await asyncio.sleep(0)
    assert stream.getvalue() == b""
    writer.write(b"r1")
    await asyncio.sleep(0)
    assert stream.getvalue() == b"n1\nn2\nr1\n" and stream.writes == 1
    writer.LINGER_SEC = 0.01
    writer.write(b"n3", linger=True)  # alone: it goes out once it has lingered
    for _ in range(500):
        await asyncio.sleep(0.01)
        if stream.writes == 2:
            break
    assert stream.getvalue() == b"n1\nn2\nr1\nn3\n" and stream.writes == 2


def _frame(body: bytes) -> bytes:
    return b"Content-Length: %d\r\n\r\n%s" % (len(body), body)


def _request(msg_id: int, method: str, params: Any = None) -> bytes:
    return _frame(json.dumps({"jsonrpc": "2.0", "id": msg_id, "method": method, "params": params}).encode())


def test_frames_in_one_write_and_frames_cut_anywhere_are_all_answered_in_order(
    daemons: list[RawDaemon], workspace: Path
) -> None:
    """The first write carries initialize with ten requests behind it (what boot reads ahead of the
    early answer must reach the reader); then one frame arrives a byte at a time."""
    raw = start(daemons, workspace)
    init = {"processId": None, "rootUri": workspace.as_uri(), "capabilities": {}}
    initialized = _frame(b'{"jsonrpc": "2.0", "method": "initialized", "params": {}}')
    burst = _request(1, "initialize", init) + initialized
    write(raw, burst + b"".join(_request(10 + n, "agent/listTools", {}) for n in range(10)))
    assert "capabilities" in raw.answer_to(1)["result"]
    answered: list[int] = []
    while len(answered) < 10:
        message = raw.read()
        if "method" not in message:
            answered.append(message["id"])
    assert answered == list(range(10, 20))
    for byte in _request(20, "agent/listTools", {}):
        write(raw, bytes([byte]))
    assert raw.answer_to(20)["result"]["tools"] == []


def test_a_daemon_reading_a_file_as_stdin_answers_it_all_and_ends(workspace: Path) -> None:
    """stdin that the event loop cannot poll (a regular file) is read by a worker thread instead; its
    end ends the daemon, after every request in it is answered."""
    init = {"processId": None, "rootUri": workspace.as_uri(), "capabilities": {}}
    script = workspace.parent / "session.lsp"
    script.write_bytes(
        _request(1, "initialize", init) + _request(2, "agent/listTools", {}) + _request(3, "shutdown")
    )
    with script.open("rb") as stdin:
        done = subprocess.run(DAEMON, stdin=stdin, capture_output=True, env=daemon_env(), cwd=workspace,
                              timeout=60, check=False)
    assert done.returncode == 0, done.stderr.decode()
    answers, rest = [], done.stdout
    while rest:
        head, _, rest = rest.partition(b"\r\n\r\n")
        length = int(head.split(b"\r\n")[0].removeprefix(b"Content-Length:"))
        answers.append(json.loads(rest[:length]))
        rest = rest[length:]
    assert [a["id"] for a in answers if "id" in a] == [1, 2, 3]
    assert answers[1]["result"] == {"tools": []}


def test_the_input_buffer_takes_lines_and_counts_and_asks_for_more_only_when_it_must() -> None:
    buffer = InBuffer()
    buffer.add(b"Content-Len")
    assert buffer.take_line(100) is None  # no newline yet, under the limit
    buffer.add(b"gth: 3\r\n\r\nab")
    assert buffer.take_line(100) == b"Content-Length: 3\r\n"
    assert buffer.take_line(100) == b"\r\n"
    assert buffer.take_bytes(3) is None
    buffer.add(b"cxxxxxxxxxxx")
    assert buffer.take_bytes(3) == b"abc"
    assert buffer.take_line(5) == b"xxxxx"  # an over-long line comes a limit at a time
    buffer.add(b"")  # end of input: what is left, then nothing
    assert buffer.take_bytes(100) == b"xxxxxx"
    assert buffer.take_line(100) == b""


def test_a_client_that_hands_over_stdin_non_blocking_is_read_as_any_other(workspace: Path) -> None:
    """Some launchers pass the pipe's end with O_NONBLOCK set; the first read then finds nothing yet."""
    daemon = subprocess.Popen(DAEMON, stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                              stderr=subprocess.DEVNULL, env=daemon_env(), cwd=workspace,
                              preexec_fn=lambda: os.set_blocking(0, False))
    try:
        assert daemon.stdin is not None and daemon.stdout is not None
        time.sleep(0.5)  # the daemon is waiting on an empty, non-blocking stdin by now
        init = {"processId": None, "rootUri": workspace.as_uri(), "capabilities": {}}
        daemon.stdin.write(_request(1, "initialize", init) + _request(2, "agent/listTools", {}))
        daemon.stdin.flush()
        answers = []
        while len(answers) < 2:
            head = b""
            while not head.endswith(b"\r\n\r\n"):
                head += daemon.stdout.read(1)
            message = json.loads(daemon.stdout.read(int(head.split(b"\r\n")[0].split(b":")[1])))
            if "id" in message:
                answers.append(message)
        assert [a["id"] for a in answers] == [1, 2] and answers[1]["result"] == {"tools": []}
    finally:
        daemon.kill()
        daemon.wait()
