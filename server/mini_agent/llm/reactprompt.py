"""Text ReAct's prompt: what the model reads. The tools and the protocol go into the system prompt;
the history is rendered append-only, so that the server's prefix cache keeps hitting (each rendering
of a longer history extends that of a shorter one). `react` reads back what the model writes. Pure
functions, no I/O.
"""

from __future__ import annotations

import json
from collections.abc import Sequence

from mini_agent.core.contracts import Image, Message, Role, ToolSpec

PROTOCOL = """\
## How to work

Work in rounds. In each round write one of the two forms below, every marker at the start of its own line.

To use a tool:
Thought: what you know so far and what you need next
Action: the tool's name, exactly as listed ({names})
Action Input: the arguments as a single JSON object, keyed by the tool's argument names

Inside JSON strings, write a line break as \\n. After the Action Input, stop: the tool's result \
arrives in the next message, starting with "Observation:". Never write an Observation yourself, not \
even inside an argument: that word ends your turn.

When you have what you need, or when no listed tool does what the user asks (then call none, and \
answer directly):
Thought: why you are done
Final Answer: your answer for the user, answering every part of what they asked"""


def build_system_prompt(base: str, tools: Sequence[ToolSpec], protocol: str = PROTOCOL) -> str:
    """The base prompt followed by the tool list and the protocol (`{names}` in it: the tool names).

    Without tools there is no protocol to teach: the base prompt comes back unchanged, and a plain
    reply parses as a final answer. Same inputs give the same bytes (the prefix cache needs it).
    JSON mode passes its own protocol: the schema constrains the reply, these words explain it.
    """
    if not tools:
        return base
    entries = [
        f"### {tool.name}\n{tool.description.strip()}\n"
        f"Arguments (JSON Schema): {json.dumps(tool.input_schema, ensure_ascii=False, sort_keys=False)}"
        for tool in tools
    ]
    names = ", ".join(tool.name for tool in tools)
    sections = [
        base.rstrip(),
        "## Tools\n\nYou can call these tools:\n\n" + "\n\n".join(entries),
        protocol.format(names=names),
    ]
    return "\n\n".join(section for section in sections if section)


def render_messages(
    messages: Sequence[Message], tools: Sequence[ToolSpec], protocol: str = PROTOCOL
) -> list[dict[str, str]]:
    """Chat messages for a text-only server, one per history entry and each independent of the rest.

    Assistant turns are sent back exactly as the model wrote them, and observations become user
    turns, so the rendering of a longer history always extends that of a shorter one.
    """
    return [_render_one(message, tools, protocol) for message in messages]


def _render_one(message: Message, tools: Sequence[ToolSpec], protocol: str) -> dict[str, str]:
    if message.role is Role.SYSTEM:
        return {"role": "system", "content": build_system_prompt(message.content, tools, protocol)}
    if message.role is Role.TOOL:
        return {"role": "user", "content": "Observation: " + message.content + left_out(message.images)}
    return {"role": message.role.value, "content": message.content + left_out(message.images)}


def left_out(images: Sequence[Image]) -> str:
    """What a text-only rendering says in place of a turn's images (nothing when it has none): the
    model is told they were there and that it cannot see them."""
    if not images:
        return ""
    count = f"{len(images)} image" + ("s" if len(images) > 1 else "")
    return (f"\n\n[{count} attached to this message left out: this tool mode sends the model text "
            "only. Say so if the task needs what it shows.]")
