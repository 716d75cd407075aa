"""The workspaces an ACP agent serves, one per folder a client names (`cwd`).

Each is opened once, with its ACP client: requests that ask for it meanwhile wait for the same
opening, and a request cancelled meanwhile (`$/cancel_request`) leaves it to finish. Its options are
read as this agent reads them: `mini-agent acp --trust`, else the trust the user remembered for it.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING

from acp.schema import FileSystemCapabilities

from mini_agent.acp import checks, editor_fs
from mini_agent.app import config as workspace_config
from mini_agent.app.options import InitOptions

if TYPE_CHECKING:
    from mini_agent.acp.client import AcpClient
    from mini_agent.app.config import WorkspaceConfig
    from mini_agent.app.model_choices import ModelAccess
    from mini_agent.app.workspace import Workspace

log = logging.getLogger("mini_agent.acp")

Pair = tuple["Workspace", "AcpClient"]


class Folders:
    """`client_for(root)` makes a folder's ACP client; `fs()` is what the client said, at
    `initialize`, that it can do with files (its editor tools are registered in each workspace)."""

    def __init__(
        self,
        client_for: Callable[[Path], AcpClient],
        fs: Callable[[], FileSystemCapabilities | None],
        *,
        trusted: bool,
        env: dict[str, str],
        access: ModelAccess | None,
    ) -> None:
        self._client_for = client_for
        self._fs = fs
        self._trusted = trusted
        self._env = env
        self._access = access  # how workspaces reach model servers: over HTTP unless a test says
        self._open: dict[Path, Pair] = {}
        self._opening: dict[Path, asyncio.Future[Pair]] = {}

    def pairs(self) -> list[Pair]:
        """The workspaces open now, each with its client."""
        return list(self._open.values())

    async def get(self, cwd: str) -> Pair:
        """The workspace of `cwd` (an absolute folder, checked), opened once."""
        root = checks.root(cwd)
        pair = self._open.get(root)
        if pair is not None:
            return pair
        opening = self._opening.get(root)
        if opening is None:
            opening = self._opening[root] = asyncio.ensure_future(self._start(root))
            opening.add_done_callback(lambda _: self._opening.pop(root, None))
        return await asyncio.shield(opening)

    async def use_model_servers(self) -> None:
        """Every open workspace takes up the model server set up since (after `authenticate`)."""
        for root, (workspace, _client) in list(self._open.items()):
            options, _config = await self._resolve(root, trusted=workspace.trusted)
            workspace.use_model_server(options)

    async def aclose(self) -> None:
        """Stop every workspace's tool hosts, HTTP session and store."""
        closing = (workspace.aclose() for workspace, _ in self._open.values())
        await asyncio.gather(*closing, return_exceptions=True)

    async def _resolve(self, root: Path, *, trusted: bool = False) -> tuple[InitOptions, WorkspaceConfig]:
        # unsaid: the trust store decides
        request = InitOptions(workspace_trusted=True) if self._trusted or trusted else InitOptions()
        return await asyncio.to_thread(workspace_config.resolve, root, request, self._env)

    async def _start(self, root: Path) -> Pair:
        from mini_agent.app.workspace import Workspace  # the adapters load with the first workspace

        options, config = await self._resolve(root)
        client = self._client_for(root)
        workspace = client.workspace = Workspace(root, options, client, config=config, access=self._access)
        editor_fs.register(workspace.registry, self._fs())
        for problem in await workspace.restore_tools():
            log.warning("could not restore a tool registration: %s", problem)
        if held := workspace.held_back_note():
            log.warning("%s", held)
        pair = self._open[root] = (workspace, client)  # with its tools: no request sees it sooner
        return pair
