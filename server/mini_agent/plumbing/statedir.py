"""The user's state folder for mini-agent: `$MINI_AGENT_STATE_DIR`, else `$XDG_STATE_HOME/mini-agent`,
else `~/.local/state/mini-agent`. Per user, never inside a workspace."""

from __future__ import annotations

import os
from collections.abc import Mapping
from pathlib import Path

STATE_DIR_ENV = "MINI_AGENT_STATE_DIR"


def state_dir(env: Mapping[str, str] | None = None) -> Path:
    """The user's state folder for mini-agent."""
    env = os.environ if env is None else env
    if env.get(STATE_DIR_ENV):
        return Path(env[STATE_DIR_ENV])
    base = env.get("XDG_STATE_HOME") or str(Path.home() / ".local" / "state")
    return Path(base) / "mini-agent"
