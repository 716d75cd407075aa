"""What the scripted model server is told to say, and what the seed scenario's answer must be."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any


def action(name: str, arguments: dict[str, Any], thought: str = "Working on it.") -> dict[str, Any]:
    return {"content": f"Thought: {thought}\nAction: {name}\nAction Input: {json.dumps(arguments)}"}


def non_empty_lines(path: Path) -> int:
    return sum(1 for line in path.read_text(encoding="utf-8").splitlines() if line.strip())
