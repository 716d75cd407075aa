"""`mini-agent trust` and `mini-agent untrust` run at the same time, as separate processes on one trust
store: each decision survives the others (the store is changed under a lock, re-read inside it)."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

from ...support.cli import CLI, cli_env

ROUNDS = 12
WORKSPACE_FILE = '[tool.mini-agent.approval]\nallow = ["read_file"]\n'


def folders(tmp_path: Path, names: str) -> dict[str, Path]:
    made = {}
    for name in names:
        root = tmp_path / name
        root.mkdir()
        (root / "pyproject.toml").write_text(WORKSPACE_FILE, encoding="utf-8")
        made[name] = root.resolve()
    return made


def stored(state_dir: Path) -> set[str]:
    path = state_dir / "trust.json"
    return set(json.loads(path.read_text())["folders"]) if path.exists() else set()


def at_once(commands: list[list[str]], cwd: Path) -> None:
    """Start every command before waiting for any; each must succeed."""
    started = [subprocess.Popen([*CLI, *args], cwd=cwd, env=cli_env(), stdout=subprocess.PIPE,
                                stderr=subprocess.PIPE, text=True) for args in commands]
    for process, args in zip(started, commands, strict=True):
        out, err = process.communicate(timeout=120)
        assert process.returncode == 0, (args, out, err)


def test_untrust_racing_trust_loses_neither_decision_in_twelve_rounds(
    tmp_path: Path, state_dir: Path
) -> None:
    roots = folders(tmp_path, "ABCD")
    lost = []
    for round_ in range(ROUNDS):
        # One race of four processes: trust two folders while the two trusted before are untrusted.
        trusted, untrusted = ("AC", "BD") if round_ % 2 == 0 else ("BD", "AC")
        at_once([*(["trust", str(roots[name])] for name in trusted),
                 *(["untrust", str(roots[name])] for name in untrusted)], tmp_path)
        now = stored(state_dir)
        if now != {str(roots[name]) for name in trusted}:
            lost.append((round_, sorted(Path(key).name for key in now)))
    assert lost == [], f"{len(lost)} of {ROUNDS} rounds lost a decision: {lost}"
