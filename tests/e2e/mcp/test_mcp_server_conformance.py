"""The official MCP conformance suite's server scenarios against `mini-agent mcp --http`, serving
tests/support/conformance_tools.py; the verdicts are the suite's own (its checks.json).

Scenarios left out, and why:
- tools-call-image, tools-call-audio, tools-call-embedded-resource, tools-call-mixed-content: a
  workspace function returns a JSON value (a text block, and structured content), never media blocks.
- tools-call-sampling, tools-call-elicitation, elicitation-sep1034-defaults, elicitation-sep1330-enums:
  a served function runs in an isolated tool host and has no channel back to the client.
- tools-call-with-logging, logging-set-level: a tool's prints go to the server's log (stderr), not to
  MCP logging; `logging/setLevel` is not offered.
- resources-*, prompts-*, completion-complete: a tool server offers no resources, prompts or completions.
- server-sse-polling: its `test_reconnection` tool closes the SSE stream mid-call, a transport action
  a workspace function cannot take; resuming would also need an event store, and none is kept.
"""

from __future__ import annotations

import json
import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest

from ...support.daemon import ROOT, daemon_env
from ...support.mcp_http import mcp_http, node_path

CONFORMANCE = ROOT / ".venv" / "conformance" / "node_modules" / ".bin" / "conformance"
TOOLS = Path(__file__).parents[2] / "support" / "conformance_tools.py"
SCENARIO_TIMEOUT_SEC = 120  # one scenario's run; past it the test fails
SCENARIOS = {
    "server-initialize": {"server-initialize"},
    "ping": {"ping"},
    "tools-list": {"tools-list"},
    "tools-call-simple-text": {"tools-call-simple-text"},
    "tools-call-error": {"tools-call-error"},
    "tools-call-with-progress": {"tools-call-with-progress"},
    "json-schema-2020-12": {
        "json-schema-2020-12-tool-found",
        "json-schema-2020-12-$schema",
        "json-schema-2020-12-$defs",
        "json-schema-2020-12-additionalProperties",
    },
    "dns-rebinding-protection": {"localhost-host-rebinding-rejected", "localhost-host-valid-accepted"},
    "server-sse-multiple-streams": {"server-accepts-multiple-post-streams", "server-sse-streams-functional"},
}


@pytest.fixture(scope="module")
def url() -> Iterator[str]:
    with mcp_http(TOOLS.parent, TOOLS.name) as served:
        yield served.url


@pytest.mark.parametrize(("scenario", "expected"), SCENARIOS.items(), ids=list(SCENARIOS))
def test_server_scenario(scenario: str, expected: set[str], url: str, tmp_path: Path) -> None:
    command = [str(CONFORMANCE), "server", "--url", url, "--scenario", scenario, "-o", str(tmp_path)]
    env = daemon_env(PATH=node_path())
    done = subprocess.run(command, env=env, capture_output=True, text=True, timeout=SCENARIO_TIMEOUT_SEC)
    (results,) = tmp_path.glob("*/checks.json")
    verdicts = {c["id"]: c for c in json.loads(results.read_text()) if c["status"] != "INFO"}
    assert set(verdicts) == expected, done.stdout + done.stderr
    failed = {k: c for k, c in verdicts.items() if c["status"] != "SUCCESS"}
    assert failed == {}, json.dumps(failed, indent=1)
    assert done.returncode == 0, done.stdout + done.stderr
