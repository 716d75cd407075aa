"""The LSP door's session configuration methods: the models to choose from, and a session's model,
permission mode and tool mode, as `server.method` handlers (it registers them).

Standard library only at import: `server` imports this module before anything else loads."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from mini_agent.app.workspace import Workspace
    from mini_agent.lsp.params import ConfigureSessionParams, ListModelsParams


async def list_models(workspace: Workspace, p: ListModelsParams) -> dict[str, Any]:
    """The models the model server lists (asked once, `refresh` asks again), or the configured one
    alone and why."""
    from mini_agent.lsp import wire

    return wire.model_choices(await workspace.list_models(p.base_url, refresh=p.refresh))


async def configure_session(workspace: Workspace, p: ConfigureSessionParams) -> dict[str, Any]:
    """Change what is given, from the session's next model turn; answer its configuration."""
    from mini_agent.lsp import wire

    session = workspace.configure_session(
        p.session_id, model=p.model, permission_mode=p.permission_mode, tool_mode=p.tool_mode
    )
    return wire.session_config(session)
