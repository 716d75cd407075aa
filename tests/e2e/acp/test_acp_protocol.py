"""The ACP door's wire: initialize, and bad input answered with JSON-RPC errors while the agent stays
up, checked on raw NDJSON lines (the SDK's client would refuse to send most of them)."""

from __future__ import annotations

import json
import signal
import string
import subprocess
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from ...support.acp import AGENT
from ...support.daemon import daemon_env

METHODS = [
    "initialize",
    "session/new",
    "session/load",
    "session/list",
    "session/resume",
    "session/fork",
    "session/delete",
    "session/prompt",
    "session/cancel",
    "session/set_mode",
    "authenticate",
]


class RawAgent:
    """`mini-agent acp` on pipes, one line out, one line back."""

    def __init__(self, cwd: Path, *extra: str) -> None:
        self.process = subprocess.Popen(
            [*AGENT, *extra],
            cwd=cwd,
            env=daemon_env(),
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.DEVNULL,
        )
        self._next = 0

    def send_line(self, line: bytes) -> dict[str, Any]:
        assert self.process.stdin is not None and self.process.stdout is not None
        self.process.stdin.write(line + b"\n")
        self.process.stdin.flush()
        answer: dict[str, Any] = json.loads(self.process.stdout.readline())
        return answer

    def request(self, method: str, params: Any) -> dict[str, Any]:
        self._next += 1
        message = {"jsonrpc": "2.0", "id": self._next, "method": method, "params": params}
        answer = self.send_line(json.dumps(message).encode())
        assert answer["id"] == self._next
        return answer

    def alive(self) -> bool:
        return "result" in self.request("initialize", {"protocolVersion": 1})


@pytest.fixture
def agent(workspace: Path) -> Iterator[RawAgent]:
    raw = RawAgent(workspace)
    yield raw
    raw.process.terminate()
    assert raw.process.wait(timeout=30) == 0


def test_initialize_advertises_what_is_implemented(agent: RawAgent) -> None:
    result = agent.request("initialize", {"protocolVersion": 1, "clientCapabilities": {}})["result"]
    assert result["protocolVersion"] == 1
    methods = {(m["id"], m["type"]) for m in result["authMethods"]}
    assert methods == {("setup", "terminal"), ("environment", "env_var")}
    assert next(m for m in result["authMethods"] if m["type"] == "terminal")["args"] == ["setup"]
    assert result["agentInfo"]["name"] == "mini-agent" and result["agentInfo"]["version"]
    caps = result["agentCapabilities"]
    assert caps["loadSession"] is True and caps["promptCapabilities"]["embeddedContext"] is True
    assert caps["sessionCapabilities"] == {"list": {}, "resume": {}, "fork": {}, "delete": {}, "close": {}}
    assert caps["mcpCapabilities"] == {"http": True, "sse": False}


def test_bad_lines_get_json_rpc_errors_and_the_agent_stays_up(agent: RawAgent) -> None:
    not_json = agent.send_line(b"this is not json {")
    assert not_json["id"] is None and not_json["error"]["code"] == -32700
    assert agent.send_line(b"[1, 2]")["error"]["code"] == -32600
    assert (
        agent.send_line(b'{"jsonrpc": "2.0", "id": [1], "method": "initialize"}')["error"]["code"] == -32600
    )
    unknown = agent.request("session/fly", {})["error"]
    assert unknown["code"] == -32601 and "session/fly" in unknown["message"]
    typed = agent.request("session/new", {"cwd": 5, "mcpServers": []})["error"]
    assert typed["code"] == -32602 and "cwd" in typed["message"]
    relative = agent.request("session/new", {"cwd": "some/dir", "mcpServers": []})["error"]
    assert "absolute" in relative["message"]
    prompt = agent.request(
        "session/prompt", {"sessionId": "sess_nope", "prompt": [{"type": "text", "text": "x"}]}
    )
    assert "sess_nope" in prompt["error"]["message"] and "session/new" in prompt["error"]["message"]
    assert agent.alive()


json_values = st.recursive(
    st.none() | st.booleans() | st.integers() | st.text(string.ascii_letters + string.digits + " _-."),
    lambda inner: (
        st.lists(inner, max_size=3)
        | st.dictionaries(st.text(string.ascii_letters, max_size=12), inner, max_size=4)
    ),
    max_leaves=8,
)
params_like = (
    st.fixed_dictionaries(
        {},
        optional={
            "sessionId": json_values,
            "cwd": json_values,
            "prompt": json_values,
            "mcpServers": json_values,
            "protocolVersion": json_values,
            "cursor": json_values,
        },
    )
    | json_values
)


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(method=st.sampled_from(METHODS), params=params_like)
def test_any_params_to_any_method_get_an_answer_and_never_take_the_agent_down(
    agent: RawAgent, method: str, params: Any
) -> None:
    answer = agent.request(method, params)
    assert ("result" in answer) != ("error" in answer)
    if "error" in answer:
        assert answer["error"]["code"] in (-32600, -32601, -32602) and answer["error"]["message"]
    assert agent.process.poll() is None


def test_sigterm_ends_the_agent_cleanly_with_its_tool_hosts(workspace: Path) -> None:
    (workspace / "pyproject.toml").write_text('[tool.mini-agent]\ntools = ["tools.py"]\n', encoding="utf-8")
    raw = RawAgent(workspace, "--trust")
    raw.request("initialize", {"protocolVersion": 1})
    assert "result" in raw.request("session/new", {"cwd": str(workspace), "mcpServers": []})
    hosts = _children(raw.process.pid)
    assert hosts, "the tool host runs once the workspace's tools are loaded"
    raw.process.send_signal(signal.SIGTERM)
    assert raw.process.wait(timeout=30) == 0
    give_up = time.monotonic() + 30  # a bound on waiting, not a speed claim
    for pid in hosts:
        while _exists(pid):  # reaped by the agent before it exited, or by init right after
            assert time.monotonic() < give_up, f"tool host {pid} outlived the agent"
            time.sleep(0.05)


def _children(pid: int) -> list[int]:
    path = Path(f"/proc/{pid}/task/{pid}/children")
    return [int(child) for child in path.read_text().split()]


def _exists(pid: int) -> bool:
    try:
        state = Path(f"/proc/{pid}/stat").read_text().split(")")[-1].split()[0]
    except FileNotFoundError:
        return False
    return state != "Z"
