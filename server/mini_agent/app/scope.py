"""A tool call's scope: where a path the model picked leads, and how that decides the call.

A path is resolved against the session's folder (the workspace root): joined to it when relative, `..`
normalised and the symlinks that exist followed, so `inside` / `outside` is decided on the real path. A
call that reaches outside the folder is asked every time (`Ask.EVERY_TIME`): no standing decision (an
earlier `always` answer, the workspace file's `allow`, a stored session's) covers it. A call whose tool
names no path the application knows of has no scope, and its tool's `requires_approval` decides it.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from enum import StrEnum
from pathlib import Path

from mini_agent.core.contracts import ToolSpec
from mini_agent.core.session import Ask


class Scope(StrEnum):
    INSIDE = "inside"
    OUTSIDE = "outside"


@dataclass(frozen=True, slots=True)
class Target:
    """A path the model picked, as it resolves: absolute, real as far as it exists, and its scope."""

    path: Path
    scope: Scope


def target(root: Path, path: str) -> Target:
    """`path` resolved against `root`. One that cannot be resolved (a symlink loop, a NUL byte) is
    outside: nothing is known about where it leads."""
    folder = root.resolve()
    joined = folder / path
    try:
        real = joined.resolve(strict=False)
    except (OSError, RuntimeError, ValueError):
        return Target(Path(os.path.normpath(joined)), Scope.OUTSIDE)
    return Target(real, Scope.INSIDE if real.is_relative_to(folder) else Scope.OUTSIDE)


def ask_for(spec: ToolSpec, scope: Scope | None) -> Ask:
    """How a call is decided: outside the folder, every time; otherwise as its tool says."""
    if scope is Scope.OUTSIDE:
        return Ask.EVERY_TIME
    return Ask.UNLESS_STANDING if spec.requires_approval else Ask.NEVER
