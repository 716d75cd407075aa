"""What each declaration gets from the sandbox, and how a refusal is explained: the pure part of
`tools.sandbox` (the drills that apply it are in tests/integration/tools/test_sandbox.py)."""

from __future__ import annotations

from pathlib import Path

import pytest
from mini_agent.core.contracts import Expansion
from mini_agent.tools import sandbox
from mini_agent.tools.protocol import CallResult

ROOT = Path("/work/space")


def test_a_read_only_tool_gets_no_writes_and_no_network() -> None:
    confinement = sandbox.for_tool(ROOT, "/tmp", read_only=True, open_world=None)
    assert (confinement.writable, confinement.network) == ((), False)
    assert confinement.words() == "no writes; no network"


def test_an_undeclared_tool_writes_the_workspace_and_the_temp_folder_and_has_no_network() -> None:
    confinement = sandbox.for_tool(ROOT, "/tmp", read_only=None, open_world=None)
    assert confinement.writable == (str(ROOT), "/tmp") and not confinement.network


def test_the_protected_paths_are_those_that_exist_and_one_made_later_changes_the_confinement(
    tmp_path: Path,
) -> None:
    (tmp_path / ".git").mkdir()
    (tmp_path / ".env").write_text("KEY=1\n")
    before = sandbox.for_tool(tmp_path, "/tmp", read_only=None, open_world=None)
    assert before.protected == (str(tmp_path / ".git"), str(tmp_path / ".env"))
    (tmp_path / ".mini-agent").mkdir()  # made after a host started with `before`: that host is not reused
    after = sandbox.for_tool(tmp_path, "/tmp", read_only=None, open_world=None)
    assert after.protected == (str(tmp_path / ".git"), str(tmp_path / ".mini-agent"), str(tmp_path / ".env"))
    assert after != before


def test_an_open_world_tool_gets_the_network_and_the_same_writes() -> None:
    confinement = sandbox.for_tool(ROOT, "/tmp", read_only=False, open_world=True)
    assert confinement.network and confinement.writable == (str(ROOT), "/tmp")


def test_a_stdio_mcp_server_gets_its_caches_and_its_entrys_folders(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("HOME", "/home/u")
    confinement = sandbox.for_server(ROOT, "/tmp", network=False, writable=("~/notes",))
    assert confinement.writable == (
        str(ROOT), "/tmp", "/home/u/.cache", "/home/u/.npm", "/home/u/.local/state", "/home/u/notes"
    )
    assert not confinement.network


def test_a_confinement_crosses_to_the_host_unchanged() -> None:
    confinement = sandbox.for_tool(ROOT, "/tmp", read_only=False, open_world=True)
    assert sandbox.Confinement.from_json(confinement.to_json()) == confinement


def test_a_refused_write_is_explained_and_an_unrelated_error_is_left_alone() -> None:
    confinement = sandbox.for_tool(ROOT, "/tmp", read_only=True, open_world=False)
    error = CallResult("write raised PermissionError: [Errno 13] Permission denied", True)
    refused = sandbox.explained(error, confinement)
    assert refused.output.endswith("open_world=True; writes go to the workspace or the temp folder.")
    assert "this tool runs in the sandbox (no writes; no network)" in refused.output
    other = CallResult("parse raised ValueError: bad input", True)
    assert sandbox.explained(other, confinement) is other


def test_the_user_turning_it_off_is_said_before_anything_else(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(sandbox.SANDBOX_ENV, "off")
    assert sandbox.state(turned_off=False)[0] == "off"
    monkeypatch.delenv(sandbox.SANDBOX_ENV)
    monkeypatch.setenv(sandbox.PRETEND_ENV, "no-landlock")
    assert sandbox.state(turned_off=True)[0] == "off"
    state, detail = sandbox.state(turned_off=False)
    assert state == "unavailable" and "offers no Landlock" in detail


@pytest.mark.parametrize(
    ("error", "expansion"),
    [
        ("knock raised PermissionError: [Errno 13] Permission denied", Expansion(network=True)),
        ("OSError: [Errno 101] Network is unreachable", Expansion(network=True)),
        ("gaierror: [Errno -3] Temporary failure in name resolution", Expansion(network=True)),
        ("save raised PermissionError: [Errno 13] Permission denied: '{outside}/a/new.txt'", "{outside}"),
        ("save raised OSError: [Errno 30] Read-only file system: '{root}/.git/config'", None),
        ("save raised PermissionError: [Errno 13] Permission denied: '/etc/passwd'", Expansion(write="/etc")),
        ("ValueError: bad input", None),
    ],
    ids=["landlock connect", "unreachable", "name lookup", "write outside", "protected", "etc", "other"],
)
def test_a_refusal_says_what_would_let_the_call_run_but_never_a_protected_path(
    tmp_path: Path, error: str, expansion: Expansion | str | None
) -> None:
    root, outside = tmp_path / "ws", tmp_path / "outside"
    for folder in (root / ".git", outside):
        folder.mkdir(parents=True)
    confinement = sandbox.for_tool(root, "/tmp", read_only=None, open_world=None)
    text = error.format(root=root, outside=outside)
    wanted = Expansion(write=str(outside)) if expansion == "{outside}" else expansion
    assert sandbox.expansion_for(text, confinement) == wanted


def test_an_open_world_tool_is_never_offered_the_network_and_a_grant_widens_one_confinement() -> None:
    open_world = sandbox.for_tool(ROOT, "/tmp", read_only=None, open_world=True)
    assert sandbox.expansion_for("[Errno 13] Permission denied", open_world) is None
    confined = sandbox.for_tool(ROOT, "/tmp", read_only=None, open_world=None)
    assert sandbox.expanded(confined, Expansion(network=True)).network
    widened = sandbox.expanded(confined, Expansion(write="/srv/out"))
    assert widened.writable == (*confined.writable, "/srv/out") and widened.protected == confined.protected
