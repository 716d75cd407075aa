"""`agent/trustWorkspace` and `agent/untrustWorkspace`: the folder trusted in this daemon, and recorded in
(or forgotten from) the user's trust store (`app.trust`) for the daemons after it. `handlers` makes
them for `server.method`; the domain modules load with the first call, as the other handlers' do.

`ask_to_trust` is the question the `/trust` command puts first, as the client's own prompt
(`window/showMessageRequest` with three actions): the folder is trusted only on "Trust for this
session" or "Always trust this folder", and remembered only on the latter."""

from __future__ import annotations

import asyncio
import logging
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
Ask = Callable[[str, Any], Awaitable[Any]]  # a request to the client, its answer as plain JSON

log = logging.getLogger(__name__)

ONCE, ALWAYS, REJECT = "Trust for this session", "Always trust this folder", "Don't trust"


async def ask_to_trust(ask: Ask, workspace: Workspace) -> bool | None:
    """Ask the person whether to trust the folder: None unless they allowed it (declined, dismissed,
    or a client that cannot ask), else whether to remember it."""
    words = workspace.held_back()
    if words:
        runs = "; ".join(words)
        message = f"mini-agent: trust {workspace.root}? {workspace.config.source} asks to run: {runs}"
    else:
        message = (
            f"mini-agent: trust {workspace.root}? What its workspace file names (tools, MCP servers, "
            "a model server, standing approvals) will then load without asking."
        )
    actions = [types.MessageActionItem(title=title) for title in (ONCE, ALWAYS, REJECT)]
    params = types.ShowMessageRequestParams(type=types.MessageType.Warning, message=message, actions=actions)
    try:
        answer = await ask(types.WINDOW_SHOW_MESSAGE_REQUEST, params)
    except Exception as exc:  # a client that cannot ask: not trusted
        log.warning("the question whether to trust %s got no answer: %s", workspace.root, exc)
        return None
    title = answer.get("title") if isinstance(answer, dict) else getattr(answer, "title", None)
    return None if title not in (ONCE, ALWAYS) else title == ALWAYS


def handlers(ls: LanguageServer) -> tuple[Handler, Handler]:
    """The two handlers of server `ls`: its `initializationOptions` are re-read as trusted, and the
    problems met go to the user as `window/showMessage`."""

    def show_error(message: str) -> None:
        ls.window_show_message(types.ShowMessageParams(types.MessageType.Error, f"mini-agent: {message}"))

    async def trust_workspace(workspace: Workspace, p: TrustParams) -> dict[str, Any]:
        """Trust the folder in this daemon (its workspace file's tools, MCP servers, model server and
        allow-list too); `remember` also records it in the trust store for every later daemon."""
        from mini_agent.lsp import wire
        from mini_agent.lsp.params import init_options

        sent = init_options(getattr(ls, "init_options", None))
        trusted = await workspace.trust_folder(sent, os.environ, remember=p.remember)
        if trusted.unremembered is not None:
            show_error(f"the folder is trusted, but could not be remembered: {trusted.unremembered}")
        for problem in trusted.problems:
            show_error(f"could not restore a tool registration: {problem}")
        return {"tools": wire.tool_list(workspace.tool_list()), "remembered": trusted.remembered}

    async def untrust_workspace(workspace: Workspace, p: object) -> dict[str, Any]:
        """Forget the folder in the trust store (the next daemon asks again); this daemon stays as is."""
        was = await asyncio.to_thread(trust.forget, workspace.root)
        return {"forgotten": was is not None, "wouldRun": was or []}

    return trust_workspace, untrust_workspace
