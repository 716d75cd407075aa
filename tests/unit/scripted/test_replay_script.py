"""The scripted model server's script, checked without serving it."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from mini_agent.scripted import Script, Turn


def test_script_validation_names_the_bad_key(tmp_path: Path) -> None:
    with pytest.raises(ValueError, match="contnet"):
        Script.from_json([{"contnet": "typo"}])
    with pytest.raises(ValueError, match="either content or chunks"):
        Turn.from_json({"content": "a", "chunks": ["a"]})
    path = tmp_path / "script.json"
    path.write_text(json.dumps({"turns": [{"content": "x", "delay": 0.5}], "honour_stop": False}))
    script = Script.load(path)
    assert script.turns == (Turn(content="x", delay=0.5),) and not script.honour_stop
