"""`mini-agent mcp` driven by a real third-party client: the MCP Inspector's CLI (npm, installed by
scripts/test.sh under .venv/inspector), over stdio and over `--http`: the tool list, a call with
structured content, and a list that changes after a served file is edited."""

from __future__ import annotations

import json
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

from ...support.daemon import ROOT, daemon_env
from ...support.mcp_http import mcp_http, node_path

INSPECTOR = ROOT / ".venv" / "inspector" / "node_modules" / ".bin" / "mcp-inspector"
CALL_TIMEOUT_SEC = 120  # one Inspector run (it starts Node, connects, asks once)
CHANGE_TIMEOUT_SEC = 30  # until a list served over HTTP shows an edited file's new tool

TOOLS = '''
from typing import TypedDict

from mini_agent import tool


class Split(TypedDict):
    head: str
    rest: str


@tool(read_only=True, idempotent=True)
def split(text: str) -> Split:
    """The first word and the rest."""
    head, _, rest = text.partition(" ")
    return {"head": head, "rest": rest}
'''

ADDED = '''

def shout(text: str) -> str:
    """Upper case."""
    return text.upper()
'''


def inspector(home: Path, *target: str, method: str, **call: str) -> dict[str, Any]:
    """One Inspector CLI run; its JSON answer."""
    args = ["--method", method]
    if "tool" in call:
        args += ["--tool-name", call.pop("tool"), "--tool-arg", *(f"{k}={v}" for k, v in call.items())]
    env = daemon_env(PATH=node_path(), HOME=str(home), MCP_CATALOG_PATH=str(home / "mcp.json"))
    done = subprocess.run(
        [str(INSPECTOR), "--cli", *target, *args],
        env=env,
        capture_output=True,
        text=True,
        timeout=CALL_TIMEOUT_SEC,
    )
    assert done.returncode == 0, done.stdout + done.stderr
    answer: dict[str, Any] = json.loads(done.stdout)
    return answer


def names(listed: dict[str, Any]) -> list[str]:
    return [t["name"] for t in listed["tools"]]


def check_list_and_call(home: Path, target: list[str]) -> None:
    listed = inspector(home, *target, method="tools/list")
    (split,) = listed["tools"]
    assert split["outputSchema"]["properties"] == {"head": {"type": "string"}, "rest": {"type": "string"}}
    assert split["annotations"] == {"readOnlyHint": True, "idempotentHint": True}
    called = inspector(home, *target, method="tools/call", tool="split", text="hello big world")
    assert called["structuredContent"] == {"head": "hello", "rest": "big world"}
    assert json.loads(called["content"][0]["text"]) == called["structuredContent"]
    assert called.get("isError") is not True


def test_over_stdio(tmp_path: Path) -> None:
    root = tmp_path / "ws"
    root.mkdir()
    (root / "tools.py").write_text(TOOLS)
    command = [sys.executable, "-m", "mini_agent.cli", "mcp", "--root", str(root), "tools.py"]
    check_list_and_call(tmp_path, command)
    (root / "tools.py").write_text(TOOLS + ADDED)
    assert names(inspector(tmp_path, *command, method="tools/list")) == ["split", "shout"]


def test_over_http(tmp_path: Path) -> None:
    root = tmp_path / "ws"
    root.mkdir()
    (root / "tools.py").write_text(TOOLS)
    with mcp_http(root, "tools.py") as served:
        target = [served.url, "--transport", "http"]
        check_list_and_call(tmp_path, target)
        (root / "tools.py").write_text(TOOLS + ADDED)
        deadline = time.monotonic() + CHANGE_TIMEOUT_SEC
        while (listed := names(inspector(tmp_path, *target, method="tools/list"))) != ["split", "shout"]:
            assert time.monotonic() < deadline, f"still listed: {listed}"
        shouted = inspector(tmp_path, *target, method="tools/call", tool="shout", text="hi")
    assert shouted["structuredContent"] == {"result": "HI"}
