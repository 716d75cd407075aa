"""The core's events as ACP `session/update` payloads, and ACP prompt blocks as the user's words.

Pure mapping, the ACP twin of `wire.update_body`: one `match` over the event types. A status change
that carries a message (a model request retried, the context compacted, an MCP server that failed)
is a tool-call-shaped entry of kind `other`, titled by the message and completed at once, as other
agents report compaction: it never mixes into the answer text. A status change without one has no
ACP update (a turn's end is the `session/prompt` answer), nor has a failed turn's (its answer is the
JSON-RPC error that quotes it). A change of the session's configuration maps to two (`updates_for`):
`config_option_update` and, for clients that know only the legacy session modes, `current_mode_update`.
The session's configuration as ACP offers it (`config_options`, `mode_state`) is built here too.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Callable, Sequence
from typing import Any, assert_never

from acp import helpers
from acp.schema import (
    AudioContentBlock,
    AvailableCommand,
    AvailableCommandInput,
    AvailableCommandsUpdate,
    ConfigOptionUpdate,
    CurrentModeUpdate,
    EmbeddedResourceContentBlock,
    FileEditToolCallContent,
    ImageContentBlock,
    ResourceContentBlock,
    SessionConfigOptionBoolean,
    SessionConfigOptionSelect,
    SessionConfigSelectOption,
    SessionMode,
    SessionModeState,
    TextContentBlock,
    TextResourceContents,
    ToolCallLocation,
    ToolCallStart,
    ToolCallUpdate,
    ToolKind,
    UnstructuredCommandInput,
    UsageUpdate,
)

from mini_agent.app.commands import COMMANDS
from mini_agent.core.contracts import (
    Image,
    Observation,
    Part,
    Resource,
    StopReason,
    TokenUsage,
    ToolCall,
    ToolSpec,
)
from mini_agent.core.events import (
    AgentEvent,
    AnswerChunk,
    ConfigChanged,
    StatusChanged,
    ThoughtChunk,
    ToolCallFinished,
    ToolCallPending,
    ToolCallProgress,
    ToolCallStarted,
    UsageReported,
    UserTurn,
)
from mini_agent.core.session import PermissionMode

Update = Any  # one of the SDK's session-update models
PromptBlock = (
    TextContentBlock
    | ImageContentBlock
    | AudioContentBlock
    | ResourceContentBlock
    | EmbeddedResourceContentBlock
)
KindOf = Callable[[str], ToolKind]
ConfigOption = SessionConfigOptionSelect | SessionConfigOptionBoolean
ModelsOf = Callable[[], Sequence[str]]  # the models to offer, as the model server listed them
MODEL_OPTION = "model"
MODE_OPTION = "mode"
MODEL_NOTE = "The model this session's next turns use."
MODE_NOTE = "Which tool calls wait for your answer."
TITLE_VALUE_CHARS = 60
STATUS_ID_DIGITS = 12  # of the message's digest, in a status entry's tool call id


EDITOR_KINDS: dict[str, ToolKind] = {"read_text_file": "read", "write_text_file": "edit"}


def kind_of(name: str, spec: ToolSpec | None) -> ToolKind:
    """ACP's tool kind, from the MCP annotations the tool's server, or a workspace function's `@tool`,
    set (docs/acp.md has the table). Only hints given count: MCP's defaults for absent ones
    (destructive, open world) would make every unannotated tool look like a destructive fetch. A tool
    without hints stays `other`, as does one no source lists any more (a replayed call of a stopped
    server)."""
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
        case ToolCallProgress():
            return live_update(event)
        case ToolCallFinished(observation=obs):
            return helpers.update_tool_call(
                obs.call_id,
                status="failed" if obs.is_error else "completed",
                content=[
                    helpers.tool_content(helpers.text_block(obs.output)),
                    *(helpers.tool_content(helpers.image_block(i.data, i.mime_type)) for i in obs.images),
                ],
                raw_output=raw_output(obs),
            )
        case UsageReported(usage=step, total=total, used=used, size=size):
            return usage_update(step, total, used, size)
        case StatusChanged(message=str() as message, stop_reason=reason) if reason is not StopReason.ERROR:
            return status_entry(event.step, message)
        case StatusChanged() | ConfigChanged():  # a configuration change is `updates_for`'s
            return None
        case _:
            assert_never(event)


def live_update(event: ToolCallProgress) -> Update:
    """A running call's live output: ACP replaces a call's content, so all of it shown so far, then
    the tool's latest progress report."""
    blocks = [event.shown] if event.shown else []
    if event.message is not None or event.fraction is not None:
        done = f"{event.fraction:.0%}" if event.fraction is not None else ""
        blocks.append(" ".join(part for part in (event.message, done) if part))
    content = [helpers.tool_content(helpers.text_block(block)) for block in blocks]
    return helpers.update_tool_call(event.call_id, status="in_progress", content=content)


def updates_for(event: AgentEvent, kind_of: KindOf, models_of: ModelsOf) -> list[Update]:
    """`event` as the session updates it makes: none, one, or for a configuration change two."""
    if isinstance(event, ConfigChanged):
        options = config_options(event.model, models_of(), event.permission_mode)
        return [
            ConfigOptionUpdate(session_update="config_option_update", config_options=options),
            CurrentModeUpdate(
                session_update="current_mode_update", current_mode_id=event.permission_mode.value
            ),
        ]
    if isinstance(event, UserTurn) and event.parts:  # block by block, as the client sent them
        return user_blocks(event.parts)
    if isinstance(event, UserTurn) and event.images:  # the words, then each image, as the client sent them
        images = [helpers.update_user_message(helpers.image_block(i.data, i.mime_type)) for i in event.images]
        return [helpers.update_user_message_text(event.text), *images]
    update = update_for(event, kind_of)
    return [update] if update is not None else []


def status_entry(step: int, message: str) -> ToolCallStart:
    """A status message as a completed tool call of kind `other` titled by it (its id from the step and
    the message, so a replay gives the same one)."""
    digest = hashlib.sha256(message.encode("utf-8", "replace")).hexdigest()[:STATUS_ID_DIGITS]
    return helpers.start_tool_call(
        f"status-{step}-{digest}", message, kind="other", status="completed", raw_input=None
    )


def commands_update() -> AvailableCommandsUpdate:
    """The slash commands, as ACP clients list them in their prompt box."""
    listed = [
        AvailableCommand(
            name=command.name,
            description=command.description,
            input=_input(command.hint),
        )
        for command in COMMANDS
    ]
    return AvailableCommandsUpdate(session_update="available_commands_update", available_commands=listed)


def _input(hint: str | None) -> AvailableCommandInput | None:
    return AvailableCommandInput(UnstructuredCommandInput(hint=hint)) if hint else None


def config_options(
    model: str, models: Sequence[str], mode: PermissionMode, model_note: str | None = None
) -> list[ConfigOption]:
    """The session's `configOptions`: the model (the listed ones, the current one always among them;
    `model_note` says why there is only one) and the permission mode."""
    offered = list(dict.fromkeys([*models, model]))
    return [
        SessionConfigOptionSelect(
            type="select",
            id=MODEL_OPTION,
            name="Model",
            category="model",
            description=model_note or MODEL_NOTE,
            current_value=model,
            options=[SessionConfigSelectOption(value=name, name=name) for name in offered],
        ),
        SessionConfigOptionSelect(
            type="select",
            id=MODE_OPTION,
            name="Permission mode",
            category="mode",
            description=MODE_NOTE,
            current_value=mode.value,
            options=[
                SessionConfigSelectOption(value=m.value, name=m.label, description=m.description)
                for m in PermissionMode
            ],
        ),
    ]


def mode_state(mode: PermissionMode) -> SessionModeState:
    """The legacy session modes: the permission modes, under the same ids."""
    modes = [SessionMode(id=m.value, name=m.label, description=m.description) for m in PermissionMode]
    return SessionModeState(current_mode_id=mode.value, available_modes=modes)


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


def history(events: Sequence[AgentEvent], kind_of: KindOf, models_of: ModelsOf) -> list[Update]:
    """A stored session's replayed events (the task's user turn among them) as `session/load` sends
    them: each user turn as a `user_message_chunk` before the steps that answered it, each change of
    its configuration, and each step's lasting updates."""
    return [u for event in events for u in updates_for(event, kind_of, models_of)]


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


def prompt_parts(blocks: Sequence[PromptBlock]) -> tuple[Part, ...]:
    """The prompt as content, block by block: text, images, linked resources and embedded text
    resources as they are. A binary resource, or audio (not advertised), becomes a note in words."""
    parts: list[Part] = []
    for block in blocks:
        match block:
            case TextContentBlock(text=text):
                parts.append(text)
            case ImageContentBlock(mime_type=mime_type, data=data):
                parts.append(Image(mime_type, data))
            case ResourceContentBlock(name=name, uri=uri, mime_type=mime_type):
                parts.append(Resource(uri, name, mime_type=mime_type))
            case EmbeddedResourceContentBlock(resource=TextResourceContents() as embedded):
                parts.append(Resource(embedded.uri, text=embedded.text, mime_type=embedded.mime_type))
            case EmbeddedResourceContentBlock(resource=resource):
                parts.append(f"(binary resource {resource.uri} left out)")
            case _:
                parts.append(f"({block.type} content left out: this agent reads text only)")
    return tuple(parts)


def user_blocks(parts: Sequence[Part]) -> list[Update]:
    """A turn's parts given back as the blocks a client sent (a replay), one user message chunk each."""
    out: list[Update] = []
    for part in parts:
        if isinstance(part, str):
            block: Any = helpers.text_block(part)
        elif isinstance(part, Image):
            block = helpers.image_block(part.data, part.mime_type)
        elif part.text is None:
            block = helpers.resource_link_block(part.name or part.uri, part.uri, mime_type=part.mime_type)
        else:
            block = helpers.resource_block(
                helpers.embedded_text_resource(part.uri, part.text, mime_type=part.mime_type)
            )
        out.append(helpers.update_user_message(block))
    return out
