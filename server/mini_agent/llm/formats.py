"""What each tool mode's replies look like, as far as the runtime needs to know: how a model in that
mode finishes (for the note a repeated call gets) and whether the text it streams is the thought alone
(json mode's action is not prose) or the whole completion. The runtime is handed `reply_format` and
reads a step's recorded mode only through it.
"""

from __future__ import annotations

from mini_agent.core.contracts import ReplyFormat

REPLY_FORMATS: dict[str, ReplyFormat] = {
    "react": ReplyFormat("give your Final Answer"),
    "json": ReplyFormat('answer with {"final_answer": ...} as your action', streams_thought_only=True),
    "native": ReplyFormat("answer the user without calling a tool"),
}


def reply_format(tool_mode: str) -> ReplyFormat:
    """The format of a reply that came in `tool_mode` (a step's recorded mode); ReAct's for a mode
    not recorded (an older step) or not known here."""
    return REPLY_FORMATS.get(tool_mode, REPLY_FORMATS["react"])
