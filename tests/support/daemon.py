"""The daemon as the tests start it: from the source tree, over real stdio through pytest-lsp, every
frame checked against the published schema; plus the repository's paths."""

from __future__ import annotations

import os
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

from lsprotocol import types
from pytest_lsp import ClientServerConfig, LanguageClient

from .schema_check import FrameChecker, attach

ROOT = Path(__file__).resolve().parents[2]
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
