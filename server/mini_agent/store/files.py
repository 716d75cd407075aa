"""The session store's file on disk: private to its owner, and SQLite's errors about it explained.

The store holds prompts, tool output and file contents: only its owner may read it, whatever the
umask. Modes are narrowed, never widened (a store made read-only on purpose stays read-only). A
workspace's own store is opened only where it really lies inside the workspace (`link_in`): a folder or
file committed as a link would have the daemon write, and narrow the mode of, something elsewhere.
"""

from __future__ import annotations

import contextlib
import os
import sqlite3
import stat
from pathlib import Path

FIX_HINT = "set initializationOptions.store.path to use another file"


def link_in(root: Path, path: Path) -> str | None:
    """Why `path`, under `root`, must not be opened as one of the workspace's own files: a part of it
    below `root` is a symbolic link, the file has other hard links, or its real path leads outside
    `root`. None when nothing is wrong (a part that does not exist yet is fine)."""
    part = root
    for name in path.relative_to(root).parts:
        part = part / name
        try:
            found = os.lstat(part)
        except OSError:  # not there (yet), or under a file: opening it reports that
            break
        if stat.S_ISLNK(found.st_mode):
            return f"{part} is a symbolic link"
        if stat.S_ISREG(found.st_mode) and found.st_nlink > 1:
            return f"{part} has other hard links"
    real, inside = Path(os.path.realpath(path)), Path(os.path.realpath(root))
    if not real.is_relative_to(inside):
        return f"{path} leads outside {inside}"
    return None


def create_new(path: Path, text: str) -> None:
    """Write a file that does not exist yet (never through a link, never over another file)."""
    try:
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL | getattr(os, "O_NOFOLLOW", 0), 0o600)
    except FileExistsError:
        return
    with os.fdopen(fd, "w", encoding="utf-8") as out:
        out.write(text)


def private_folder(folder: Path) -> None:
    if folder.is_dir():
        return
    folder.mkdir(mode=0o700, parents=True)  # a file in the way raises here
    os.chmod(folder, 0o700)


def private_file(path: Path) -> None:
    """Create the database file 0600 before SQLite does (it would use 0644 less the umask)."""
    if path.exists():
        tighten(path)
        return
    with contextlib.suppress(OSError):  # a folder we may not write to: SQLite reports it, with advice
        os.close(os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600))
        os.chmod(path, 0o600)


def tighten(path: Path) -> None:
    with contextlib.suppress(OSError):  # not ours, or gone: nothing to narrow here
        mode = stat.S_IMODE(path.stat().st_mode)
        if mode & 0o077:
            os.chmod(path, mode & 0o700)


def explain(path: Path, exc: sqlite3.Error, busy_timeout: float) -> str:
    """What went wrong with the file, and what the user can do about it."""
    code = getattr(exc, "sqlite_errorcode", None)
    primary = code & 0xFF if isinstance(code, int) else None
    if primary in (sqlite3.SQLITE_NOTADB, sqlite3.SQLITE_CORRUPT):
        return (f"{path} is not a usable SQLite database ({exc}); move it aside (a new one is created), "
                f"or {FIX_HINT}")
    if primary in (sqlite3.SQLITE_BUSY, sqlite3.SQLITE_LOCKED):
        return (f"{path} is locked by another process ({exc}; waited {busy_timeout:g} s); stop the other "
                f"program using it, or {FIX_HINT}")
    if primary == sqlite3.SQLITE_CANTOPEN:
        return f"cannot open {path} ({exc}); check that its folder exists and is writable, or {FIX_HINT}"
    if primary == sqlite3.SQLITE_READONLY:
        return f"{path} is read-only ({exc}); make it and its folder writable, or {FIX_HINT}"
    if primary == sqlite3.SQLITE_FULL:
        return f"the disk holding {path} is full ({exc}); free some space, or {FIX_HINT}"
    if primary == sqlite3.SQLITE_IOERR:  # e.g. a write refused for space or size (ENOSPC, EFBIG)
        return f"cannot write {path} ({exc}); check that its disk has room, or {FIX_HINT}"
    return f"SQLite failed on {path} ({exc}); {FIX_HINT}"
