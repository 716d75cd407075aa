"""Trust on the LSP door: `agent/trustWorkspace {remember: true}` records the folder in the user's trust
store, so the next daemon that is not told otherwise trusts it; an editor that sends its own
`workspaceTrusted` decides; `agent/untrustWorkspace` forgets it for the next daemon."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from ...support.tools import MARKED


async def names(client: Any) -> list[str]:
    return [tool["name"] for tool in (await client.request("agent/listTools", {}))["tools"]]


@pytest.mark.asyncio
async def test_trust_workspace_remembers_and_untrust_forgets(
    workspace: Path, daemon_factory: Callable[..., Any], state_dir: Path
) -> None:
    (workspace / "marked.py").write_text(MARKED, encoding="utf-8")
    (workspace / "pyproject.toml").write_text('[tool.mini-agent]\ntools = ["marked.py"]\n', encoding="utf-8")
    first = await daemon_factory({})
    assert "mark" not in await names(first)
    trusted = await first.request("agent/trustWorkspace", {"remember": True})
    assert trusted["remembered"] and "mark" in [tool["name"] for tool in trusted["tools"]]
    stored = json.loads((state_dir / "trust.json").read_text())["folders"][str(workspace.resolve())]
    assert stored["wouldRun"] == ["tools file marked.py"] and len(stored["digest"]) == 64
    assert (state_dir / "trust.json").stat().st_mode & 0o777 == 0o600

    assert "mark" in await names(await daemon_factory({}))  # remembered: trusted without asking
    assert "mark" not in await names(await daemon_factory({"workspaceTrusted": False}))  # the editor decides

    later = await daemon_factory({})
    forgotten = await later.request("agent/untrustWorkspace", {})
    assert forgotten == {"forgotten": True, "wouldRun": ["tools file marked.py"]}
    assert "mark" in await names(later)  # this daemon stays as it is; the next one asks again
    assert "mark" not in await names(await daemon_factory({}))
