"""The workspace configuration file, read by both front doors and the CLI.

As Python tools do it: a `[tool.mini-agent]` table in `pyproject.toml`, or the same keys at the top of
`.mini-agent/config.toml`, which wins when both exist (a whole-file choice, not a merge: one place
says what the workspace wants). Keys are snake_case. Never an API key: that comes from the
environment (`OPENAI_API_KEY`) or the client, because workspace files get committed and shared.

Precedence, most specific first: the request (or `initializationOptions`), this file, the
environment (`OPENAI_BASE_URL`, `MINI_AGENT_MODEL`), the defaults. A workspace that is not trusted
(a cloned repository, say) gets the file's harmless keys only: its `tools`, `mcp_servers`,
`approval.allow` and `llm.base_url` wait for trust, since they run its code or commands, approve for
the user, or send the conversation elsewhere. `merged_options` builds the
`initializationOptions` object those layers make, so both doors parse one value the one way they
always have (`params.InitOptions`).
"""

from __future__ import annotations

import tomllib
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from pydantic import BaseModel, ConfigDict, Field, ValidationError, create_model
from pydantic.alias_generators import to_camel

from mini_agent.app.options import InitOptions, llm_fields
from mini_agent.core.errors import AgentError
from mini_agent.core.strict import parse

CONFIG_FILE = Path(".mini-agent") / "config.toml"
PYPROJECT = "pyproject.toml"


class ConfigError(AgentError):
    """A workspace configuration file that cannot be used; the message names the file and the key."""

    reason = "bad_workspace_config"


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid", strict=True)


# The model settings a workspace file may set (never `api_key`): `LLMConfig`'s own fields, types and bounds.
FILE_LLM_KEYS = ("base_url", "model", "tool_mode", "temperature", "max_tokens", "context_window")

if TYPE_CHECKING:
    _LLMKeys = _Strict
else:
    _LLMKeys = create_model("_LLMKeys", __base__=_Strict, **llm_fields(FILE_LLM_KEYS))


class _ApprovalKeys(_Strict):
    """Standing decisions every new session starts with, by tool name (the rest ask as declared)."""

    allow: list[str] = Field(default_factory=list)
    reject: list[str] = Field(default_factory=list)


class _Keys(_Strict):
    tools: list[str] = Field(default_factory=list)
    max_steps: int | None = Field(default=None, ge=1, le=1000)
    llm: _LLMKeys = Field(default_factory=_LLMKeys)
    mcp_servers: list[dict[str, Any]] = Field(default_factory=list)
    approval: _ApprovalKeys = Field(default_factory=_ApprovalKeys)


@dataclass(frozen=True, slots=True)
class WorkspaceConfig:
    """What the file says; `source` names where it was read ("" when the workspace has none)."""

    source: str = ""
    tools: tuple[str, ...] = ()
    max_steps: int | None = None
    llm: Mapping[str, Any] = field(default_factory=dict)
    mcp_servers: tuple[Mapping[str, Any], ...] = ()
    allow: tuple[str, ...] = ()
    reject: tuple[str, ...] = ()


def load(root: Path) -> WorkspaceConfig:
    """The workspace's configuration; a missing file is an empty one, a broken one a ConfigError."""
    own = root / CONFIG_FILE
    if own.is_file():
        return _parse(_read(own), str(own), "")
    pyproject = root / PYPROJECT
    if pyproject.is_file():
        table = _read(pyproject).get("tool", {}).get("mini-agent")
        if table is not None:
            if not isinstance(table, dict):
                raise ConfigError(f"{pyproject}: [tool.mini-agent] must be a table")
            return _parse(table, str(pyproject), "tool.mini-agent.")
    return WorkspaceConfig()


def _read(path: Path) -> dict[str, Any]:
    try:
        return tomllib.loads(path.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, tomllib.TOMLDecodeError) as exc:
        raise ConfigError(f"{path}: cannot read it as TOML: {exc}", file=str(path)) from None


def _parse(table: dict[str, Any], source: str, prefix: str) -> WorkspaceConfig:
    llm = table.get("llm")
    if "api_key" in table or (isinstance(llm, dict) and "api_key" in llm):
        key = f"{prefix}llm.api_key" if isinstance(llm, dict) and "api_key" in llm else f"{prefix}api_key"
        raise ConfigError(
            f"{source}: {key}: an API key never goes in a workspace file; set OPENAI_API_KEY instead",
            file=source,
            key=key,
        )
    try:
        keys = _Keys.model_validate(table)
    except ValidationError as exc:
        first = exc.errors(include_url=False)[0]
        key = prefix + ".".join(str(part) for part in first["loc"])
        problems = "; ".join(
            f"{prefix}{'.'.join(str(p) for p in e['loc'])}: {e['msg']}" for e in exc.errors(include_url=False)
        )
        raise ConfigError(f"{source}: {problems}", file=source, key=key) from None
    return WorkspaceConfig(
        source=source,
        tools=tuple(keys.tools),
        max_steps=keys.max_steps,
        llm=keys.llm.model_dump(exclude_none=True),
        mcp_servers=tuple(keys.mcp_servers),
        allow=tuple(keys.approval.allow),
        reject=tuple(keys.approval.reject),
    )


def resolve(
    root: Path, request: Mapping[str, Any] | None, env: Mapping[str, str]
) -> tuple[InitOptions, WorkspaceConfig]:
    """A workspace's options from all three layers, and its file; either failing is an AgentError."""
    config = load(root)
    return parse("initializationOptions", merged_options(config, request, env), InitOptions), config


def merged_options(
    config: WorkspaceConfig, request: Mapping[str, Any] | None, env: Mapping[str, str]
) -> dict[str, Any]:
    """The `initializationOptions` the three layers make, most specific last in the merge."""
    trusted = bool((request or {}).get("workspaceTrusted"))
    from_file = {key: value for key, value in config.llm.items() if trusted or key != "base_url"}
    from_env = {
        "baseUrl": env.get("OPENAI_BASE_URL"),
        "model": env.get("MINI_AGENT_MODEL"),
        "apiKey": env.get("OPENAI_API_KEY"),
    }
    layers: list[Mapping[str, Any]] = [
        {"llm": {key: value for key, value in from_env.items() if value}},
        {
            "llm": {to_camel(key): value for key, value in from_file.items()},
            **({"maxSteps": config.max_steps} if config.max_steps is not None else {}),
            **({"mcpServers": [_camel(server) for server in config.mcp_servers]} if trusted else {}),
        },
        request or {},
    ]
    merged: dict[str, Any] = {}
    for layer in layers:
        merged = _deep_merge(merged, layer)
    llm = merged["llm"]
    if llm.get("apiKey") == from_env["apiKey"] and llm.get("baseUrl") != from_env["baseUrl"]:
        # the environment's key belongs to the environment's server, not to one a workspace file names
        llm.pop("apiKey", None)
    return merged


def needs_trust(config: WorkspaceConfig) -> bool:
    """Whether the file says something only a trusted workspace gets: tools (importing them runs the
    workspace's code), an allow-list, or a model server to send the conversation to."""
    return bool(config.tools or config.allow or config.mcp_servers or "base_url" in config.llm)


def _camel(server: Mapping[str, Any]) -> dict[str, Any]:
    return {to_camel(key): value for key, value in server.items()}


def _deep_merge(base: Mapping[str, Any], over: Mapping[str, Any]) -> dict[str, Any]:
    out = dict(base)
    for key, value in over.items():
        if isinstance(value, Mapping) and isinstance(out.get(key), Mapping):
            out[key] = _deep_merge(out[key], value)
        else:
            out[key] = value
    return out
