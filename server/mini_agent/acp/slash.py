"""The slash commands on the ACP door: `app.commands` run with what ACP does its own way (a model
checked against the offered ones; a folder trusted only on an allow to the trust prompt's
`session/request_permission`, remembered only on its "Always trust"). The answer is the words the
agent message shows."""

from __future__ import annotations

from collections.abc import Awaitable, Callable
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
    trust: Callable[[], Awaitable[list[str] | None]],
) -> str:
    """Run the command `text` names (the caller checked that it names one): its words, which say why
    when it could not be done. `session_id` is None before the session's first prompt; `trust` asks
    the person and trusts on an allow (`trust_prompt.TrustPrompt.by_command`)."""
    outcome = await commands.run(workspace, session_id, text, commands.Door(trust, configure, current))
    assert outcome is not None, text
    return outcome.text
