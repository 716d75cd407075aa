"""Start-up: `initialize` is answered before the protocol stack loads, with pygls' own answer."""

from __future__ import annotations

import asyncio
import contextlib
import os
import subprocess
import sys
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest
from mini_agent_client.rpc import Connection

from ...support.clients import CLIENTS
from ...support.daemon import DAEMON, daemon_env

# An lsprotocol that waits for a gate file before it loads the real one: a daemon that needs it to
# answer initialize cannot answer while the gate is shut.
GATED_LSPROTOCOL = """
import importlib, os, sys, time
while not os.path.exists({gate!r}):
    time.sleep(0.02)
sys.path.remove({shim!r})
del sys.modules["lsprotocol"]
sys.modules["lsprotocol"] = importlib.import_module("lsprotocol")
"""

@contextlib.asynccontextmanager
async def daemon(root: Path, env: dict[str, str], stderr: Path | None = None) -> AsyncIterator[Connection]:
    log = stderr.open("wb") if stderr is not None else None
    process = await asyncio.create_subprocess_exec(
        *DAEMON, stdin=asyncio.subprocess.PIPE, stdout=asyncio.subprocess.PIPE, stderr=log, env=env, cwd=root
    )
    assert process.stdin is not None and process.stdout is not None
    connection = Connection(process.stdout, process.stdin)
    connection.start()
    try:
        yield connection
    finally:
        process.kill()
        await process.wait()
        await connection.close()
        if log is not None:
            log.close()


def initialize_params(root: Path, capabilities: dict[str, Any]) -> dict[str, Any]:
    return {"processId": os.getpid(), "rootUri": root.as_uri(), "capabilities": capabilities,
            "initializationOptions": {"store": {"enabled": False}}}


@pytest.mark.asyncio
async def test_initialize_is_answered_before_lsprotocol_loads(workspace: Path, tmp_path: Path) -> None:
    shim, gate = tmp_path / "shim", tmp_path / "gate"
    (shim / "lsprotocol").mkdir(parents=True)
    (shim / "lsprotocol" / "__init__.py").write_text(GATED_LSPROTOCOL.format(gate=str(gate), shim=str(shim)))
    env = daemon_env()
    env["PYTHONPATH"] = os.pathsep.join([str(shim), env["PYTHONPATH"]])
    async with daemon(workspace, env) as connection:
        asked = connection.request("initialize", initialize_params(workspace, {}))
        answer = await asyncio.wait_for(asked, 60)
        assert answer["capabilities"]["experimental"]["agent"]["protocolVersion"] == 1
        gate.touch()  # now the rest may load, and the daemon serves as usual
        await connection.notify("initialized", {})
        registered = await connection.request("agent/registerTool", {"path": "metrics.py"})
        assert registered["tools"]


@pytest.mark.asyncio
@pytest.mark.parametrize("client", sorted(CLIENTS))
async def test_the_early_answer_is_the_answer_pygls_gives(
    client: str, workspace: Path, tmp_path: Path
) -> None:
    params = initialize_params(workspace, CLIENTS[client])
    stderr = tmp_path / "daemon.stderr"
    async with daemon(workspace, daemon_env(), stderr) as connection:
        early = await connection.request("initialize", params)
        await connection.notify("initialized", {})
        await connection.request("agent/listTools", {})  # pygls has handled initialize by now
    assert "answered early" not in stderr.read_text()  # the daemon's own check found no difference
    async with daemon(workspace, daemon_env()) as connection:
        await connection.notify("$/setTrace", {"value": "off"})  # not initialize first: pygls answers it
        from_pygls = await connection.request("initialize", params)
        await connection.notify("initialized", {})
        assert (await connection.request("agent/registerTool", {"path": "metrics.py"}))["tools"]
    assert early == from_pygls


def test_what_answers_initialize_early_loads_no_event_loop_and_no_protocol_stack() -> None:
    """The early answer waits for none of them: no event loop, no pygls, no lsprotocol, no pydantic."""
    banned = ("asyncio", "pygls", "lsprotocol", "pydantic")
    probe = f"import sys, mini_agent.lsp.boot; print([m for m in {banned!r} if m in sys.modules])"
    out = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, check=True).stdout
    assert out.strip() == "[]"
