"""Domain values and events as the LSP door's camelCase JSON (docs/protocol.md is the reference).

Pure mapping; no JSON-RPC framing here. Another front door (ACP) maps the same events in its own module.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Any, assert_never

from mini_agent.app.port import HeldRegistration, ToolList
from mini_agent.core.contracts import Image, Observation, Part, Resource, TokenUsage, ToolCall, ToolSpec
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
from mini_agent.core.images import decoded_size
from mini_agent.core.session import AgentSession, Decision, PendingApproval, SessionRow, StepRecord

if TYPE_CHECKING:
    from mini_agent.app.model_choices import ModelChoices


def live_update(event: ToolCallProgress) -> dict[str, Any]:
    """A running call's live output: the printed text appended since the last, its latest progress."""
    body: dict[str, Any] = {"kind": "tool_call_update", "toolCallId": event.call_id, "status": "in_progress"}
    if event.text:
        body["output"] = {"append": event.text}
    reported = (("message", event.message), ("fraction", event.fraction))
    progress = {key: value for key, value in reported if value is not None}
    if progress:
        body["progress"] = progress
    if event.truncated:
        body["liveOutputTruncated"] = True
    return body


def update_body(event: AgentEvent) -> dict[str, Any]:
    """An event as the `update` of an `agent/update` notification, `kind` first."""
    match event:
        case UserTurn(text=text, images=images, parts=parts):
            shown, linked = named(images), resources(parts)
            return {"kind": "user_message_chunk", "text": text, **({"resources": linked} if linked else {}),
                    **({"images": shown} if shown else {})}
        case ThoughtChunk(text=text):
            return {"kind": "agent_thought_chunk", "text": text}
        case AnswerChunk(text=text):
            return {"kind": "agent_message_chunk", "text": text}
        case ToolCallPending(call=call):
            return {
                "kind": "tool_call",
                "toolCallId": call.id,
                "title": call.name,
                "status": "pending",
                **tool_call(call),
            }
        case ToolCallStarted(call_id=call_id):
            return {"kind": "tool_call_update", "toolCallId": call_id, "status": "in_progress"}
        case ToolCallProgress():
            return live_update(event)
        case ToolCallFinished(observation=obs):
            status = "failed" if obs.is_error else "completed"
            return {
                "kind": "tool_call_update",
                "toolCallId": obs.call_id,
                "status": status,
                "observation": observation(obs),
            }
        case UsageReported(usage=step, total=total, used=used, size=size):
            report = {"kind": "usage_update", "usage": usage(step), "total": usage(total)}
            return {**report, "used": used, "size": size} if size else report
        case StatusChanged(status=status, stop_reason=stop_reason, message=message):
            body: dict[str, Any] = {"kind": "status", "status": status.value}
            if stop_reason is not None:
                body["stopReason"] = stop_reason.value
            if message:
                body["message"] = message
            return body
        case ConfigChanged(status=status, message=message):
            config = {"model": event.model, "permissionMode": event.permission_mode.value,
                      "toolMode": event.tool_mode}
            return {"kind": "status", "status": status.value, "message": message, "config": config}
        case _:
            assert_never(event)


def update_params(event: AgentEvent) -> dict[str, Any]:
    """The params of the `agent/update` notification that carries `event`."""
    return {"sessionId": event.session_id, "step": event.step, "update": update_body(event)}


def usage(value: TokenUsage) -> dict[str, int | bool]:
    return {
        "promptTokens": value.prompt_tokens,
        "completionTokens": value.completion_tokens,
        "cachedTokens": value.cached_tokens,
        "reported": value.reported,
    }


def tool_call(call: ToolCall) -> dict[str, Any]:
    out: dict[str, Any] = {
        "id": call.id,
        "name": call.name,
        "arguments": call.arguments,
        "rawArguments": call.raw_arguments,
    }
    if call.parse_error is not None:
        out["parseError"] = call.parse_error
    return out


def observation(obs: Observation) -> dict[str, Any]:
    out: dict[str, Any] = {
        "toolCallId": obs.call_id,
        "toolName": obs.tool_name,
        "output": obs.output if obs.shown is None else obs.shown,
        "isError": obs.is_error,
        "elapsedMs": round(obs.execution_time_ms, 3),
    }
    if obs.truncated or obs.shown is not None:
        out["truncated"] = True
    if obs.shown is not None:  # cut for the model's window: the whole text is agent/getObservation's
        out["fullLength"] = len(obs.output)
    if obs.logs:
        out["logs"] = obs.logs
    if obs.images:
        out["images"] = named(obs.images)
    return out


def tool_spec(spec: ToolSpec) -> dict[str, Any]:
    out: dict[str, Any] = {
        "name": spec.name,
        "description": spec.description,
        "inputSchema": spec.input_schema,
        "requiresApproval": spec.requires_approval,
    }
    if spec.title:
        out["title"] = spec.title
    if spec.client:
        out["client"] = True
    if spec.mcp_server is not None:
        out["mcpServer"] = spec.mcp_server
    annotations = dict(spec.hints) | ({"idempotentHint": True} if spec.idempotent else {})
    if annotations:
        out["annotations"] = annotations
    if spec.output_schema is not None:
        out["outputSchema"] = spec.output_schema
    if spec.source is not None:
        out["source"] = {"path": spec.source.path, "function": spec.source.function, "line": spec.source.line}
    return out


def unloaded_registration(held: HeldRegistration) -> dict[str, Any]:
    """A stored registration not imported yet (the workspace is not trusted), as a `Tool` placeholder;
    a file's schema is unknown until it is imported."""
    out: dict[str, Any] = {
        "name": held.name,
        "description": held.description,
        "inputSchema": {"type": "object"},
        "requiresApproval": held.requires_approval,
        "restored": True,
        "loaded": False,
    }
    if held.client:
        out["client"] = True
    else:
        out["source"] = {"path": held.path, "function": held.function, "line": 0}
    return out


def tool_list(tools: ToolList) -> list[dict[str, Any]]:
    """`agent/listTools`' and `agent/toolsChanged`' list: the loaded tools, then those held back."""
    return [tool_spec(spec) for spec in tools.loaded] + [unloaded_registration(h) for h in tools.held]


def tool_entry(entry: ToolSpec | HeldRegistration) -> dict[str, Any]:
    return unloaded_registration(entry) if isinstance(entry, HeldRegistration) else tool_spec(entry)


def step_result(session: AgentSession, record: StepRecord) -> dict[str, Any]:
    return {
        "sessionId": session.session_id,
        "index": record.index,
        "thought": record.thought,
        "toolCalls": [tool_call(call) for call in record.tool_calls],
        "observations": [observation(obs) for obs in record.observations],
        "finalAnswer": record.final_answer,
        "status": session.status.value,
        "stopReason": record.stop_reason.value if record.stop_reason else None,
        "error": record.error,
        "usage": usage(record.usage),
        "elapsedMs": round(record.elapsed_ms, 3),
        "toolMode": record.tool_mode or None,
        "pendingApprovals": [pending_approval(p) for p in session.pending if p.decision is None],
    }


def pending_approval(pending: PendingApproval) -> dict[str, Any]:
    return {"toolCall": tool_call(pending.call), "step": pending.step_index}


def session_summary(session: AgentSession) -> dict[str, Any]:
    return session_row(SessionRow.of(session))


def session_full(session: AgentSession) -> dict[str, Any]:
    return {
        **session_summary(session),
        "steps": [step_result(session, record) for record in session.steps],
        "tools": [spec.name for spec in session.tools],
        "pendingApprovals": [pending_approval(p) for p in session.pending if p.decision is None],
        "llm": session_llm(session),
        "permissionMode": session.config.permission_mode.value,
    }


def session_config(session: AgentSession) -> dict[str, Any]:
    """`agent/configureSession`'s answer: the session's configuration."""
    config = session.config
    return {
        "sessionId": session.session_id,
        "model": config.llm.model,
        "permissionMode": config.permission_mode.value,
        "toolMode": config.llm.tool_mode,
    }


def session_llm(session: AgentSession) -> dict[str, Any]:
    """The model settings a session runs with (never a key)."""
    llm = session.config.llm
    return {"baseUrl": llm.base_url, "model": llm.model, "toolMode": llm.tool_mode}


def model_choices(choices: ModelChoices) -> dict[str, Any]:
    out: dict[str, Any] = {
        "models": [{"id": model} for model in choices.models],
        "current": choices.current,
        "baseUrl": choices.base_url,
        "source": choices.source,
    }
    if choices.message is not None:
        out["message"] = choices.message
    return out


def session_row(row: SessionRow) -> dict[str, Any]:
    return {
        "sessionId": row.session_id,
        "task": row.task,
        "status": row.status.value,
        "stopReason": row.stop_reason.value if row.stop_reason else None,
        "finalAnswer": row.final_answer,
        "stepCount": row.step_count,
        "usage": usage(row.usage),
        "createdAt": row.created_at,
        "updatedAt": row.updated_at,
    }


def capabilities(client: Any) -> dict[str, Any]:
    """The client's `initialize` capabilities (lsprotocol's `ClientCapabilities`) as plain JSON."""
    from lsprotocol import converters

    raw = converters.get_converter().unstructure(client)
    return raw if isinstance(raw, dict) else {}


def plain(value: Any) -> Any:
    """pygls hands results of server->client requests back as namedtuples; turn them into JSON values."""
    if hasattr(value, "_asdict"):
        return {key: plain(item) for key, item in value._asdict().items()}
    if isinstance(value, list):
        return [plain(item) for item in value]
    return value


PERMISSION_OPTIONS = [
    {"optionId": "allow_once", "name": "Allow once", "kind": "allow_once"},
    {"optionId": "allow_always", "name": "Always allow this tool in this session", "kind": "allow_always"},
    {"optionId": "reject_once", "name": "Reject", "kind": "reject_once"},
    {"optionId": "reject_always", "name": "Always reject this tool in this session", "kind": "reject_always"},
]


def decision_from(answer: Any) -> tuple[Decision, str | None] | None:
    """An `agent/requestPermission` answer: `{decision, reason?}`, or ACP's
    `{outcome: {outcome: "selected", optionId}}`; None for anything else."""
    if not isinstance(answer, dict):
        return None
    outcome = answer.get("outcome")
    choice = outcome.get("optionId") if isinstance(outcome, dict) else answer.get("decision")
    try:
        decision = Decision(str(choice))
    except ValueError:
        return None
    reason = answer.get("reason")
    return decision, reason if isinstance(reason, str) else None


def resources(parts: Sequence[Part]) -> list[dict[str, Any]]:
    """The resources among a turn's parts as the wire names them: where they are, and for an embedded
    one its length in characters (its text is in the turn's words)."""
    out: list[dict[str, Any]] = []
    for part in parts:
        if isinstance(part, Resource):
            entry = {"uri": part.uri, "name": part.name, "mimeType": part.mime_type,
                     "chars": len(part.text) if part.text is not None else None}
            out.append({key: value for key, value in entry.items() if value is not None})
    return out


def named(images: Sequence[Image]) -> list[dict[str, Any]]:
    """Images as the wire names them to a client: their kind and size, not their bytes."""
    return [{"mimeType": image.mime_type, "bytes": decoded_size(image.data)} for image in images]

