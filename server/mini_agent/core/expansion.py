"""Per-call sandbox expansion: a call the tool sandbox refused (a write outside the writable folders, a
connection with the network off) leaves on its observation what would have let it run
(`Observation.expansion`, set by the tool executor). The next call of that tool in the session is then
asked about, whatever the permission mode, with one more choice: run this call with that expansion
(`Decision.ALLOW_ONCE_EXPANDED`). The grant is for that call alone: the stepper hands it to the tool
executor in `GRANTED` while the call runs, and nothing is remembered after it.
"""

from __future__ import annotations

from contextvars import ContextVar

from mini_agent.core.contracts import Expansion
from mini_agent.core.session import AgentSession

GRANTED: ContextVar[Expansion | None] = ContextVar("mini_agent_granted_expansion", default=None)


def needed(session: AgentSession, tool_name: str) -> Expansion | None:
    """The expansion the latest finished call of `tool_name` in this session was refused for; None when
    that call ran (or failed otherwise), or the tool was not called."""
    for record in reversed(session.steps):
        names = {call.id: call.name for call in record.tool_calls}
        for observation in reversed(record.observations):
            if names.get(observation.call_id) == tool_name:
                return observation.expansion
    return None


def offered(session: AgentSession, call_id: str) -> Expansion | None:
    """The expansion the permission request for call `call_id` offers (a door adds the choice)."""
    return next((p.expansion for p in session.pending if p.call.id == call_id), None)


def choice_name(expansion: Expansion) -> str:
    """How a permission request names the expanded choice (`Decision.ALLOW_ONCE_EXPANDED`)."""
    return f"Allow once, with {expansion.words()}"

