#!/usr/bin/env bash
# End to end in a real VS Code: code-server 4.100.3 (VS Code 1.100.3, the newest on Node 20) with the
# packaged .vsix, driven by test/e2e/ui.ts through Chromium's DevTools protocol (playwright-core over
# Debian's chromium-headless-shell) as a user drives it: command palette, input box, notification
# buttons, Enter; it reads what the user sees from the workbench and the trace webview's DOM. The
# extension finds the daemon through the workspace's .venv/bin/mini-agent and the scripted model
# server plays the model.
#
# Heavy: apt packages (libkrb5-dev ripgrep chromium-headless-shell) and ~300 MB of npm. Run as root
# (apt, npm --unsafe-perm). scripts/test.sh runs it through tests/e2e/editors/test_vscode.py.
#
#   editors/vscode/scripts/e2e-code-server.sh            # uses the repo's .venv python
#   MINI_AGENT_PYTHON=/path/to/python editors/vscode/scripts/e2e-code-server.sh
set -euo pipefail

HERE="$(cd "$(dirname "$0")/.." && pwd)"
REPO="$(cd "$HERE/../.." && pwd)"
PYTHON="${MINI_AGENT_PYTHON:-$REPO/.venv/bin/python}"
CACHE="${E2E_CACHE:-$HOME/.cache/mini-agent-vscode-e2e}"
CODE_SERVER_VERSION=4.100.3
RG_VERSION=v13.0.0-10
TIMEOUT_S="${E2E_TIMEOUT_S:-180}"
START=$(date +%s)
stamp() { echo "[e2e +$(( $(date +%s) - START ))s] $*"; }

# -- install (cached in $E2E_CACHE, default ~/.cache/mini-agent-vscode-e2e) ---------------------------------------------------------
need_apt=()
command -v rg >/dev/null || need_apt+=(ripgrep)
dpkg -s libkrb5-dev >/dev/null 2>&1 || need_apt+=(libkrb5-dev)
command -v chromium-headless-shell >/dev/null || need_apt+=(chromium-headless-shell)
if [ ${#need_apt[@]} -gt 0 ]; then
  stamp "apt-get install ${need_apt[*]}"
  apt-get update -qq
  DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "${need_apt[@]}" >/dev/null
fi
CODE_SERVER="$CACHE/code-server/node_modules/.bin/code-server"
if [ ! -x "$CODE_SERVER" ]; then
  stamp "npm install code-server@$CODE_SERVER_VERSION"
  # @vscode/ripgrep would download rg from GitHub: give it apt's rg in the cache it looks in first.
  TMP_CACHE="${TMPDIR:-/tmp}/vscode-ripgrep-cache-1.15.11"
  mkdir -p "$TMP_CACHE" "$CACHE/rg"
  cp "$(command -v rg)" "$CACHE/rg/rg"
  tar -czf "$TMP_CACHE/ripgrep-$RG_VERSION-x86_64-unknown-linux-musl.tar.gz" -C "$CACHE/rg" rg
  mkdir -p "$CACHE/code-server"
  (cd "$CACHE/code-server" && [ -f package.json ] || echo '{"private": true}' > package.json)
  (cd "$CACHE/code-server" && npm_config_yes=true npm install --unsafe-perm --no-audit --no-fund \
    "code-server@$CODE_SERVER_VERSION" >"$CACHE/npm-install.log" 2>&1) || { tail -40 "$CACHE/npm-install.log"; exit 1; }
fi
stamp "code-server $("$CODE_SERVER" --version 2>/dev/null | grep -m1 -E '^[0-9]')"

# -- package the extension (esbuild bundle) and compile the UI driver ---------------------------------
(cd "$HERE" && { [ node_modules/.package-lock.json -nt package-lock.json ] || npm ci --no-audit --no-fund; } && npm run -s compile && \
  npx vsce package --no-dependencies --allow-missing-repository -o "$CACHE/mini-agent.vsix" </dev/null >/dev/null)
stamp "packaged $CACHE/mini-agent.vsix"

# -- workspace, model server, settings ---------------------------------------------------------------
RUN="$(mktemp -d /tmp/mini-agent-e2e-XXXXXX)"
WS="$RUN/workspace"
cp -r "$REPO/server/mini_agent/examples/workspace" "$WS"
rm -rf "$WS/__pycache__"
mkdir -p "$WS/.venv/bin"
cat >"$WS/.venv/bin/mini-agent" <<EOF
#!/bin/sh
PYTHONPATH="$REPO/server:$REPO/clients/python" exec "$PYTHON" -c "import sys; from mini_agent.cli.main import main; sys.exit(main())" "\$@"
EOF
chmod +x "$WS/.venv/bin/mini-agent"

# A tool that needs approval; the user rejects it, so notes.txt must survive.
cat >"$WS/danger.py" <<'EOF'
"""A tool that needs the user's approval."""

import os

from mini_agent import tool


@tool(requires_approval=True)
def delete_file(file_path: str) -> str:
    """Delete a file of the workspace.

    Args:
        file_path: The file to delete, relative to the workspace root.
    """
    os.remove(file_path)
    return f"deleted {file_path}"
EOF
echo "keep me" >"$WS/notes.txt"

# A tool that prints while it runs: it holds after its third line until the UI driver writes "go".
cp "$HERE/test/fixtures/slow.py" "$WS/slow.py"  # a tool that prints while it runs

# (After the rejected delete, one whose arguments and answer carry a command link and escape sequences.)
# A run and its follow-up (whose answer quotes the first turn's tool result: only the same conversation
# has it), a second follow-up carrying a pasted image (its answer quotes the user message the model got,
# where the daemon's note stands for the image in react mode), a run of the printing tool (the /tools command after it takes no turn), a second run; the
# third meets a dead model server, and its Retry (after the URL is fixed) gets an answer; then one run on the model picked in the status bar (the server lists "replay-large"),
# and one in "Ask before every tool call" that counts lines; then one that calls the MCP server asking for a name,
# and one that calls the MCP server behind OAuth.
cat >"$RUN/script.json" <<'EOF'
{"model": "replay-large", "turns": [
  {"content": "Thought: I should count the lines of schema.py.\nAction: count_file_lines\nAction Input: {\"file_path\": \"schema.py\"}"},
  {"content": "Thought: I have the count.\nFinal Answer: schema.py has {last_observation} non-empty lines."},
  {"content": "Thought: I counted them before.\nFinal Answer: You asked “{last_user}”; schema.py had {last_observation} non-empty lines then."},
  {"content": "Thought: I cannot see it.\nFinal Answer: I was told “{last_user}”"},
  {"content": "Thought: I will print some lines.\nAction: slow_print\nAction Input: {\"lines\": 5}"},
  {"content": "Thought: It printed them.\nFinal Answer: the tool said {last_observation}"},
  {"content": "Thought: I will delete it.\nAction: delete_file\nAction Input: {\"file_path\": \"notes.txt\"}"},
  {"content": "Thought: I may not.\nFinal Answer: I did not delete notes.txt: {last_observation}"},
  {"content": "Thought: I will delete it.\nAction: delete_file\nAction Input: {\"file_path\": \"[x](command:workbench.action.terminal.new) \\u001b]0;owned\\u0007\"}"},
  {"content": "Final Answer: [x](command:workbench.action.terminal.new) \u001b]52;c;cHduZWQ=\u0007 \u001b[8mhidden\u001b[0m done"},
  {"content": "Final Answer: back again"},
  {"content": "Final Answer: the picked model answered"},
  {"content": "Thought: I should count the lines of schema.py.\nAction: count_file_lines\nAction Input: {\"file_path\": \"schema.py\"}"},
  {"content": "Thought: I have the count.\nFinal Answer: schema.py has {last_observation} non-empty lines."},
  {"content": "Thought: I will ask for the name.\nAction: greeter_ask_name\nAction Input: {}"},
  {"content": "Final Answer: {last_observation}"},
  {"content": "Thought: I will ask the server who I am.\nAction: oauth_whoami\nAction Input: {}"},
  {"content": "Final Answer: {last_observation}"}
]}
EOF
# The MCP server that asks the user (form mode) and records each answer; ui.ts puts this file in the
# workspace for its elicitation part, so the parts before it run without the server.
cat >"$RUN/elicit.toml" <<EOF
[[tool.mini-agent.mcp_servers]]
name = "greeter"
command = "$PYTHON"
args = ["$REPO/tests/support/eliciting_mcp_server.py", "$RUN/answers.txt"]
requires_approval = false
EOF
# The MCP server behind OAuth (its authorization server approves at once), on IPv6 loopback: code-server
# turns an external link to 127.0.0.1:PORT or localhost:PORT into its own /proxy/PORT/ (dropping the
# path and query), so the sign-in page must be elsewhere. ui.ts puts this file in the workspace for its
# sign-in part; tokens go to $RUN/state (MINI_AGENT_STATE_DIR of the daemon code-server starts).
OAUTH_PORT=$(( 40000 + RANDOM % 20000 ))
OAUTH_URL="http://[::1]:$OAUTH_PORT/mcp"
cat >"$RUN/oauth.toml" <<EOF
[[tool.mini-agent.mcp_servers]]
type = "http"
name = "oauth"
url = "$OAUTH_URL"
requires_approval = false
EOF
pids=()
cleanup() {
  status=$?
  for pid in "${pids[@]}"; do kill -- "-$pid" 2>/dev/null || true; done
  if [ $status -eq 0 ]; then rm -rf "$RUN"; else echo "kept $RUN for a look"; fi
}
trap cleanup EXIT

setsid env PYTHONPATH="$REPO/server:$REPO/clients/python" "$PYTHON" -m mini_agent.scripted --script "$RUN/script.json" \
  >"$RUN/replay.out" 2>"$RUN/replay.err" &
pids+=($!)
for _ in $(seq 100); do [ -s "$RUN/replay.out" ] && break; sleep 0.1; done
BASE_URL="$(head -1 "$RUN/replay.out")"
stamp "replay model server at $BASE_URL"

setsid "$PYTHON" "$REPO/tests/support/oauth_mcp_server.py" "$OAUTH_PORT" "$RUN/issued.txt" --host ::1 \
  >"$RUN/oauth.log" 2>&1 &
pids+=($!)
for _ in $(seq 100); do curl -fsg "http://[::1]:$OAUTH_PORT/.well-known/oauth-authorization-server" >/dev/null 2>&1 && break; sleep 0.1; done
stamp "OAuth-protected MCP server at $OAUTH_URL"

DATA="$RUN/user-data"
mkdir -p "$DATA/User" "$DATA/Machine"
cat >"$DATA/User/settings.json" <<EOF
{
  "security.workspace.trust.enabled": false,
  "workbench.startupEditor": "none",
  "workbench.tips.enabled": false,
  "miniAgent.baseUrl": "$BASE_URL",
  "miniAgent.model": "replay",
  "miniAgent.logLevel": "info"
}
EOF
cp "$DATA/User/settings.json" "$DATA/Machine/settings.json"

CS_ARGS=(--user-data-dir "$DATA" --extensions-dir "$RUN/extensions")
"$CODE_SERVER" "${CS_ARGS[@]}" --install-extension "$CACHE/mini-agent.vsix" >"$RUN/install.log" 2>&1 || { cat "$RUN/install.log"; exit 1; }
stamp "extension installed"

PORT=$(( 20000 + RANDOM % 20000 ))
setsid env MINI_AGENT_STATE_DIR="$RUN/state" "$CODE_SERVER" "${CS_ARGS[@]}" --auth none --bind-addr "127.0.0.1:$PORT" --disable-telemetry \
  --disable-update-check --disable-workspace-trust "$WS" >"$RUN/code-server.log" 2>&1 &
pids+=($!)
for _ in $(seq 300); do curl -fs "http://127.0.0.1:$PORT/healthz" >/dev/null 2>&1 && break; sleep 0.2; done
stamp "code-server on port $PORT"

stamp "driving the UI"
if ! E2E_USER_DATA="$DATA" E2E_ELICIT_CONFIG="$RUN/elicit.toml" E2E_ANSWERS="$RUN/answers.txt" \
  E2E_OAUTH_CONFIG="$RUN/oauth.toml" E2E_OAUTH_URL="$OAUTH_URL" E2E_STATE="$RUN/state" node "$HERE/out/test/e2e/ui.js" "http://127.0.0.1:$PORT/?folder=$WS" "$WS"; then
  find "$DATA/logs" -name '*Mini Agent*' -exec sh -c 'echo "--- $1"; tail -40 "$1"' _ {} \; 2>/dev/null || true
  exit 1
fi
stamp "done"
