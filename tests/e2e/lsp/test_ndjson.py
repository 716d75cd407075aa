"""`mini-agent serve --ndjson` driven from a shell: printf writes one JSON message per line into the
daemon, bash reads its lines back, jq (or python -c where jq is missing) checks them."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path

from ...support.daemon import daemon_env

DRIVER = r"""
set -euo pipefail
if [[ -n "${USE_JQ:-}" ]]; then
  get() { jq -c "$2" <<<"$1"; }
else
  get() {
    "$PYTHON" -c 'import json, re, sys
value = json.loads(sys.argv[1])
for key, index in re.findall(r"\.(\w+)|\[(\d+)\]", sys.argv[2]):
    if key:
        value = value.get(key) if isinstance(value, dict) else None
    else:
        value = value[int(index)] if isinstance(value, list) and int(index) < len(value) else None
print(json.dumps(value, separators=(",", ":")))' "$1" "$2"
  }
fi

coproc DAEMON { exec "$PYTHON" -m mini_agent.cli serve --ndjson 2>daemon.err; }
send() { printf '%s\n' "$1" >&"${DAEMON[1]}"; }
# read lines (keeping each in the transcript) until FILTER on one gives VALUE; print that line
await() {
  local line
  while IFS= read -r -t 60 line <&"${DAEMON[0]}"; do
    printf '%s\n' "$line" >>transcript.ndjson
    if [[ "$(get "$line" "$1")" == "$2" ]]; then printf '%s\n' "$line"; return 0; fi
  done
  echo "no line with $1 == $2" >&2; return 1
}
expect() {  # LINE FILTER VALUE
  local got; got="$(get "$1" "$2")"
  [[ "$got" == "$3" ]] || { echo "expected $2 == $3, got $got in $1" >&2; exit 1; }
}

send '{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"processId":null,"rootUri":"file://'"$WORKSPACE"'","capabilities":{}}}'
reply="$(await .id 1)"
expect "$reply" .result.capabilities.experimental.agent.protocolVersion 1
expect "$reply" .result.serverInfo.name '"mini-agent"'
send '{"jsonrpc":"2.0","method":"initialized","params":{}}'

send 'this is not JSON'
reply="$(await .error.code -32700)"

send '{"jsonrpc":"2.0","id":2,"method":"agent/registerTool","params":{"path":"tools.py"}}'
reply="$(await .id 2)"
expect "$reply" .result.tools[0].name '"list_python_files"'

send '{"jsonrpc":"2.0","id":"three","method":"agent/listTools","params":{}}'
reply="$(await .id '"three"')"
expect "$reply" .result.tools[0].name '"list_python_files"'
expect "$reply" .result.tools[1].name '"count_file_lines"'
expect "$reply" .result.tools[1].inputSchema.required[0] '"file_path"'

send '{"jsonrpc":"2.0","id":4,"method":"agent/nope","params":{}}'
reply="$(await .id 4)"
expect "$reply" .error.code -32601

send '{"jsonrpc":"2.0","id":5,"method":"shutdown"}'
await .id 5 >/dev/null
send '{"jsonrpc":"2.0","method":"exit"}'
wait "$DAEMON_PID"
echo "daemon exited with $?"
"""


def run_driver(workspace: Path, *, use_jq: bool) -> subprocess.CompletedProcess[str]:
    env = daemon_env(PYTHON=sys.executable, WORKSPACE=str(workspace), USE_JQ="1" if use_jq else "")
    return subprocess.run(["bash", "-c", DRIVER], cwd=workspace, env=env, capture_output=True, text=True,
                          timeout=120, check=False)


def check_transcript(workspace: Path, result: subprocess.CompletedProcess[str]) -> None:
    assert result.returncode == 0, result.stderr + (workspace / "daemon.err").read_text()
    assert result.stdout.strip().endswith("daemon exited with 0")
    lines = (workspace / "transcript.ndjson").read_text().splitlines()
    messages = [json.loads(line) for line in lines]  # every line the daemon wrote is one JSON message
    assert all(m["jsonrpc"] == "2.0" for m in messages)
    assert [m["id"] for m in messages if m.get("id") is not None] == [1, 2, "three", 4, 5]
    assert any(m.get("method") == "agent/toolsChanged" for m in messages)


def test_ndjson_over_a_shell_pipe_with_python_checks(workspace: Path) -> None:
    check_transcript(workspace, run_driver(workspace, use_jq=False))


def test_ndjson_over_a_shell_pipe_with_jq(workspace: Path) -> None:
    assert shutil.which("jq") is not None, "jq is missing: scripts/test.sh installs it (apt-get install jq)"
    check_transcript(workspace, run_driver(workspace, use_jq=True))
