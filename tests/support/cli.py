"""The `mini-agent` command line run as a script runs it: arguments in, exit code and output back."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

from .daemon import daemon_env

CLI = [sys.executable, "-m", "mini_agent.cli"]


def cli_env(**extra: str) -> dict[str, str]:
    env = daemon_env(COLUMNS="120", TERM="xterm-256color")
    for name in ("OPENAI_BASE_URL", "OPENAI_API_KEY", "MINI_AGENT_MODEL", "NO_COLOR"):
        env.pop(name, None)
    return {**env, **extra}


def run_cli(args: list[str], cwd: Path, *, stdin: str | None = None,
            **env: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([*CLI, *args], cwd=cwd, env=cli_env(**env), input=stdin, capture_output=True,
                          text=True, timeout=120, check=False)
