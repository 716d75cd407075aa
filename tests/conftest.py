"""Shared fixtures: a temp copy of the example workspace, a replay model server, a daemon started
over real stdio through pytest-lsp, and a tool host (with helpers to call it and to watch processes)."""

from __future__ import annotations

import asyncio
import os
import shutil
import sys
from collections.abc import AsyncIterator, Callable
from pathlib import Path
from typing import Any

import pytest
import pytest_asyncio
from lsprotocol import types
from mini_agent.tools.host import CallResult, ToolHost
from pytest_lsp import ClientServerConfig, LanguageClient

from .schema_check import FrameChecker, attach

ROOT = Path(__file__).resolve().parents[1]
EXAMPLE = ROOT / "server" / "mini_agent" / "examples" / "workspace"
DAEMON = [sys.executable, "-m", "mini_agent"]


def daemon_env(**extra: str) -> dict[str, str]:
    """The daemon runs from the source tree whether or not the package is installed."""
    paths = [str(ROOT / "server"), str(ROOT / "clients" / "python")]
    if os.environ.get("PYTHONPATH"):
        paths.append(os.environ["PYTHONPATH"])
    return {**os.environ, "PYTHONPATH": os.pathsep.join(paths), **extra}


def plain(value: Any) -> Any:
    """pygls hands custom results and notifications over as namedtuples; tests compare plain JSON."""
    if hasattr(value, "_asdict"):
        return {key: plain(item) for key, item in value._asdict().items()}
    if isinstance(value, list | tuple):
        return [plain(item) for item in value]
    return value


@pytest.fixture
def workspace(tmp_path: Path) -> Path:
    root = tmp_path / "workspace"
    shutil.copytree(EXAMPLE, root, ignore=shutil.ignore_patterns("__pycache__"))
    return root


class AgentTestClient:
    """A pytest-lsp client plus what the daemon streamed to it."""

    def __init__(self, client: LanguageClient) -> None:
        self.lsp = client
        self.updates: list[dict[str, Any]] = []
        self.tools_changed: list[dict[str, Any]] = []
        self.permission_answer: Callable[[dict[str, Any]], dict[str, Any]] | None = None
        self.permission_requests: list[dict[str, Any]] = []
        self.schema: FrameChecker | None = None

    async def request(self, method: str, params: Any) -> Any:
        return plain(await self.lsp.protocol.send_request_async(method, params))

    def kinds(self, session_id: str) -> list[str]:
        return [u["update"]["kind"] for u in self.updates if u["sessionId"] == session_id]


async def start_daemon(workspace: Path, options: dict[str, Any]) -> tuple[Any, AgentTestClient]:
    config = ClientServerConfig(server_command=DAEMON, server_env=daemon_env())
    lsp = await config.start()
    client = AgentTestClient(lsp)
    client.schema = attach(lsp.protocol, FrameChecker())  # every frame checked against the published schema

    @lsp.feature("agent/update")
    def on_update(params: Any) -> None:
        client.updates.append(plain(params))

    @lsp.feature("agent/toolsChanged")
    def on_tools_changed(params: Any) -> None:
        client.tools_changed.append(plain(params))

    @lsp.feature("agent/requestPermission")
    async def on_permission(params: Any) -> Any:
        client.permission_requests.append(plain(params))
        if client.permission_answer is None:
            raise RuntimeError("no decision from this client")
        return client.permission_answer(plain(params))

    await lsp.initialize_session(
        types.InitializeParams(
            capabilities=types.ClientCapabilities(),
            root_uri=workspace.as_uri(),
            initialization_options=options,
        )
    )
    return config, client


@pytest_asyncio.fixture
async def daemon_factory(workspace: Path) -> AsyncIterator[Callable[..., Any]]:
    started: list[AgentTestClient] = []

    async def start(options: dict[str, Any], root: Path | None = None) -> AgentTestClient:
        _, client = await start_daemon(root or workspace, options)
        started.append(client)
        return client

    yield start
    for client in started:
        if client.lsp._server.returncode is None:  # not already shut down by the test
            await client.lsp.shutdown_session()
        assert client.schema is not None and client.schema.errors == [], "\n".join(client.schema.errors)


@pytest_asyncio.fixture
async def host(tmp_path: Path) -> AsyncIterator[ToolHost]:
    """Tool host subprocesses over `tmp_path`, with limits a test can reach and name exactly."""
    tool_host = ToolHost(tmp_path, max_output_bytes=65536, max_memory_mb=512)
    yield tool_host
    await tool_host.aclose()


async def call(
    host: ToolHost, path: Path, function: str, /, timeout: float = 30.0, **arguments: object
) -> CallResult:
    return await host.call(path, function, tool_name=function, arguments=arguments, timeout=timeout)


def process_gone(pid: int) -> bool:
    """Gone, or a zombie waiting to be reaped (it runs nothing any more)."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except FileNotFoundError:
        return True
    return stat.rsplit(")", 1)[1].split()[0] in ("Z", "X")


async def wait_until(predicate: object, what: str) -> None:
    for _ in range(1000):
        if callable(predicate) and predicate():
            return
        await asyncio.sleep(0.01)
    raise AssertionError(f"gave up waiting: {what}")
