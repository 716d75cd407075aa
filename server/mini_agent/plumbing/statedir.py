"""The user's state folder for mini-agent: `$MINI_AGENT_STATE_DIR`, else `$XDG_STATE_HOME/mini-agent`,
else `~/.local/state/mini-agent`. Per user, never inside a workspace.

`locked` serialises the processes that change one file there (read, change, write): an advisory
`flock` on a lock file beside it, held until the change is written."""

from __future__ import annotations

import contextlib
import os
from collections.abc import Iterator, Mapping
from pathlib import Path

STATE_DIR_ENV = "MINI_AGENT_STATE_DIR"
LOCK_SUFFIX = ".lock"


def state_dir(env: Mapping[str, str] | None = None) -> Path:
    """The user's state folder for mini-agent."""
    env = os.environ if env is None else env
    if env.get(STATE_DIR_ENV):
        return Path(env[STATE_DIR_ENV])
    base = env.get("XDG_STATE_HOME") or str(Path.home() / ".local" / "state")
    return Path(base) / "mini-agent"


@contextlib.contextmanager
def locked(path: Path) -> Iterator[None]:
    """Hold an exclusive advisory lock for changing `path`: `flock` on `path` + `.lock` beside it (made
    0600, its folder 0700 when missing), blocking until every other holder, in any process, lets go.
    The lock file is never removed: removing it would let two writers lock two different files. A
    reader needs no lock when writers replace the file whole (a rename is atomic)."""
    import fcntl

    path.parent.mkdir(mode=0o700, parents=True, exist_ok=True)
    flags = os.O_RDWR | os.O_CREAT | os.O_CLOEXEC | os.O_NOFOLLOW
    fd = os.open(path.with_name(path.name + LOCK_SUFFIX), flags, 0o600)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX)  # released when fd closes, and by the kernel if we die
        yield
    finally:
        os.close(fd)


def write_private(path: Path, text: str) -> None:
    """Write `path` whole, readable by the user alone: a temporary 0600 file in the same folder (made
    0700 when missing), synced, then renamed over the old one (a reader sees the old file or the new)."""
    import tempfile

    path.parent.mkdir(mode=0o700, parents=True, exist_ok=True)
    handle, temporary = tempfile.mkstemp(prefix=f".{path.stem}-", suffix=path.suffix, dir=path.parent)
    try:
        with os.fdopen(handle, "w", encoding="utf-8") as file:
            os.fchmod(file.fileno(), 0o600)
            file.write(text)
            file.flush()
            os.fsync(file.fileno())
        os.replace(temporary, path)
    except BaseException:
        Path(temporary).unlink(missing_ok=True)
        raise
