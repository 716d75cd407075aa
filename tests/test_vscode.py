"""The VS Code extension: `npm test` in editors/vscode (tsc clean, then node:test suites that drive the
real daemon over stdio with vscode-jsonrpc, the scripted model server playing the model), then `vsce
package` must produce a .vsix.

Node.js >= 20 and npm are requirements, not options: a missing one fails the test. The daemon the
node tests start runs on this interpreter (MINI_AGENT_PYTHON) from this checkout (PYTHONPATH).
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parent.parent
EXTENSION = REPO / "editors" / "vscode"
VSIX = EXTENSION / "mini-agent.vsix"
INSTALL_HINT = "install Node.js >= 20 with npm (e.g. the NodeSource or nvm build of Node 20 LTS)"


def _tool(name: str) -> str:
    found = shutil.which(name)
    if found is None:
        pytest.fail(f"{name} not found: {INSTALL_HINT}")
    return found


def _node_major() -> int:
    version = subprocess.run([_tool("node"), "--version"], capture_output=True, text=True, timeout=30).stdout
    match = re.match(r"v(\d+)\.", version.strip())
    if match is None:
        pytest.fail(f"cannot read the node version from {version!r}")
    return int(match[1])


def _npm(*args: str, timeout: int) -> subprocess.CompletedProcess[str]:
    env = dict(os.environ)
    env["MINI_AGENT_PYTHON"] = sys.executable
    env.pop("OPENAI_API_KEY", None)
    return subprocess.run(
        [_tool("npm"), *args], cwd=EXTENSION, env=env, stdin=subprocess.DEVNULL,
        capture_output=True, text=True, timeout=timeout,
    )


def _check(result: subprocess.CompletedProcess[str], what: str) -> None:
    if result.returncode != 0:
        pytest.fail(f"{what} failed ({result.returncode}):\n{result.stdout[-8000:]}\n{result.stderr[-4000:]}")


def test_extension_builds_tests_and_packages() -> None:
    major = _node_major()
    if major < 20:
        pytest.fail(f"node {major} is too old: {INSTALL_HINT}")
    if not (EXTENSION / "node_modules").is_dir():
        _check(_npm("ci", "--no-audit", "--no-fund", timeout=600), "npm ci")

    tested = _npm("test", timeout=600)
    _check(tested, "npm test")
    summary = dict(re.findall(r"^ℹ (tests|pass|fail) (\d+)$", tested.stdout, re.MULTILINE))
    assert summary.get("fail") == "0" and int(summary.get("pass", "0")) > 0, tested.stdout[-4000:]

    VSIX.unlink(missing_ok=True)
    _check(_npm("run", "package", timeout=300), "vsce package")
    with zipfile.ZipFile(VSIX) as vsix:
        names = set(vsix.namelist())
    assert "extension/out/src/extension.js" in names
    assert "extension/node_modules/vscode-languageclient/package.json" in names
    assert not any(name.startswith("extension/out/test/") for name in names)


def test_packaged_extension_in_real_vs_code() -> None:
    """The .vsix installed in code-server (VS Code 1.100.3) with headless Chromium: it asks a question
    and the trace view must have received the thought, the tool call, the real observation and the answer.
    The script installs what it needs (apt, npm; cached between runs) and exits non-zero on any failure."""
    if not VSIX.exists():
        _check(_npm("run", "package", timeout=300), "vsce package")
    env = {**os.environ, "MINI_AGENT_PYTHON": sys.executable}
    result = subprocess.run(
        ["bash", str(EXTENSION / "scripts" / "e2e-code-server.sh")], cwd=EXTENSION, env=env,
        stdin=subprocess.DEVNULL, capture_output=True, text=True, timeout=1500,
    )
    _check(result, "code-server end-to-end")
    assert "PASS:" in result.stdout, result.stdout[-4000:]
