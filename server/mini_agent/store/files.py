"""The session store's file on disk: private to its owner, and SQLite's errors about it explained.

The store holds prompts, tool output and file contents: only its owner may read it, whatever the
umask. Modes are narrowed, never widened (a store made read-only on purpose stays read-only).
"""

from __future__ import annotations

import contextlib
import os
import sqlite3
import stat
from pathlib import Path

FIX_HINT = "set initializationOptions.store.path to use another file"


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
