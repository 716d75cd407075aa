"""The user's own model server, as `mini-agent setup` keeps it: below the environment and the
workspace file, above the defaults, read by every door and the CLI (`config.merged_options`).

One JSON file in the user's state folder (`plumbing.statedir`), never in a workspace:
`{"version": 1, "llm": {"baseUrl", "model"?, "apiKey"?, "apiKeyEnv"?}, "tools"?: {"sandbox"?}}`,
written whole, 0600 in a 0700 folder, as the trust store is. `tools.sandbox = "off"` is the user's
own way to run tools unconfined (`mini-agent setup --sandbox off`); no workspace file can say it.
The API key is kept there, or the name of the environment variable that holds it (`apiKeyEnv`);
either belongs to this `baseUrl` only. A file that cannot be used (unreadable, too large, not this
shape) is a `SettingsError` naming it and the key: the user wrote it, so it is not skipped in silence.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from mini_agent.app.options import InitOptions, LLMParams, ToolHostOptions
from mini_agent.core.errors import AgentError
from mini_agent.plumbing.statedir import locked, state_dir, write_private

SETTINGS_FILE = "settings.json"
VERSION = 1
MAX_BYTES = 64 * 1024
_ENV_NAME = r"^[A-Za-z_][A-Za-z0-9_]{0,127}$"


class SettingsError(AgentError):
    """The user's settings file cannot be used; the message names it, the key, and what to do."""

    reason = "bad_user_settings"


class _Llm(BaseModel):
    model_config = ConfigDict(extra="forbid", strict=True, populate_by_name=True)

    base_url: str = Field(alias="baseUrl", min_length=1, max_length=2048, pattern=r"^https?://")
    model: str | None = Field(default=None, min_length=1, max_length=512)
    api_key: str | None = Field(default=None, alias="apiKey", min_length=1, max_length=4096)
    api_key_env: str | None = Field(default=None, alias="apiKeyEnv", pattern=_ENV_NAME)


class _Tools(BaseModel):
    model_config = ConfigDict(extra="forbid", strict=True)

    sandbox: Literal["on", "off"] | None = None


class _File(BaseModel):
    model_config = ConfigDict(extra="forbid", strict=True)

    version: int = VERSION
    llm: _Llm
    tools: _Tools = Field(default_factory=_Tools)


@dataclass(frozen=True, slots=True)
class UserSettings:
    """The user's model server: its base URL, the model to use there, and its key (kept, or the name
    of the variable holding it)."""

    base_url: str
    model: str | None = None
    api_key: str | None = None
    api_key_env: str | None = None
    sandbox: Literal["on", "off"] | None = None  # `off`: tools run unconfined, the user's choice alone

    def key(self, env: Mapping[str, str]) -> str | None:
        """The API key for `base_url`: the one kept, else the named variable's value."""
        if self.api_key:
            return self.api_key
        return env.get(self.api_key_env) or None if self.api_key_env else None

    def options(self, env: Mapping[str, str]) -> InitOptions:
        """These settings as a layer of options: `llm`, and `tools.sandbox` when set."""
        key = self.key(env)
        llm = LLMParams(base_url=self.base_url, **({"model": self.model} if self.model else {}),
                        **({"api_key": key} if key else {}))  # fmt: skip
        if self.sandbox is None:
            return InitOptions(llm=llm)
        return InitOptions(llm=llm, tools=ToolHostOptions(sandbox=self.sandbox))


def path(env: Mapping[str, str] | None = None) -> Path:
    return state_dir(env) / SETTINGS_FILE


def load(env: Mapping[str, str] | None = None) -> UserSettings | None:
    """The user's settings; None when there are none."""
    where = path(env)
    try:
        with where.open("rb") as file:
            data = file.read(MAX_BYTES + 1)
    except FileNotFoundError:
        return None
    except OSError as exc:
        raise _unusable(where, f"cannot be read ({exc})") from None
    if len(data) > MAX_BYTES:
        raise _unusable(where, f"larger than {MAX_BYTES} bytes")
    try:
        parsed = _File.model_validate(json.loads(data))
    except (ValueError, RecursionError) as exc:
        first = exc.errors(include_url=False)[0] if isinstance(exc, ValidationError) else None
        key = ".".join(str(part) for part in first["loc"]) if first else ""
        words = f"{key}: {first['msg']}" if first else f"not JSON ({exc})"
        raise _unusable(where, words, key) from None
    llm = parsed.llm
    return UserSettings(llm.base_url, llm.model, llm.api_key, llm.api_key_env, parsed.tools.sandbox)


def sandbox_choice(env: Mapping[str, str] | None = None) -> Literal["on", "off"] | None:
    """The sandbox choice the user's settings hold, for a place that reads it outside the options
    (an announcement, `mini-agent mcp`, a new set-up keeping it); None when unsaid or when the file
    cannot be used (that is said where the options are read)."""
    try:
        kept = load(env)
    except SettingsError:
        return None
    return kept.sandbox if kept is not None else None


def save(settings: UserSettings, env: Mapping[str, str] | None = None) -> Path:
    """Write the settings whole (0600), under the state folder's lock; returns the file."""
    where = path(env)
    llm = _Llm.model_validate({
        "baseUrl": settings.base_url, "model": settings.model, "apiKey": settings.api_key,
        "apiKeyEnv": settings.api_key_env,
    })  # fmt: skip
    kept: dict[str, Any] = {"version": VERSION, "llm": llm.model_dump(by_alias=True, exclude_none=True)}
    if settings.sandbox is not None:
        kept["tools"] = {"sandbox": settings.sandbox}
    text = json.dumps(kept, indent=1)
    with locked(where):
        write_private(where, text + "\n")
    return where


def _unusable(where: Path, words: str, key: str = "") -> SettingsError:
    return SettingsError(f"{where}: {words}; run `mini-agent setup` again", file=str(where), key=key)
