"""Ending a whole process tree on Linux, including members that left its process group or session.

Used on both sides of the tool host: the daemon ends a host's tree on timeout, cancel and close; the
host ends what a tool started once the call is over. A child that called `setsid()` is out of reach
of `killpg`, and one that double-forked is no longer anyone's child but its subreaper's, so the tree
is found by parent ids in /proc, under a root that is a child subreaper (orphans stay below it).
The tree is frozen with SIGSTOP first, so nothing in it can fork while it is being walked.
"""

from __future__ import annotations

import contextlib
import ctypes
import os
import signal

_PR_SET_PDEATHSIG = 1
_PR_SET_CHILD_SUBREAPER = 36


def prctl(option: int, value: int) -> bool:
    """Linux `prctl(2)`; False where it is not available (the caller then does without)."""
    try:
        return int(ctypes.CDLL(None, use_errno=True).prctl(option, value, 0, 0, 0)) == 0
    except (OSError, AttributeError):
        return False


def become_subreaper() -> bool:
    """Orphaned descendants of this process are reparented to it rather than to init."""
    return prctl(_PR_SET_CHILD_SUBREAPER, 1)


def die_with_parent(sig: signal.Signals) -> bool:
    return prctl(_PR_SET_PDEATHSIG, int(sig))


def descendants(root: int) -> list[int]:
    """Every live process below `root`, parents before their children."""
    children: dict[int, list[int]] = {}
    for entry in os.scandir("/proc"):
        if not entry.name.isdigit():
            continue
        try:
            with open(f"/proc/{entry.name}/stat", "rb") as stat:
                fields = stat.read().rsplit(b")", 1)[1].split()
        except OSError:  # gone meanwhile
            continue
        children.setdefault(int(fields[1]), []).append(int(entry.name))
    found: list[int] = []
    pending = [root]
    while pending:
        below = children.get(pending.pop(), [])
        found += below
        pending += below
    return found


def kill_tree(root: int, *, spare: frozenset[int] = frozenset(), include_root: bool = True) -> int:
    """SIGKILL `root` (optionally) and all its descendants except `spare` (whose own children go);
    returns how many processes were signalled."""
    stopped: set[int] = set()
    if include_root and _signal(root, signal.SIGSTOP):
        stopped.add(root)
    while fresh := [pid for pid in descendants(root) if pid not in stopped and pid not in spare]:
        stopped.update(pid for pid in fresh if _signal(pid, signal.SIGSTOP))
        if not any(pid in stopped for pid in fresh):
            break  # all of them vanished meanwhile
    for pid in stopped:
        _signal(pid, signal.SIGKILL)
    return len(stopped)


def reap_children() -> None:
    """Wait for every child of this process to end (they have been killed); zombies go too."""
    with contextlib.suppress(ChildProcessError):
        while True:
            os.waitpid(-1, 0)


def has_children() -> bool:
    """Reaps any child that already ended; True while one is still running."""
    try:
        while True:
            pid, _ = os.waitpid(-1, os.WNOHANG)
            if pid == 0:
                return True
    except ChildProcessError:
        return False


def _signal(pid: int, sig: signal.Signals) -> bool:
    try:
        os.kill(pid, sig)
    except (ProcessLookupError, PermissionError):
        return False
    return True
