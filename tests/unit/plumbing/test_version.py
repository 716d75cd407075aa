"""The version every door reports is the one pyproject.toml sets."""

from __future__ import annotations

import tomllib
from pathlib import Path

import mini_agent
from mini_agent.plumbing.version import VERSION

PYPROJECT = Path(__file__).resolve().parents[3] / "pyproject.toml"


def test_the_version_is_the_one_pyproject_sets_and_the_package_root_says_the_same() -> None:
    declared = tomllib.loads(PYPROJECT.read_text(encoding="utf-8"))["project"]["version"]
    assert declared == VERSION and mini_agent.__version__ == declared
