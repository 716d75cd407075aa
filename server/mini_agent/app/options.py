"""What a client hands over when it starts a workspace (`initializationOptions` on the LSP door; the
workspace file and the environment merged on every door), validated strictly.

`LLMParams` is `core.contracts.LLMConfig` with every field optional and the same types and bounds: the
one declaration of the model settings, which the workspace file's `llm` table is validated by too.
"""

from __future__ import annotations

import dataclasses
import sys
from collections.abc import Collection
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal, Optional, get_type_hints

from pydantic import Field, create_model, field_validator

from mini_agent.core.contracts import (
    MAX_OUTPUT_BYTES,
    MAX_STEPS,
    TOOL_TIMEOUT_SEC,
    Harness,
    LLMConfig,
    ToolOptions,
)
from mini_agent.plumbing.redact import hide_secret
from mini_agent.plumbing.wiremodel import Params
from mini_agent.tools import sandbox
from mini_agent.tools.mcp.config import McpServer
from mini_agent.tools.registry import ClientToolCaller, ToolRegistry


class _LLMParams(Params):
    @field_validator("api_key", check_fields=False)
    @classmethod
    def _hidden(cls, value: str | None) -> str | None:
        """Any key a client hands over is masked in the log from then on."""
        hide_secret(value)
        return value

    def apply(self, base: LLMConfig) -> LLMConfig:
        """`base` with every field this object sets (the harness switches one by one)."""
        values = self.model_dump(exclude_none=True)
        switches = values.pop("harness", None)
        if switches:
            values["harness"] = dataclasses.replace(base.harness, **switches)
        return dataclasses.replace(base, **values)


if TYPE_CHECKING:
    HarnessParams = Params
else:
    HarnessParams = create_model(
        "HarnessParams",
        __base__=Params,
        **{f.name: (Optional[bool], None) for f in dataclasses.fields(Harness)},  # noqa: UP045
    )


def llm_fields(names: tuple[str, ...] | None = None) -> dict[str, Any]:
    """`LLMConfig`'s fields (those in `names`, or all) as optional model fields (None: not set), each
    keeping its type and bounds; the harness as its switches, each optional."""
    hints = get_type_hints(LLMConfig, include_extras=True)
    hints["harness"] = HarnessParams
    fields = [f.name for f in dataclasses.fields(LLMConfig) if names is None or f.name in names]
    return {name: (Optional[hints[name]], None) for name in fields}  # noqa: UP045


if TYPE_CHECKING:

    class LLMParams(_LLMParams):
        """What the type checker knows of the model built below: every `LLMConfig` field, optional."""

        base_url: str | None = None
        model: str | None = None
        api_key: str | None = None

        def __getattr__(self, name: str) -> Any: ...

else:
    LLMParams = create_model("LLMParams", __base__=_LLMParams, **llm_fields())


class ToolHostOptions(Params):
    """`tools`: what every tool call of this workspace is held to (not one tool's own options, which are
    `contracts.ToolOptions`). The client's or the user's, never the workspace file's (which has no such
    table): `sandbox = "off"` in particular is only ever the user's choice. Every door builds its tool
    registry through `registry`, so a setting added here reaches the LSP door, the ACP door and
    `mini-agent mcp` alike."""

    timeout_sec: float = Field(default=TOOL_TIMEOUT_SEC, gt=0)
    max_output_bytes: int = Field(default=MAX_OUTPUT_BYTES, ge=1024)
    max_memory_mb: int = Field(default=1024, ge=0, alias="maxMemoryMB")  # per tool host; 0: no limit
    inherit_secrets: bool = False  # pass the model's key variables to tools too
    sandbox: Literal["on", "off"] = "on"  # tool calls confined by the kernel (tools/sandbox.py)

    @property
    def confined(self) -> bool:
        """Whether tool hosts run confined: on Linux, unless the user said `sandbox = "off"` here or
        MINI_AGENT_SANDBOX=off in the environment. Elsewhere tools run unconfined (`sandbox.available`)."""
        return sandbox.wanted(turned_off=self.sandbox == "off") and sys.platform == "linux"

    def registry(
        self,
        root: Path,
        *,
        secret_values: Collection[str] = (),
        client_caller: ClientToolCaller | None = None,
    ) -> ToolRegistry:
        """The tool registry these options describe, over `root`."""
        return ToolRegistry(
            root,
            timeout_sec=self.timeout_sec,
            max_output_bytes=self.max_output_bytes,
            max_memory_mb=self.max_memory_mb,
            inherit_secrets=self.inherit_secrets,
            secret_values=secret_values,
            client_caller=client_caller,
            confine=self.confined,
        )


class StoreOptions(Params):
    path: str | None = None
    enabled: bool = True


class TelemetryOptions(Params):
    """`telemetry`: where traces go (an OTLP/HTTP base URL, as `OTEL_EXPORTER_OTLP_ENDPOINT`; None: the
    environment decides) and whether prompts, completions and tool data go on the spans."""

    endpoint: str | None = Field(default=None, min_length=1)
    capture_content: bool | None = None


class InitOptions(Params):
    llm: LLMParams = Field(default_factory=LLMParams)
    tools: ToolHostOptions = Field(default_factory=ToolHostOptions)
    store: StoreOptions = Field(default_factory=StoreOptions)
    max_steps: int = Field(default=MAX_STEPS, ge=1, le=1000)
    system_prompt: str | None = None
    # Until the client says so (the editor's workspace trust), stored tool registrations are not imported.
    workspace_trusted: bool = False
    mcp_servers: list[McpServer] = Field(default_factory=list)  # for every session
    telemetry: TelemetryOptions = Field(default_factory=TelemetryOptions)


@dataclass(frozen=True, slots=True)
class ToolRegistration:
    """What a client asks to register: a workspace file's functions (`path`, optionally one `function`,
    with `options`), or a tool the client runs itself (`client`, with `options.name` and `input_schema`)."""

    path: str | None = None
    function: str | None = None
    options: ToolOptions = field(default_factory=ToolOptions)
    client: bool = False
    input_schema: dict[str, Any] | None = None
