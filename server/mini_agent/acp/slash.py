"""The slash commands on the ACP door: `app.commands` run with what ACP does its own way (a model
checked against the offered ones, a folder trusted and remembered as the trust prompt's "always"
does). The answer is the words the agent message shows."""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING

from mini_agent.app import commands

if TYPE_CHECKING:
    from mini_agent.app.workspace import Workspace


async def run(
    workspace: Workspace,
    session_id: str | None,
    text: str,
    configure: commands.Configure,
    current: commands.Current,
    env: Mapping[str, str],
) -> str:
    """Run the command `text` names (the caller checked that it names one): its words, which say why
    when it could not be done. `session_id` is None before the session's first prompt."""

    async def trust() -> list[str]:
        return await trust_folder(workspace, env)

    outcome = await commands.run(workspace, session_id, text, commands.Door(trust, configure, current))
    assert outcome is not None, text
    return outcome.text


async def trust_folder(workspace: Workspace, env: Mapping[str, str]) -> list[str]:
    """`/trust`: the folder trusted in this agent and recorded in the trust store; the problems met."""
    trusted = await workspace.trust_folder(None, env, remember=True)
    if trusted.unremembered is None:
        return trusted.problems
    note = f"trusted for this agent only; it could not be remembered: {trusted.unremembered}"
    return [note, *trusted.problems]
