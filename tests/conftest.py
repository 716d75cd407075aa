"""Shared fixtures: a temp copy of the example workspace, a daemon started over real stdio through
pytest-lsp, and a tool host. Helpers live in tests/support; this file also marks each test with its tier
(the folder it is in: unit, integration, e2e, real)."""

from __future__ import annotations

import shutil
from collections.abc import AsyncIterator, Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
import pytest_asyncio
from mini_agent.store.sqlite import SqliteStore
from mini_agent.tools.host import ToolHost
from mini_agent.tools.registry import ToolRegistry

from .support.daemon import EXAMPLE, AgentTestClient, start_daemon

TESTS = Path(__file__).resolve().parent
TIERS = ("unit", "integration", "e2e", "real")


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """Each test carries the marker of its tier, the first folder under tests/ (so `-m unit` works)."""
    for item in items:
        try:
            tier = item.path.resolve().relative_to(TESTS).parts[0]
        except ValueError:
            continue
        if tier in TIERS:
            item.add_marker(getattr(pytest.mark, tier))


@pytest.fixture(autouse=True)
def state_dir(tmp_path_factory: pytest.TempPathFactory, monkeypatch: pytest.MonkeyPatch) -> Path:
    """Each test's own state folder (the trust store): no test reads or writes the user's, and every
    daemon a test starts inherits it through the environment."""
    folder = tmp_path_factory.mktemp("state")
    monkeypatch.setenv("MINI_AGENT_STATE_DIR", str(folder))
    return folder


@pytest.fixture
def workspace(tmp_path: Path) -> Path:
    root = tmp_path / "workspace"
    shutil.copytree(EXAMPLE, root, ignore=shutil.ignore_patterns("__pycache__"))
    return root


@pytest_asyncio.fixture
async def daemon_factory(workspace: Path) -> AsyncIterator[Callable[..., Any]]:
    started: list[AgentTestClient] = []

    async def start(options: dict[str, Any], root: Path | None = None) -> AgentTestClient:
        _, client = await start_daemon(root or workspace, options)
        started.append(client)
        return client

    yield start
    for client in started:
        if client.lsp._server.returncode is None:  # not already shut down (or killed) by the test
            try:
                await client.lsp.shutdown_session()
            except RuntimeError as exc:  # it died just now, before its exit was noticed
                if "exited with return code" not in str(exc):
                    raise
        assert client.schema is not None and client.schema.errors == [], "\n".join(client.schema.errors)


@pytest_asyncio.fixture
async def host(tmp_path: Path) -> AsyncIterator[ToolHost]:
    """Tool host subprocesses over `tmp_path`, with limits a test can reach and name exactly."""
    tool_host = ToolHost(tmp_path, max_output_bytes=65536, max_memory_mb=512)
    yield tool_host
    await tool_host.aclose()


@pytest_asyncio.fixture
async def registry(workspace: Path) -> AsyncIterator[ToolRegistry]:
    """A tool registry over `workspace` (its tool host starts with the first file registered)."""
    tools = ToolRegistry(workspace, timeout_sec=10)
    yield tools
    await tools.aclose()


@pytest.fixture
def db(tmp_path: Path) -> Path:
    """Where a workspace keeps its sessions (the store's tests, in both tiers)."""
    return tmp_path / "ws" / ".mini-agent" / "sessions.db"


@pytest.fixture
def store(db: Path) -> Iterator[SqliteStore]:
    with SqliteStore(db) as opened:
        yield opened
