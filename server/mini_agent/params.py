"""Request parameters of the agent/* methods, validated strictly.

Strict pydantic models with camelCase aliases: a wrong type is refused rather than guessed at, and
every refusal names the field, so the daemon can answer -32602 with a message a client author can act on.
"""

from __future__ import annotations

from typing import Any, Literal, TypeVar

from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator
from pydantic.alias_generators import to_camel

from .contracts import LLMConfig, ToolMode
from .redact import hide_secret
from .session import Decision


class Params(BaseModel):
    model_config = ConfigDict(alias_generator=to_camel, populate_by_name=True, extra="ignore", strict=True)


class LLMParams(Params):
    base_url: str | None = None
    model: str | None = None
    api_key: str | None = None
    tool_mode: ToolMode | None = None
    temperature: float | None = Field(default=None, ge=0, le=2)
    max_tokens: int | None = Field(default=None, ge=1)
    stream: bool | None = None
    max_retries: int | None = Field(default=None, ge=0, le=10)
    timeout_sec: float | None = Field(default=None, gt=0)
    request_timeout_sec: float | None = Field(default=None, gt=0)
    max_reply_bytes: int | None = Field(default=None, ge=1024)

    @field_validator("api_key")
    @classmethod
    def _hidden(cls, value: str | None) -> str | None:
        """Any key a client hands over is masked in the log from then on."""
        hide_secret(value)
        return value

    def apply(self, base: LLMConfig) -> LLMConfig:
        """`base` with every field this object sets."""
        changes = {key: value for key, value in self.model_dump().items() if value is not None}
        return LLMConfig(**{**_fields(base), **changes})


class ToolOptions(Params):
    timeout_sec: float = Field(default=30.0, gt=0)
    max_output_bytes: int = Field(default=65536, ge=1024)
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
    tools: ToolOptions = Field(default_factory=ToolOptions)
    store: StoreOptions = Field(default_factory=StoreOptions)
    max_steps: int = Field(default=20, ge=1, le=1000)
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
    timeout_sec: float | None = Field(default=None, gt=0)
    client: bool = False
    input_schema: dict[str, Any] | None = None


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


class InvalidParams(ValueError):
    """Params that do not fit the method; `errors` has one line per problem."""

    def __init__(self, method: str, errors: list[str]) -> None:
        super().__init__(f"Invalid params for {method}: " + "; ".join(errors))
        self.errors = errors


def parse(method: str, raw: Any, model: type[P]) -> P:
    try:
        return model.model_validate({} if raw is None else raw)
    except ValidationError as exc:
        raise InvalidParams(method, [_describe(error) for error in exc.errors(include_url=False)]) from None


def _describe(error: Any) -> str:
    where = ".".join(str(part) for part in error["loc"]) or "params"
    return f"{where}: {error['msg']}"


def _fields(config: LLMConfig) -> dict[str, Any]:
    return {name: getattr(config, name) for name in config.__dataclass_fields__}
