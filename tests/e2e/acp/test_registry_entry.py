"""`packaging/acp-registry/mini-agent/`, checked by the ACP Registry's own code (vendored unchanged in
`packaging/acp-registry/upstream/`): the entry and its icon pass the registry CI's validation, its
version is the package's, and the agent passes the registry's launch check (it starts, initializes and
offers a terminal sign-in), all offline."""

from __future__ import annotations

import importlib.util
import json
import sys
import tomllib
from pathlib import Path
from types import ModuleType

import pytest

from ...support.daemon import ROOT, daemon_env

REGISTRY = ROOT / "packaging" / "acp-registry"
ENTRY = REGISTRY / "mini-agent"


def upstream(name: str) -> ModuleType:
    path = REGISTRY / "upstream" / f"{name}.py"
    spec = importlib.util.spec_from_file_location(f"acp_registry_{name}", path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_the_entry_passes_the_registrys_own_validation(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("SKIP_URL_VALIDATION", "1")  # offline, as the registry's own switch allows
    build = upstream("build_registry")
    agent = json.loads((ENTRY / "agent.json").read_text(encoding="utf-8"))
    schema = json.loads((REGISTRY / "upstream" / "agent.schema.json").read_text(encoding="utf-8"))
    assert build.validate_agent(agent, ENTRY.name, schema) == []
    assert build.validate_distribution_versions(agent["version"], agent["distribution"]) == []
    assert build.validate_icon(ENTRY / "icon.svg") == []
    package = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))["project"]
    assert agent["version"] == package["version"]  # the version has one source: pyproject.toml
    pinned = f"{package['name']}=={package['version']}"
    assert agent["distribution"]["uvx"] == {"package": pinned, "args": ["acp"]}


def test_a_broken_entry_is_caught_by_the_same_checks() -> None:
    build = upstream("build_registry")
    schema = json.loads((REGISTRY / "upstream" / "agent.schema.json").read_text(encoding="utf-8"))
    agent = json.loads((ENTRY / "agent.json").read_text(encoding="utf-8"))
    assert build.validate_agent({**agent, "id": "Mini Agent"}, ENTRY.name, schema)
    wrong = {"uvx": {"package": "mini-agent==9.9.9", "args": ["acp"]}}
    assert build.validate_distribution_versions(agent["version"], wrong)


def test_the_agent_passes_the_registrys_launch_check(tmp_path: Path) -> None:
    client = upstream("client")
    args = json.loads((ENTRY / "agent.json").read_text(encoding="utf-8"))["distribution"]["uvx"]["args"]
    command = [sys.executable, "-m", "mini_agent", *args]  # what `uvx mini-agent acp` runs
    result = client.run_auth_check(command, cwd=tmp_path, env=daemon_env(HOME=str(tmp_path)), timeout=60)
    assert result.success, result.error
    assert {(method.id, method.type) for method in result.auth_methods} == {
        ("setup", "terminal"), ("environment", "env_var")
    }
