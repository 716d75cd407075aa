"""The step budget's last step is for the answer (`llm.harness.lastStep`).

A small model that has gathered what a task needs often calls again what it already has, until the
budget ends with no answer at all, the results it fetched thrown away. Before the budget's last model
turn the model is told that this turn is its last and must answer from the results it has; a model
adapter that can hold a reply to a form (json mode's grammar, OpenAI's `tool_choice: "none"`) makes
that turn the final answer. The turn is one of the budget's: the budget is not stretched. A model that
still calls a tool on it has the call run and the turn ends on the budget, as before. What the budget
counts (`used`) is the user turn's model turns, a reply that broke the format included. Pure: no I/O.
"""

from __future__ import annotations

from mini_agent.core.session import AgentSession, StepRecord

NOTE_PREFIX = "last-step-"
NOTE = (
    "This is your last step: the step budget ends with this turn, so no tool call can be run after it. "
    "Do not call a tool: {finish} now, with every part of the task, from the results above."
)
STATUS = "The next model turn is the budget's last: the model is told to answer (llm.harness.lastStep)."


def used(session: AgentSession) -> int:
    """The steps of the budget the current user turn has used: its model turns."""
    return len(session.steps) - session.turn_start


def spent(session: AgentSession) -> bool:
    """Whether the current user turn has used its whole step budget."""
    return used(session) >= session.config.max_steps


def is_last(session: AgentSession) -> bool:
    """Whether the current user turn's next model turn is its budget's last (a budget of one step is
    all answer, and is left alone: the model has not been told anything yet)."""
    return session.config.max_steps >= 2 and used(session) == session.config.max_steps - 1


def noted(record: StepRecord) -> bool:
    """Whether `record` already carries the last-step note."""
    return any(obs.call_id.startswith(NOTE_PREFIX) for obs in record.observations)
