"""The VS Code extension: `npm test` in editors/vscode (tsc clean, then node:test suites that drive the
real daemon over stdio with vscode-jsonrpc, the scripted model server playing the model), then `vsce
package` must produce a .vsix.

Node.js >= 20 and npm are requirements, not options: a missing one fails the test. The daemon the
node tests start runs on this interpreter (MINI_AGENT_PYTHON) from this checkout (PYTHONPATH).
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[3]
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
    installed = EXTENSION / "node_modules" / ".package-lock.json"
    locked = (EXTENSION / "package-lock.json").stat().st_mtime
    if not installed.exists() or installed.stat().st_mtime < locked:
        _check(_npm("ci", "--no-audit", "--no-fund", timeout=600), "npm ci")

    tested = _npm("test", timeout=600)
    _check(tested, "npm test")
    summary = dict(re.findall(r"^ℹ (tests|pass|fail) (\d+)$", tested.stdout, re.MULTILINE))
    assert summary.get("fail") == "0" and int(summary.get("pass", "0")) > 0, tested.stdout[-4000:]

    VSIX.unlink(missing_ok=True)
    packaged = _npm("run", "package", timeout=300)
    _check(packaged, "vsce package")
    assert "WARNING" not in packaged.stdout + packaged.stderr, packaged.stdout[-4000:]
    with zipfile.ZipFile(VSIX) as vsix:
        scripts = sorted(name for name in vsix.namelist() if name.endswith(".js"))
        manifest = json.loads(vsix.read("extension/package.json"))
    # One esbuild bundle besides the trace view's own script: no node_modules, no tsc output.
    assert scripts == ["extension/dist/extension.js", "extension/media/trace.js"], scripts
    assert manifest["main"] == "./dist/extension.js"
    settings = manifest["contributes"]["configuration"]["properties"]
    assert not any(key.startswith("miniAgent.test.") for key in settings)


def test_packaged_extension_in_real_vs_code() -> None:
    """The .vsix installed in code-server (VS Code 1.100.3), driven through Chromium's DevTools protocol as a
    user drives it (test/e2e/ui.ts): register from the palette, ask in the input box, ask a follow-up that
    stays in the same session, paste a screenshot into the trace view (a paste event carrying a PNG file in
    the webview's frame; a text paste does nothing, a bmp is refused in words) and ask a follow-up that
    carries it to the daemon (its note for the image reaches the model in react mode), watch a workspace
    tool's printed lines grow under its running call and fold when it ends, complete and send the /tools
    command in the input box, start new conversations, reject a call with Enter after seeing its arguments
    beside the picker, see a command link and escape sequences from the model (in a call's arguments and in
    the answer) shown as plain text in the notifications, find the daemon's INFO log line as [info] in the
    output channel, meet a model error, pick the model in the status bar (the next request names it) and "Ask
    before every tool call" (a read-only tool then asks), type a name into the input box an MCP server's
    elicitation opens (the server records "hello Ada"), sign in to an MCP server behind OAuth (its page opens
    in a new browser tab and completes; the tool's answer says "signed in"), and meet a wrong daemon path;
    each check reads the workbench and trace webview DOM (and the channel's file). The script installs what
    it needs (apt, npm; cached between runs) and exits non-zero on any failure.
    """
    if not VSIX.exists():
        _check(_npm("run", "package", timeout=300), "vsce package")
    env = {**os.environ, "MINI_AGENT_PYTHON": sys.executable}
    result = subprocess.run(
        ["bash", str(EXTENSION / "scripts" / "e2e-code-server.sh")], cwd=EXTENSION, env=env,
        stdin=subprocess.DEVNULL, capture_output=True, text=True, timeout=1500,
    )
    _check(result, "code-server end-to-end")
    passed = re.findall(r"^PASS (\w[\w -]*):", result.stdout, re.MULTILINE)
    journey = ["ask", "follow-up", "pasted image", "live output", "slash command", "approval", "inert text"]
    journey += ["daemon log", "model error"]
    journey += ["model picker", "permission mode", "elicitation", "oauth sign-in", "wrong path"]
    assert passed == journey, result.stdout[-4000:]
