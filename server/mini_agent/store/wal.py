"""The session store's write-ahead log copied into the database file on a thread of its own.

SQLite's own checkpoint runs inside whichever COMMIT takes the log past 1000 pages: it copies the
pages into the database file and waits for two fsyncs while the event loop waits for that COMMIT.
Here a thread with a connection of its own does it: PASSIVE checkpoints, which neither wait for nor
block the daemon's writer, and the sqlite3 module lets go of the GIL while SQLite copies and syncs,
so that work leaves the event loop.

Fault model: a checkpoint that fails (disk full; another process checkpointing the same file) is
tried again at the next wake-up; should the thread fall behind or be unable to open the file,
SQLite's own checkpoint at `BACKSTOP_PAGES` still bounds the log. Durability does not rest on it: in
WAL mode a commit that has returned survives a killed process; a checkpoint only moves pages.
"""

from __future__ import annotations

import contextlib
import logging
import sqlite3
import threading
from pathlib import Path

COMMITS_PER_CHECKPOINT = 64  # a step's two checkpoints write about 7 pages each: ~450 pages a wake-up
BACKSTOP_PAGES = 10_000  # SQLite's own checkpoint, on the writer's connection, past this many

log = logging.getLogger("mini_agent")


class WalCheckpointer:
    def __init__(self, path: Path, busy_timeout: float) -> None:
        self._path = path
        self._busy_timeout = busy_timeout
        self._due = threading.Event()
        self._closing = False
        self._commits = 0
        self._thread = threading.Thread(target=self._run, name=f"mini-agent-checkpoints {path}", daemon=True)
        self._thread.start()

    def committed(self) -> None:
        """Count a commit; every `COMMITS_PER_CHECKPOINT`-th wakes the thread."""
        self._commits += 1
        if self._commits % COMMITS_PER_CHECKPOINT == 0:
            self._due.set()

    def stop(self) -> None:
        """Let the thread end after what it is doing (a store dropped without `close` calls this)."""
        self._closing = True
        self._due.set()

    def close(self) -> None:
        self.stop()
        self._thread.join()

    def _run(self) -> None:
        try:
            conn = sqlite3.connect(self._path, timeout=self._busy_timeout, isolation_level=None,
                                   check_same_thread=False)
        except sqlite3.Error as exc:
            log.warning("the session store's log is left to SQLite's own checkpoints: %s", exc)
            return
        try:
            while True:
                self._due.wait()
                self._due.clear()
                if self._closing:
                    return
                with contextlib.suppress(sqlite3.Error):
                    conn.execute("PRAGMA wal_checkpoint(PASSIVE)").fetchone()
        finally:
            conn.close()
