"""`mini-agent trust DIR` covers what trusting runs, not only the files the workspace file names: after a
`git pull` changes a module a trusted tool file imports (two levels down), or the script a trusted MCP
server entry runs, a daemon started there no longer trusts the folder and says so, until it is trusted
again; a folder whose imports go past the digest's bound cannot be remembered at all."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from ...support.cli import run_cli
from ...support.raw import RawDaemon
from ...support.tools import MARKED


def daemon_view(root: Path) -> tuple[dict[str, Any], list[str], list[str]]:
    """A daemon's `trust` at initialize, its tools, and the messages it showed, in a folder."""
    daemon = RawDaemon(root)
    try:
        trust = daemon.initialize()["result"]["capabilities"]["experimental"]["agent"]["trust"]
        tools = [tool["name"] for tool in daemon.request("agent/listTools", {})["result"]["tools"]]
        shown = [n["params"]["message"] for n in daemon.notifications if n["method"] == "window/showMessage"]
    finally:
        daemon.close()
    return trust, tools, shown


def trusted(root: Path, tmp_path: Path) -> None:
    done = run_cli(["trust", str(root)], tmp_path)
    assert done.returncode == 0, done.stderr
    trust, _, shown = daemon_view(root)
    assert trust["trusted"] and trust["remembered"] and shown == [], (trust, shown)


def asked_again(root: Path) -> list[str]:
    trust, tools, shown = daemon_view(root)
    assert not trust["trusted"] and not trust["remembered"] and trust["needed"], trust
    assert any("not trusted" in message for message in shown), shown
    return tools


def test_a_change_to_a_module_a_trusted_tool_file_imports_two_levels_down_asks_again(
    workspace: Path, tmp_path: Path
) -> None:
    (workspace / "marked.py").write_text("import helper\n" + MARKED, encoding="utf-8")
    (workspace / "helper.py").write_text("from lib import deep\n", encoding="utf-8")
    (workspace / "lib").mkdir()
    (workspace / "lib" / "__init__.py").write_text("", encoding="utf-8")
    (workspace / "lib" / "deep.py").write_text("VALUE = 1\n", encoding="utf-8")
    (workspace / "pyproject.toml").write_text('[tool.mini-agent]\ntools = ["marked.py"]\n', encoding="utf-8")
    trusted(workspace, tmp_path)
    _, tools, _ = daemon_view(workspace)
    assert "mark" in tools

    (workspace / "lib" / "deep.py").write_text("import os\nos.system('echo pulled')\n", encoding="utf-8")
    assert "mark" not in asked_again(workspace)  # the tool file is not imported: nothing of it ran
    trusted(workspace, tmp_path)


def test_a_change_to_the_script_a_trusted_mcp_server_runs_asks_again(workspace: Path, tmp_path: Path) -> None:
    (workspace / "srv.py").write_text("import srvlib\n", encoding="utf-8")
    (workspace / "srvlib.py").write_text("NAME = 'docs'\n", encoding="utf-8")
    (workspace / "pyproject.toml").write_text(
        '[tool.mini-agent]\n[[tool.mini-agent.mcp_servers]]\nname = "docs"\ncommand = "python3"\n'
        'args = ["srv.py"]\n',
        encoding="utf-8",
    )
    trusted(workspace, tmp_path)
    pulled = "import srvlib\nimport os\nos.system('echo pulled')\n"
    (workspace / "srv.py").write_text(pulled, encoding="utf-8")
    asked_again(workspace)
    trusted(workspace, tmp_path)
    (workspace / "srvlib.py").write_text("NAME = 'pulled'\n", encoding="utf-8")  # what srv.py imports
    asked_again(workspace)


def test_a_folder_whose_tools_import_more_modules_than_the_digest_follows_cannot_be_remembered(
    workspace: Path, tmp_path: Path
) -> None:
    for n in range(600):
        (workspace / f"m{n}.py").write_text(f"import m{n + 1}\n", encoding="utf-8")
    (workspace / "marked.py").write_text("import m0\n" + MARKED, encoding="utf-8")
    (workspace / "pyproject.toml").write_text('[tool.mini-agent]\ntools = ["marked.py"]\n', encoding="utf-8")
    done = run_cli(["trust", str(workspace)], tmp_path)
    assert done.returncode != 0 and "cannot be remembered" in done.stderr, (done.stdout, done.stderr)
    assert "more than 500 files to follow" in done.stderr
    asked_again(workspace)
