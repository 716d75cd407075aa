"""Request parameters of the `agent/*` methods, validated strictly (`core.strict`).

Every refusal names the field, so the daemon can answer -32602 with a message a client author can act on.
"""

from __future__ import annotations

from typing import Any, Literal

from pydantic import Field, field_validator

from mini_agent.app.options import InitOptions, LLMParams, ToolRegistration
from mini_agent.core import content, contracts
from mini_agent.core.contracts import Image, Part, Resource
from mini_agent.core.images import checked
from mini_agent.core.session import Decision, PermissionMode
from mini_agent.core.strict import parse
from mini_agent.llm.models import MAX_MODEL_ID_CHARS, unsafe
from mini_agent.plumbing.wiremodel import Params
from mini_agent.tools.mcp.config import McpServer

MAX_RESOURCES = 16  # a turn's resources (links or embedded texts); the frame bounds their size
MAX_URI_CHARS = 4096
MAX_NAME_CHARS = 256


class RegisterToolParams(Params):
    path: str | None = Field(default=None, min_length=1)
    function: str | None = Field(default=None, min_length=1)
    name: str | None = Field(default=None, min_length=1)  # the registry's rule is the one that decides
    description: str | None = None
    requires_approval: bool = False
    idempotent: bool = False
    timeout_sec: float | None = None
    read_only: bool | None = None  # MCP's hints, over the decorator's (None: as the function declares)
    destructive: bool | None = None
    open_world: bool | None = None
    client: bool = False
    input_schema: dict[str, Any] | None = None

    @field_validator("timeout_sec")
    @classmethod
    def _one_rule(cls, value: float | None) -> float | None:
        """The tool-options type's own check, so every door refuses a bad timeout alike."""
        contracts.ToolOptions(timeout_sec=value)
        return value

    def options(self) -> contracts.ToolOptions:
        return contracts.ToolOptions(
            self.name,
            self.description,
            self.requires_approval,
            self.idempotent,
            self.timeout_sec,
            self.read_only,
            self.destructive,
            self.open_world,
        )

    def registration(self) -> ToolRegistration:
        return ToolRegistration(self.path, self.function, self.options(), self.client, self.input_schema)


class NameParams(Params):
    name: str = Field(min_length=1)


class ImageParams(Params):
    """An attached image (`core.images` bounds them): its media type and its bytes as base64."""

    mime_type: str = Field(min_length=1, max_length=100)
    data: str = Field(min_length=1)


class ResourceParams(Params):
    """A resource put in the words: a link to it (`uri`, `name`), or the resource with its `text`."""

    uri: str = Field(min_length=1, max_length=MAX_URI_CHARS)
    name: str = Field(default="", max_length=MAX_NAME_CHARS)
    text: str | None = None
    mime_type: str | None = Field(default=None, max_length=100)

    def part(self) -> Resource:
        return Resource(self.uri, self.name, self.text, self.mime_type)


class Attachments(Params):
    """What may come with a turn's words: resources, then images (`turn` puts them in that order)."""

    resources: list[ResourceParams] = Field(default_factory=list, max_length=MAX_RESOURCES)
    images: list[ImageParams] = Field(default_factory=list)

    def turn(self, words: str) -> tuple[str, tuple[Image, ...], tuple[Part, ...]]:
        """The model's words and images of the turn, and the turn as parts; an image past a bound is
        refused here (`core.images`), before anything is added."""
        images = checked([(image.mime_type, image.data) for image in self.images], "images")
        parts: tuple[Part, ...] = (words, *(resource.part() for resource in self.resources), *images)
        return content.words(parts), images, parts


class StartSessionParams(Attachments):
    task: str = Field(min_length=1)
    system_prompt: str | None = None
    tools: list[str] | None = None
    llm: LLMParams | None = None
    max_steps: int | None = Field(default=None, ge=1, le=1000)
    mcp_servers: list[McpServer] = Field(default_factory=list)
    permission_mode: PermissionMode | None = Field(default=None, strict=False)  # strict wants the enum


class TraceMeta(Params):
    """A request's `_meta`: the client's W3C trace context, the parent of the turn's agent span."""

    traceparent: str | None = None


class SessionParams(Params):
    session_id: str = Field(min_length=1)
    meta: TraceMeta | None = Field(default=None, alias="_meta")

    @property
    def traceparent(self) -> str | None:
        return self.meta.traceparent if self.meta is not None else None


class PromptParams(SessionParams, Attachments):
    text: str = Field(min_length=1)


class ObservationParams(SessionParams):
    tool_call_id: str = Field(min_length=1)


class ResumeParams(SessionParams):
    llm: LLMParams | None = None  # e.g. the model server moved since the session started


class ForkParams(SessionParams):
    step: int | None = Field(default=None, ge=0)  # the last step the fork keeps (None: every ended one)


class RunParams(SessionParams):
    max_steps: int | None = Field(default=None, ge=1, le=1000)
    work_done_token: int | str | None = None


class StepParams(SessionParams):
    work_done_token: int | str | None = None


class ApproveParams(SessionParams):
    tool_call_id: str = Field(min_length=1)
    decision: Decision = Field(strict=False)  # strict mode would want an enum instance, not its value
    reason: str | None = None


class ListSessionsParams(Params):
    status: Literal["ready", "running", "awaiting_approval", "finished"] | None = None
    limit: int = Field(default=50, ge=1, le=1000)
    offset: int = Field(default=0, ge=0)


MAX_BASE_URL_CHARS = 2048


class ListModelsParams(Params):
    base_url: str | None = Field(default=None, min_length=1, max_length=MAX_BASE_URL_CHARS)
    refresh: bool = False


class ConfigureSessionParams(SessionParams):
    model: str | None = Field(default=None, min_length=1, max_length=MAX_MODEL_ID_CHARS)
    permission_mode: PermissionMode | None = Field(default=None, strict=False)
    tool_mode: contracts.ToolMode | None = None

    @field_validator("model")
    @classmethod
    def _a_name(cls, value: str | None) -> str | None:
        """A model's name is shown in pickers and terminals: no control or bidi characters."""
        if value is not None and (why := unsafe(value)) is not None:
            raise ValueError(f"not a model name: {why}")
        return value


class TrustParams(Params):
    """agent/trustWorkspace: `remember` also records the folder in the user's trust store."""

    remember: bool = False


def init_options(raw: Any) -> InitOptions:
    """The client's `initializationOptions`, parsed: the LSP door's layer of the workspace's options
    (`app.config.resolve`); `on_initialize` refused anything but an object or none."""
    return parse("initializationOptions", raw, InitOptions)
