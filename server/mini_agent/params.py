"""Request parameters of the agent/* methods, validated strictly.

Strict pydantic models with camelCase aliases: a wrong type is refused rather than guessed at, and
every refusal names the field, so the daemon can answer -32602 with a message a client author can act on.
"""

from __future__ import annotations

import dataclasses
from typing import TYPE_CHECKING, Any, Literal, Optional, TypeVar, get_type_hints

from pydantic import BaseModel, ConfigDict, Field, ValidationError, create_model, field_validator
from pydantic.alias_generators import to_camel

from . import contracts
from .contracts import MAX_OUTPUT_BYTES, MAX_STEPS, TOOL_TIMEOUT_SEC, LLMConfig
from .errors import AgentError
from .redact import hide_secret
from .session import Decision


class Params(BaseModel):
    model_config = ConfigDict(alias_generator=to_camel, populate_by_name=True, extra="ignore", strict=True)


class _LLMParams(Params):
    @field_validator("api_key", check_fields=False)
    @classmethod
    def _hidden(cls, value: str | None) -> str | None:
        """Any key a client hands over is masked in the log from then on."""
        hide_secret(value)
        return value

    def apply(self, base: LLMConfig) -> LLMConfig:
        """`base` with every field this object sets."""
        return dataclasses.replace(base, **self.model_dump(exclude_none=True))


def _all_optional(config: type[LLMConfig]) -> dict[str, Any]:
    """Each field of `config` as an optional field (None: not set), keeping its type and bounds."""
    hints = get_type_hints(config, include_extras=True)
    return {f.name: (Optional[hints[f.name]], None) for f in dataclasses.fields(config)}  # noqa: UP045


if TYPE_CHECKING:
    LLMParams = _LLMParams
else:
    LLMParams = create_model("LLMParams", __base__=_LLMParams, **_all_optional(LLMConfig))


class ToolHostOptions(Params):
    """`initializationOptions.tools`: what every tool call of this daemon is held to (not one tool's
    own options, which are `contracts.ToolOptions`)."""

    timeout_sec: float = Field(default=TOOL_TIMEOUT_SEC, gt=0)
    max_output_bytes: int = Field(default=MAX_OUTPUT_BYTES, ge=1024)
    max_memory_mb: int = Field(default=1024, ge=0, alias="maxMemoryMB")  # per tool host; 0: no limit
    inherit_secrets: bool = False  # pass the model's key variables to tools too


class StoreOptions(Params):
    path: str | None = None
    enabled: bool = True


class NameValue(Params):
    name: str = Field(min_length=1)
    value: str


class StdioMcpServer(Params):
    """An MCP server we start as a subprocess (ACP's `McpServerStdio`, plus `requiresApproval`)."""

    type: Literal["stdio"] = "stdio"
    name: str = Field(min_length=1)
    command: str = Field(min_length=1)
    args: list[str] = Field(default_factory=list)
    env: list[NameValue] = Field(default_factory=list)
    requires_approval: bool = True  # false: tools without readOnlyHint run without asking too


class HttpMcpServer(Params):
    """An MCP server reached over streamable HTTP (ACP's `McpServerHttp`, plus `requiresApproval`)."""

    type: Literal["http"]
    name: str = Field(min_length=1)
    url: str = Field(min_length=1)
    headers: list[NameValue] = Field(default_factory=list)
    requires_approval: bool = True


McpServer = StdioMcpServer | HttpMcpServer


class InitOptions(Params):
    llm: LLMParams = Field(default_factory=LLMParams)
    tools: ToolHostOptions = Field(default_factory=ToolHostOptions)
    store: StoreOptions = Field(default_factory=StoreOptions)
    max_steps: int = Field(default=MAX_STEPS, ge=1, le=1000)
    system_prompt: str | None = None
    # Until the client says so (the editor's workspace trust), stored tool registrations are not imported.
    workspace_trusted: bool = False
    mcp_servers: list[McpServer] = Field(default_factory=list)  # for every session


class RegisterToolParams(Params):
    path: str | None = Field(default=None, min_length=1)
    function: str | None = Field(default=None, min_length=1)
    name: str | None = Field(default=None, min_length=1, max_length=64, pattern=r"^[^\s:]+$")
    description: str | None = None
    requires_approval: bool = False
    idempotent: bool = False
    timeout_sec: float | None = None
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
            self.name, self.description, self.requires_approval, self.idempotent, self.timeout_sec
        )


class NameParams(Params):
    name: str = Field(min_length=1)


class StartSessionParams(Params):
    task: str = Field(min_length=1)
    system_prompt: str | None = None
    tools: list[str] | None = None
    llm: LLMParams | None = None
    max_steps: int | None = Field(default=None, ge=1, le=1000)
    mcp_servers: list[McpServer] = Field(default_factory=list)


class SessionParams(Params):
    session_id: str = Field(min_length=1)


class PromptParams(SessionParams):
    text: str = Field(min_length=1)


class ObservationParams(SessionParams):
    tool_call_id: str = Field(min_length=1)


class ResumeParams(SessionParams):
    llm: LLMParams | None = None  # e.g. the model server moved since the session started


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


P = TypeVar("P", bound=Params)


class InvalidParams(AgentError, ValueError):
    """Params that do not fit the method; `errors` has one line per problem."""

    def __init__(self, method: str, errors: list[str]) -> None:
        super().__init__(f"Invalid params for {method}: " + "; ".join(errors), errors=errors)
        self.errors = errors


def parse(method: str, raw: Any, model: type[P]) -> P:
    try:
        return model.model_validate({} if raw is None else raw)
    except ValidationError as exc:
        raise invalid(method, exc) from None


def invalid(method: str, exc: ValidationError) -> InvalidParams:
    """A validation failure as the one error type the doors map, one readable line per problem."""
    return InvalidParams(method, [_describe(error) for error in exc.errors(include_url=False)])


def _describe(error: Any) -> str:
    where = ".".join(str(part) for part in error["loc"]) or "params"
    return f"{where}: {error['msg']}"
