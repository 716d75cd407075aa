"""The workspace configuration file, read by both front doors and the CLI.

As Python tools do it: a `[tool.mini-agent]` table in `pyproject.toml`, or the same keys at the top of
`.mini-agent/config.toml`, which wins when both exist (a whole-file choice, not a merge: one place
says what the workspace wants). Keys are snake_case. Never an API key, anywhere in the table (an
`api_key`, an MCP server's `Authorization` header or `*_API_KEY` variable): that comes from the
environment (`OPENAI_API_KEY`) or the client, because workspace files get committed and shared.
`app.workspace_file` finds the file and reads it (a file larger than `MAX_FILE_BYTES` is refused unread).

Precedence, most specific first: the request (or `initializationOptions`), this file, the
environment (`OPENAI_BASE_URL`, `MINI_AGENT_MODEL`), the user's settings (`app.user_settings`, made by
`mini-agent setup`), the defaults. A workspace that is not trusted
(a cloned repository, say) gets the file's harmless keys only: its `tools`, `mcp_servers`,
`approval.allow` and `llm.base_url` wait for trust, since they run its code or commands, approve for
the user, or send the conversation elsewhere. An API key goes only to the server it was set for: the
request's key to the request's base URL (or, when the request names none, to the environment's, the
user's or the default one), the environment's key to the environment's, the user's to the user's,
never to one the file names: of those whose server is the one used, the most specific is sent.
Each layer is an `InitOptions` of the fields it sets (`merged`): the doors parse their wire into one,
the file, the environment and the user's settings make theirs by field name, so no layer here speaks
a door's spelling.
"""

from __future__ import annotations

import logging
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypeVar

from pydantic import BaseModel, ConfigDict, Field, ValidationError, create_model

from mini_agent.app import trust, user_settings, workspace_file
from mini_agent.app.options import InitOptions, LLMParams, llm_fields
from mini_agent.core.contracts import LLMConfig
from mini_agent.core.errors import AgentError
from mini_agent.core.strict import parse

log = logging.getLogger(__name__)

MAX_FILE_BYTES = workspace_file.MAX_FILE_BYTES
# Names that hold a secret: a key `api_key` (any spelling: apiKey, api-key) anywhere in the table, and an
# MCP server's header or variable (`{name, value}`) named so, or `Authorization`.
_SECRET_NAMES = ("apikey",)
_SECRET_KEYS = ("clientsecret",)  # an OAuth client's secret: `oauth.clientSecretEnv` names its variable
_SECRET_HEADERS = ("authorization", "proxyauthorization")


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
    try:
        found = workspace_file.find(root)
    except workspace_file.Unreadable as exc:
        raise ConfigError(str(exc), file=exc.file) from None
    return WorkspaceConfig() if found is None else _parse(found.table, found.source, found.prefix)


def _secrets(table: Mapping[str, Any], prefix: str) -> Iterator[str]:
    """Where the table holds a secret, as dotted key paths (list items by index)."""
    stack: list[tuple[str, Any]] = [(prefix.rstrip("."), table)]
    while stack:
        where, value = stack.pop()
        at = f"{where}." if where else ""
        if isinstance(value, Mapping):
            name = value.get("name")
            if isinstance(name, str) and "value" in value and _secret_name(name, _SECRET_HEADERS):
                yield f"{where} ({name})"
            for key, item in value.items():
                if _secret_name(str(key), _SECRET_KEYS):
                    yield f"{at}{key}"
                stack.append((f"{at}{key}", item))
        elif isinstance(value, list):
            stack.extend((f"{at}{n}", item) for n, item in enumerate(value))


def _secret_name(name: str, exact: tuple[str, ...]) -> bool:
    plain = name.lower().replace("_", "").replace("-", "")
    return plain in exact or any(part in plain for part in _SECRET_NAMES)


def _parse(table: dict[str, Any], source: str, prefix: str) -> WorkspaceConfig:
    found = sorted(_secrets(table, prefix))
    if found:
        key = found[0]
        raise ConfigError(
            f"{source}: {key}: an API key never goes in a workspace file (it gets committed and shared); "
            "set OPENAI_API_KEY, or give it in the client's settings, instead",
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
    root: Path, request: InitOptions | None, env: Mapping[str, str]
) -> tuple[InitOptions, WorkspaceConfig]:
    """A workspace's options from every layer, and its file; either failing is an AgentError.
    `request` is what the door was handed, parsed (`initializationOptions`, or the ACP door's own).
    A request that says nothing of `workspace_trusted` gets the trust the user remembered for the
    folder (`app.trust`: the same folder, its workspace file naming the same things); one that says
    it (an editor's own workspace trust) decides."""
    config = load(root)
    asked = request or InitOptions()
    if "workspace_trusted" not in asked.model_fields_set and trust.is_trusted(root, config):
        asked = asked.model_copy(update={"workspace_trusted": True})
    return merged(config, asked, env, user_settings.load(env)), config


def merged(
    config: WorkspaceConfig,
    request: InitOptions | None,
    env: Mapping[str, str],
    user: user_settings.UserSettings | None = None,
) -> InitOptions:
    """The options the four layers make: each field the most specific layer that sets it says, an
    API key only where `_key_home` allows."""
    request = request or InitOptions()
    trusted = request.workspace_trusted
    from_env = {"base_url": env.get("OPENAI_BASE_URL"), "model": env.get("MINI_AGENT_MODEL"),
                "api_key": env.get("OPENAI_API_KEY")}  # fmt: skip
    from_file: dict[str, Any] = {
        "llm": {key: value for key, value in config.llm.items() if trusted or key != "base_url"},
        **({"max_steps": config.max_steps} if config.max_steps is not None else {}),
        **({"mcp_servers": list(config.mcp_servers)} if trusted else {}),
    }
    layers = [
        user.options(env) if user is not None else InitOptions(),
        parse("the environment", {"llm": {k: v for k, v in from_env.items() if v}}, InitOptions),
        parse(f"{config.source or 'the workspace file'}", from_file, InitOptions),
        request,
    ]
    out = InitOptions()
    for layer in layers:
        out = _overlay(out, layer)
    key = _key_home(out.llm.base_url, request.llm, env, user)
    return out.model_copy(update={"llm": out.llm.model_copy(update={"api_key": key})})


def _key_home(
    sent_to: str | None, asked: LLMParams, env: Mapping[str, str], user: user_settings.UserSettings | None
) -> str | None:
    """The one API key the merged options keep: a key set for the server they use. The request's
    belongs to the request's base URL (or, the request naming none, to the environment's, the user's
    or the default one), the environment's to the environment's, the user's to the user's; never to a
    base URL the workspace file names. The most specific key whose server is the one used is kept."""
    default = LLMConfig().base_url
    env_url = env.get("OPENAI_BASE_URL")
    home = env_url or (user.base_url if user is not None else None) or default
    candidates: list[tuple[str | None, str]] = []
    if "api_key" in asked.model_fields_set:
        candidates.append((asked.api_key, asked.base_url or home))
    if env.get("OPENAI_API_KEY"):
        candidates.append((env["OPENAI_API_KEY"], env_url or default))
    if user is not None and user.key(env):
        candidates.append((user.key(env), user.base_url))
    used = sent_to or default
    for key, owner in candidates:
        if _server(owner) == _server(used):
            return key
    if any(key for key, _owner in candidates):
        log.warning("no API key set for %s: the keys given are for other servers and are not sent there",
                    used)
    return None


M = TypeVar("M", bound=BaseModel)


def _overlay(lower: M, upper: M) -> M:
    """`lower` with each field `upper` sets (a nested model field by field; a list whole)."""
    update: dict[str, Any] = {}
    for name in upper.model_fields_set:
        mine, theirs = getattr(lower, name), getattr(upper, name)
        both = isinstance(theirs, BaseModel) and type(mine) is type(theirs)
        update[name] = _overlay(mine, theirs) if both else theirs
    return lower.model_copy(update=update)


def _server(base_url: str) -> str:
    return base_url.rstrip("/")


def needs_trust(config: WorkspaceConfig) -> bool:
    """Whether the file says something only a trusted workspace gets: tools (importing them runs the
    workspace's code), an allow-list, or a model server to send the conversation to (`trust.Runs`)."""
    return trust.Runs.of(config).needed
