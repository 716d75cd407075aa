"""The scripted model server's script, checked without serving it."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from mini_agent.scripted import Script, Turn
from mini_agent.scripted.text import cut_at_stops


def test_script_validation_names_the_bad_key(tmp_path: Path) -> None:
    with pytest.raises(ValueError, match="contnet"):
        Script.from_json([{"contnet": "typo"}])
    with pytest.raises(ValueError, match="either content or chunks"):
        Turn.from_json({"content": "a", "chunks": ["a"]})
    path = tmp_path / "script.json"
    path.write_text(json.dumps({"turns": [{"content": "x", "delay": 0.5}], "honour_stop": False}))
    script = Script.load(path)
    assert script.turns == (Turn(content="x", delay=0.5),) and not script.honour_stop


def test_the_scripted_server_cuts_at_the_earliest_stop_string_its_own_way() -> None:
    stops = ["\nObservation:", "Observation:", ""]
    assert cut_at_stops("Action: x\nObservation: y", stops) == "Action: x"
    assert cut_at_stops("a Observation: b\nObservation: c", stops) == "a "
    assert cut_at_stops("no stop here", stops) == "no stop here"
    assert cut_at_stops("Observation: at once", stops) == ""
