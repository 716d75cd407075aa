"""A second, independent ACP client: `acpx` (npm, a headless ACP client CLI) runs
`--agent "mini-agent acp"` on the seed scenario against the scripted model server, and its JSON output
(the JSON-RPC stream it saw) is checked. scripts/test.sh installs acpx into .venv/acpx."""

from __future__ import annotations

from pathlib import Path

import pytest
from mini_agent.cli.demo import ANSWER, SCRIPT, TASK
from mini_agent.scripted import ReplayServer

from ...support.acp import calls, run_acpx, said, workspace_config
from ...support.scripted import non_empty_lines


@pytest.mark.asyncio
async def test_acpx_runs_the_seed_scenario(workspace: Path, tmp_path: Path) -> None:
    expected = non_empty_lines(workspace / "schema.py")
    async with ReplayServer(SCRIPT) as model:
        workspace_config(workspace, model.base_url)
        code, stream, err = await run_acpx(workspace, tmp_path, "exec", TASK)
    assert code == 0, err
    prompt_id = next(m["id"] for m in stream if m.get("method") == "session/prompt")
    answer = next(m for m in stream if m.get("id") == prompt_id and "method" not in m)
    assert answer["result"]["stopReason"] == "end_turn"
    updates = [m["params"]["update"] for m in stream if m.get("method") == "session/update"]
    by_call = list(calls(updates).values())
    assert [c[0]["title"].split("(")[0] for c in by_call] == [
        "list_python_files",
        "count_file_lines",
        "count_file_lines",
    ]
    assert [[u["status"] for u in c] for c in by_call] == [
        ["pending", "in_progress", "completed"],
        ["pending", "in_progress", "failed"],
        ["pending", "in_progress", "completed"],
    ]
    repair = by_call[1][-1]["content"][0]["content"]["text"]
    assert "unknown argument 'path'" in repair and "file_path" in repair
    assert said(updates) == ANSWER.format(count=expected)
