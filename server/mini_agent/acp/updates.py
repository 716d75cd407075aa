"""The core's events as ACP `session/update` payloads, and ACP prompt blocks as the user's words.

Pure mapping, the ACP twin of `wire.update_body`: one `match` over the event types. The runtime's
status changes have no ACP update (a turn's end is the `session/prompt` answer), so they map to None.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Sequence
from typing import Any, assert_never

from acp import helpers
from acp.schema import (
    AudioContentBlock,
    EmbeddedResourceContentBlock,
    FileEditToolCallContent,
    ImageContentBlock,
    ResourceContentBlock,
    TextContentBlock,
    TextResourceContents,
    ToolCallLocation,
    ToolCallUpdate,
    ToolKind,
    UsageUpdate,
)

from mini_agent.core.contracts import Observation, TokenUsage, ToolCall, ToolSpec
from mini_agent.core.events import (
    AgentEvent,
    AnswerChunk,
    StatusChanged,
    ThoughtChunk,
    ToolCallFinished,
    ToolCallPending,
    ToolCallStarted,
    UsageReported,
    UserTurn,
)

Update = Any  # one of the SDK's session-update models
PromptBlock = (
    TextContentBlock
    | ImageContentBlock
    | AudioContentBlock
    | ResourceContentBlock
    | EmbeddedResourceContentBlock
)
KindOf = Callable[[str], ToolKind]
TITLE_VALUE_CHARS = 60


EDITOR_KINDS: dict[str, ToolKind] = {"read_text_file": "read", "write_text_file": "edit"}


def kind_of(name: str, spec: ToolSpec | None) -> ToolKind:
    """ACP's tool kind, from the MCP annotations the tool's server set (docs/acp.md has the table).
    Only hints a server gave count: MCP's defaults for absent ones (destructive, open world) would
    make every unannotated tool look like a destructive fetch. Workspace functions declare no hints
    and stay `other`, as does a tool no source lists any more (a replayed call of a stopped server)."""
    if name in EDITOR_KINDS:
        return EDITOR_KINDS[name]
    hints = dict(spec.hints) if spec is not None else {}
    if hints.get("readOnlyHint"):
        return "fetch" if hints.get("openWorldHint") else "read"
    if hints.get("readOnlyHint") is False or hints.get("destructiveHint") or hints.get("idempotentHint"):
        return "edit"
    return "other"


def update_for(event: AgentEvent, kind_of: KindOf) -> Update | None:
    """`event` as a session update; None for what ACP has no update for (status changes)."""
    match event:
        case UserTurn(text=text):
            return helpers.update_user_message_text(text)
        case ThoughtChunk(text=text):
            return helpers.update_agent_thought_text(text)
        case AnswerChunk(text=text):
            return helpers.update_agent_message_text(text)
        case ToolCallPending(call=call):
            return helpers.start_tool_call(
                call.id, title(call), kind=kind_of(call.name), status="pending", raw_input=raw_input(call)
            )
        case ToolCallStarted(call_id=call_id):
            return helpers.update_tool_call(call_id, status="in_progress")
        case ToolCallFinished(observation=obs):
            return helpers.update_tool_call(
                obs.call_id,
                status="failed" if obs.is_error else "completed",
                content=[helpers.tool_content(helpers.text_block(obs.output))],
                raw_output=raw_output(obs),
            )
        case UsageReported(usage=step, total=total, used=used, size=size):
            return usage_update(step, total, used, size)
        case StatusChanged():
            return None
        case _:
            assert_never(event)


def permission_call(
    call: ToolCall,
    kind: ToolKind,
    content: Sequence[FileEditToolCallContent] = (),
    locations: Sequence[ToolCallLocation] = (),
) -> ToolCallUpdate:
    """The `toolCall` of a session/request_permission: the pending call as the client already has it,
    with what the request adds for review (a write's diff and where it lands)."""
    return ToolCallUpdate(
        tool_call_id=call.id,
        title=title(call),
        kind=kind,
        status="pending",
        raw_input=raw_input(call),
        content=list(content) or None,
        locations=list(locations) or None,
    )


def history(events: Sequence[AgentEvent], kind_of: KindOf) -> list[Update]:
    """A stored session's replayed events (the task's user turn among them) as `session/load` sends
    them: each user turn as a `user_message_chunk` before the steps that answered it, and each step's
    lasting updates."""
    return [u for event in events if (u := update_for(event, kind_of))]


def usage_update(step: TokenUsage, total: TokenUsage, used: int = 0, size: int = 0) -> UsageUpdate:
    """`used` of `size`: the context the last model turn filled, of the model's window as the context
    budget knows it (0 when it does not); the session's token totals travel in `_meta`."""
    meta = {
        "promptTokens": total.prompt_tokens,
        "completionTokens": total.completion_tokens,
        "cachedTokens": total.cached_tokens,
    }
    used = used or step.prompt_tokens + step.completion_tokens
    return UsageUpdate(session_update="usage_update", used=used, size=size, field_meta={"miniAgent": meta})


def title(call: ToolCall) -> str:
    """The tool's name first, as a call: clients cut titles at the first colon."""
    if call.parse_error is not None:
        return f"{call.name}({call.raw_arguments})"
    args = ", ".join(
        f"{key}={json.dumps(value, ensure_ascii=False)}" for key, value in call.arguments.items()
    )
    return f"{call.name}({args})"


def raw_input(call: ToolCall) -> Any:
    return call.arguments if call.parse_error is None else {"rawArguments": call.raw_arguments}


def raw_output(obs: Observation) -> dict[str, Any]:
    out: dict[str, Any] = {"output": obs.output, "isError": obs.is_error}
    if obs.truncated:
        out["truncated"] = True
    if obs.logs:
        out["logs"] = obs.logs
    return out


def prompt_text(blocks: Sequence[PromptBlock]) -> str:
    """The user's words: text as is, a linked resource by name and URI, an embedded text resource as
    context. Images and audio are not advertised, so a client that sends them anyway gets a note."""
    parts: list[str] = []
    for block in blocks:
        match block:
            case TextContentBlock(text=text):
                parts.append(text)
            case ResourceContentBlock(name=name, uri=uri):
                parts.append(f"[{name}]({uri})")
            case EmbeddedResourceContentBlock(resource=TextResourceContents(uri=uri, text=text)):
                parts.append(f'<context uri="{uri}">\n{text}\n</context>')
            case EmbeddedResourceContentBlock(resource=resource):
                parts.append(f"(binary resource {resource.uri} left out)")
            case _:
                parts.append(f"({block.type} content left out: this agent reads text only)")
    return "\n\n".join(parts)
