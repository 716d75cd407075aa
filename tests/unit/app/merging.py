"""The options the layers make, written back as a client would have sent them (camelCase, only what
some layer set), so the tests of the layering read as the options a user writes."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from mini_agent.app.config import WorkspaceConfig, merged
from mini_agent.app.options import InitOptions
from mini_agent.app.user_settings import UserSettings
from mini_agent.core.strict import parse


def merged_wire(
    config: WorkspaceConfig, request: Mapping[str, Any] | None, env: Mapping[str, str],
    user: UserSettings | None = None,
) -> dict[str, Any]:
    sent = parse("initializationOptions", request, InitOptions)
    return merged(config, sent, env, user).model_dump(by_alias=True, exclude_unset=True, exclude_none=True)
