"""Ending a whole process tree on Linux, including members that left its process group or session.

Used on both sides of the tool host: the daemon ends a host's tree on timeout, cancel and close; the
host ends what a tool started once the call is over. A child that called `setsid()` is out of reach
of `killpg`, and one that double-forked is no longer anyone's child but its subreaper's, so the tree
is found by parent ids in /proc, under a root that is a child subreaper (orphans stay below it).
The tree is frozen with SIGSTOP first, so nothing in it can fork while it is being walked.

`warden_command` wraps a command (an MCP server) in `main`: a child subreaper that runs it, and
ends the whole tree below itself when it exits, when it is sent SIGTERM, or when the daemon dies.
"""

from __future__ import annotations

import contextlib
import ctypes
import os
import signal
import sys
from pathlib import Path

_PACKAGE_PARENT = str(Path(__file__).resolve().parents[2])
# `-P`: the cwd (a workspace) stays off sys.path; our package goes last, found but never shadowing.
_BOOTSTRAP = (
    f"import sys; sys.path.append({_PACKAGE_PARENT!r}); "
    "from mini_agent.tools.reaper import main; sys.exit(main())"
)

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


def warden_command(command: list[str], python: str = sys.executable, confine: str | None = None) -> list[str]:
    """`command` run under `main` by this process's Python, watched for this process's death; with
    `confine` (a `sandbox.Confinement` as JSON), confined so before it starts."""
    confining = ["--confine", confine] if confine is not None else []
    return [python, "-P", "-c", _BOOTSTRAP, "--parent", str(os.getpid()), *confining, "--", *command]


class Stop(Exception):
    """SIGTERM, raised in a warden's waiting loop (`raise_stop` is its handler)."""


def raise_stop(signum: int, frame: object) -> None:
    raise Stop


def outlive(child: int) -> int | None:
    """A warden's watch (`raise_stop` handles its SIGTERM): wait for `child`, reaping the orphans handed
    to this subreaper on the way, until it exits or SIGTERM arrives; then end everything left below
    this process. Returns the child's wait status, None when SIGTERM came first."""
    status = None
    try:
        while status is None:
            pid, code = os.waitpid(-1, 0)
            if pid == child:
                status = code
    except (Stop, ChildProcessError):  # SIGTERM; or no child left to wait for
        pass
    # Committed to the clean-up now: a second SIGTERM (the daemon's stop, then its death) must not cut it.
    signal.signal(signal.SIGTERM, signal.SIG_IGN)
    kill_tree(os.getpid(), include_root=False)
    reap_children()
    return status


def main(argv: list[str] | None = None) -> int:
    """`--parent PID [--confine JSON] -- COMMAND ARG…`: run COMMAND as a child with this process's stdin
    and stdout (this process lets go of them), then end everything below this process once COMMAND
    exits, SIGTERM arrives, or PID dies; exit as COMMAND did. With `--confine`, this process and so
    COMMAND are confined first (`sandbox.apply`); where the kernel cannot, stderr says why, exit 1."""
    args = sys.argv[1:] if argv is None else argv
    confine = None
    if args[2:3] == ["--confine"] and len(args) > 3:
        confine, args = args[3], args[:2] + args[4:]
    if len(args) < 4 or args[0] != "--parent" or args[2] != "--":
        print("usage: --parent PID [--confine JSON] -- COMMAND [ARG…]", file=sys.stderr)
        return 2
    parent, command = int(args[1]), args[3:]
    if confine is not None:
        from mini_agent.tools import sandbox

        try:
            sandbox.apply(sandbox.Confinement.from_json(confine))
        except (sandbox.Unavailable, OSError) as exc:
            print(exc, file=sys.stderr)
            return 1
    become_subreaper()
    signal.signal(signal.SIGTERM, raise_stop)
    try:
        if die_with_parent(signal.SIGTERM) and os.getppid() != parent:
            return 1  # the daemon died before it could be watched
        child = os.fork()
        if child == 0:
            _exec(command)
        devnull = os.open(os.devnull, os.O_RDWR)
        for fd in (0, 1):  # the server's pipes close when the server closes them
            os.dup2(devnull, fd)
    except Stop:
        child = -1  # stopped before the server ran: only the clean-up is left
    status = outlive(child)
    if status is not None and os.WIFSIGNALED(status):
        return 128 + os.WTERMSIG(status)
    return os.waitstatus_to_exitcode(status) if status is not None else 1


def _exec(command: list[str]) -> None:
    signal.signal(signal.SIGTERM, signal.SIG_DFL)
    try:
        os.execvp(command[0], command)
    except OSError as exc:
        os.write(2, f"{command[0]}: {exc.strerror}\n".encode())
    os._exit(127)
