"""The store's file is its owner's alone, and SQLite's errors about it come with what to do."""

from __future__ import annotations

import sqlite3
import stat
from pathlib import Path

from mini_agent.store.files import FIX_HINT, explain, private_file, private_folder, tighten


def mode(path: Path) -> int:
    return stat.S_IMODE(path.stat().st_mode)


def test_a_new_folder_and_file_are_private(tmp_path: Path) -> None:
    folder = tmp_path / "a" / "b"
    private_folder(folder)
    private_file(folder / "sessions.db")
    assert mode(folder) == 0o700 and mode(folder / "sessions.db") == 0o600


def test_a_wider_file_is_narrowed_and_a_read_only_one_stays_read_only(tmp_path: Path) -> None:
    wide, read_only = tmp_path / "wide", tmp_path / "read-only"
    for path, bits in ((wide, 0o666), (read_only, 0o444)):
        path.write_text("")
        path.chmod(bits)
        tighten(path)
    assert mode(wide) == 0o600 and mode(read_only) == 0o400


def test_tightening_a_missing_file_does_nothing(tmp_path: Path) -> None:
    tighten(tmp_path / "gone")


def test_a_file_that_is_not_a_database_is_explained_with_the_fix(tmp_path: Path) -> None:
    path = tmp_path / "sessions.db"
    path.write_bytes(b"not a database, not at all" * 10)
    try:
        sqlite3.connect(path).execute("PRAGMA user_version").fetchone()
    except sqlite3.DatabaseError as exc:
        text = explain(path, exc, 5.0)
    assert "not a usable SQLite database" in text and text.endswith(FIX_HINT)
