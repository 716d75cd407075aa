"""`app.scope`: a path the model picks, resolved against the workspace folder (`..`, absolute paths,
symlinks that exist), decided inside or outside on its real path, and how each scope is asked."""

from __future__ import annotations

from pathlib import Path

import pytest
from mini_agent.app.scope import Scope, Target, ask_for, target
from mini_agent.core.contracts import ToolSpec
from mini_agent.core.session import Ask


@pytest.fixture
def root(tmp_path: Path) -> Path:
    folder = tmp_path / "workspace"
    (folder / "src").mkdir(parents=True)
    return folder.resolve()


def test_relative_and_absolute_paths_inside_resolve_inside(root: Path) -> None:
    assert target(root, "src/a.py") == Target(root / "src" / "a.py", Scope.INSIDE)
    assert target(root, "src/../b.py") == Target(root / "b.py", Scope.INSIDE)
    assert target(root, "missing/../../workspace/c.py") == Target(root / "c.py", Scope.INSIDE)
    assert target(root, str(root / "d.py")) == Target(root / "d.py", Scope.INSIDE)
    assert target(root, ".").scope is Scope.INSIDE


def test_dot_dot_and_absolute_paths_outside_resolve_outside(root: Path) -> None:
    assert target(root, "../secret.txt") == Target(root.parent / "secret.txt", Scope.OUTSIDE)
    assert target(root, "src/../../secret.txt") == Target(root.parent / "secret.txt", Scope.OUTSIDE)
    assert target(root, "/etc/passwd").scope is Scope.OUTSIDE
    assert target(root, f"{root}-sibling/x").scope is Scope.OUTSIDE  # a prefix of the name is not inside


def test_a_symlink_inside_that_leads_outside_is_outside_by_its_real_path(root: Path) -> None:
    elsewhere = root.parent / "elsewhere"
    elsewhere.mkdir()
    (root / "link").symlink_to(elsewhere, target_is_directory=True)
    (root / "file_link").symlink_to(root.parent / "keys.txt")
    assert target(root, "link/keys.txt") == Target(elsewhere / "keys.txt", Scope.OUTSIDE)
    assert target(root, "file_link") == Target(root.parent / "keys.txt", Scope.OUTSIDE)


def test_a_path_that_cannot_be_resolved_is_outside(root: Path) -> None:
    (root / "loop").symlink_to(root / "loop")
    assert target(root, "loop/x").scope is Scope.OUTSIDE
    assert target(root, "nul\x00byte").scope is Scope.OUTSIDE


def test_outside_is_asked_every_time_and_inside_as_the_tool_says() -> None:
    quiet = ToolSpec("read", "Read.", {"type": "object"})
    guarded = ToolSpec("write", "Write.", {"type": "object"}, requires_approval=True)
    assert [ask_for(quiet, scope) for scope in (None, Scope.INSIDE, Scope.OUTSIDE)] == [
        Ask.NEVER,
        Ask.NEVER,
        Ask.EVERY_TIME,
    ]
    assert ask_for(guarded, Scope.INSIDE) is Ask.UNLESS_STANDING
    assert ask_for(guarded, Scope.OUTSIDE) is Ask.EVERY_TIME
