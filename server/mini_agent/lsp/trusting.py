"""`agent/trustWorkspace` and `agent/untrustWorkspace`: the folder trusted in this daemon, and recorded in
(or forgotten from) the user's trust store (`app.trust`) for the daemons after it. `handlers` makes
them for `server.method`; the domain modules load with the first call, as the other handlers' do."""

from __future__ import annotations

import asyncio
import os
from collections.abc import Awaitable, Callable
from typing import TYPE_CHECKING, Any

from lsprotocol import types

from mini_agent.app import trust

if TYPE_CHECKING:
    from pygls.lsp.server import LanguageServer

    from mini_agent.app.workspace import Workspace
    from mini_agent.lsp.params import TrustParams

Handler = Callable[["Workspace", Any], Awaitable[dict[str, Any]]]


def handlers(ls: LanguageServer) -> tuple[Handler, Handler]:
    """The two handlers of server `ls`: its `initializationOptions` are re-read as trusted, and the
    problems met go to the user as `window/showMessage`."""

    def show_error(message: str) -> None:
        ls.window_show_message(types.ShowMessageParams(types.MessageType.Error, f"mini-agent: {message}"))

    async def trust_workspace(daemon: Workspace, p: TrustParams) -> dict[str, Any]:
        """Trust the folder in this daemon (its workspace file's tools, MCP servers, model server and
        allow-list too); `remember` also records it in the trust store for every later daemon."""
        from mini_agent.lsp import wire

        sent = getattr(ls, "init_options", None)
        request = sent if isinstance(sent, dict) else None
        trusted = await daemon.trust_folder(request, os.environ, remember=p.remember)
        if trusted.unremembered is not None:
            show_error(f"the folder is trusted, but could not be remembered: {trusted.unremembered}")
        for problem in trusted.problems:
            show_error(f"could not restore a tool registration: {problem}")
        return {"tools": wire.tool_list(daemon.tool_list()), "remembered": trusted.remembered}

    async def untrust_workspace(daemon: Workspace, p: object) -> dict[str, Any]:
        """Forget the folder in the trust store (the next daemon asks again); this daemon stays as is."""
        was = await asyncio.to_thread(trust.forget, daemon.root)
        return {"forgotten": was is not None, "wouldRun": was or []}

    return trust_workspace, untrust_workspace
