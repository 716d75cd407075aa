"""The trust store: a digest that changes with what trusting runs, a file written 0600 and read as empty
when it is corrupt or too large, and the workspace file read the same way with or without validation."""

from __future__ import annotations

import json
import logging
from pathlib import Path

import pytest
from mini_agent.app import config, trust


def folder(tmp_path: Path, tools: str = '["t.py"]') -> Path:
    root = tmp_path / "ws"
    root.mkdir(exist_ok=True)
    (root / "t.py").write_text("x = 1\n", encoding="utf-8")
    (root / "pyproject.toml").write_text(
        f'[tool.mini-agent]\ntools = {tools}\n[tool.mini-agent.llm]\nbase_url = "http://m/v1"\n'
        '[[tool.mini-agent.mcp_servers]]\nname = "d"\ncommand = "d"\nargs = ["--x"]\n'
        '[tool.mini-agent.approval]\nallow = ["w"]\n',
        encoding="utf-8",
    )
    return root


def test_remember_until_a_tool_file_or_the_list_changes(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    root = folder(tmp_path)
    state_dir = tmp_path / "fresh" / "state"
    monkeypatch.setenv(trust.STATE_DIR_ENV, str(state_dir))
    words = trust.remember(root, config.load(root))
    assert words == ["tools file t.py", "MCP server d: d --x", "model server http://m/v1", "always allow: w"]
    assert trust.is_trusted(root, config.load(root))
    assert (state_dir / "trust.json").stat().st_mode & 0o777 == 0o600
    assert state_dir.stat().st_mode & 0o777 == 0o700
    (root / "t.py").write_text("x = 2\n", encoding="utf-8")
    assert not trust.is_trusted(root, config.load(root))
    trust.remember(root, config.load(root))
    folder(tmp_path, tools='["t.py", "u.py"]')
    assert not trust.is_trusted(root, config.load(root))
    assert trust.forget(root) is not None and trust.forget(root) is None


def test_the_raw_read_and_the_validated_one_digest_alike(tmp_path: Path) -> None:
    root = folder(tmp_path)
    raw = trust.read_runs(root)
    assert raw is not None and raw.digest(root) == trust.Runs.of(config.load(root)).digest(root)


@pytest.mark.parametrize("content", ["{not json", '{"folders": []}', "[]"])
def test_a_corrupt_trust_file_is_an_empty_store(
    tmp_path: Path, state_dir: Path, content: str, caplog: pytest.LogCaptureFixture
) -> None:
    root = folder(tmp_path)
    (state_dir / "trust.json").write_text(content, encoding="utf-8")
    with caplog.at_level(logging.WARNING):
        assert not trust.is_trusted(root, config.load(root))
    assert "no folder is trusted from it" in caplog.text
    trust.remember(root, config.load(root))  # and it is written over whole
    assert trust.is_trusted(root, config.load(root))


def test_an_oversized_trust_file_is_not_read(tmp_path: Path, state_dir: Path) -> None:
    root = folder(tmp_path)
    trust.remember(root, config.load(root))
    data = json.loads((state_dir / "trust.json").read_text())
    data["padding"] = "x" * trust.MAX_STORE_BYTES
    (state_dir / "trust.json").write_text(json.dumps(data), encoding="utf-8")
    assert not trust.is_trusted(root, config.load(root))


def test_a_folder_cannot_hold_its_own_trust_file(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    root = folder(tmp_path)
    monkeypatch.setenv(trust.STATE_DIR_ENV, str(root / ".state"))
    with pytest.raises(ValueError, match="cannot vouch for itself"):
        trust.remember(root, config.load(root))
