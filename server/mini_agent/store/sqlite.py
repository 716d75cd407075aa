"""Durable sessions in one SQLite file per workspace (standard library sqlite3, WAL).

The runtime checkpoints a session several times per step (before its tools run, after a result, at
the step's end), so `save` writes only what changed since the last save: new messages are appended,
the newest step is upserted, the session header is updated — O(change) not O(history). That relies
on the runtime's append-only discipline: messages are only ever appended, and only the newest step
is still being filled in. One `save` takes any number of sessions in one transaction: a daemon
stepping many sessions commits the checkpoints that fall in one turn of its event loop together
(group commit; see core/checkpoints.py). The log is copied into the database file by a thread of its
own (wal.py), not inside a commit the event loop waits for; the file's modes and the advice on its
errors are files.py's.

A lease row per session keeps two daemons on one workspace from stepping the same session at once.

A session this store did not write in this process (one that came with a cloned repository, say) goes
through `adopt`, when set, as it is read: the workspace's word on what of it may be acted on.
"""

from __future__ import annotations

import json
import logging
import os
import socket
import sqlite3
import sys
import threading
import time
import uuid
import weakref
from collections.abc import Callable, Iterator
from contextlib import contextmanager, suppress
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from mini_agent.core.contracts import (
    Image,
    Message,
    Part,
    Role,
    SessionStatus,
    StopReason,
    TokenUsage,
    ToolCall,
    ToolSpec,
)
from mini_agent.core.errors import STORE_FAILED, AgentError
from mini_agent.core.session import (
    AgentConfig,
    AgentSession,
    Decision,
    PendingApproval,
    SessionPage,
    SessionRow,
    StepRecord,
    StoreUnavailable,
)
from mini_agent.store import codec, diff, files
from mini_agent.store.files import FIX_HINT, explain, private_file, private_folder, tighten
from mini_agent.store.schema import HEADER, INSERT_MESSAGE, MIGRATIONS, SUMMARY, UPSERT_SESSION, UPSERT_STEP
from mini_agent.store.wal import BACKSTOP_PAGES, WalCheckpointer

log = logging.getLogger(__name__)

STORE_DIR = ".mini-agent"
STORE_FILE = "sessions.db"
# SQLite's files beside the database (write-ahead log, shared memory, rollback journal), and ours.
COMPANIONS = ("-wal", "-shm", "-journal")
IGNORE_FILE = ".gitignore"

# Tells a lease left by an earlier process that had our pid (a restarted container) from our own.
PROCESS_TOKEN = uuid.uuid4().hex


class StoreError(AgentError, StoreUnavailable):
    """The session store cannot be used; the message names the file and what to do about it."""

    code = STORE_FAILED
    reason = "store"

    def __init__(self, message: str, path: Path) -> None:
        super().__init__(message, path=str(path))
        self.path = path


@dataclass(frozen=True, slots=True)
class Lease:
    session_id: str
    owner: str
    pid: int
    process: str
    host: str
    heartbeat: float


Registrations = list[dict[str, Any]]


def default_path(workspace: Path) -> Path:
    return workspace / STORE_DIR / STORE_FILE


class SqliteStore:
    """One connection, used from one thread at a time (a lock guards it if that is ever not so)."""

    def __init__(self, path: Path, *, busy_timeout: float = 5.0, lease_stale_after: float = 300.0) -> None:
        self.path = Path(path)
        self.busy_timeout = busy_timeout
        self.lease_stale_after = lease_stale_after
        self._lock = threading.RLock()
        self._written: dict[str, diff.Written] = {}
        self._saved: set[str] = set()  # sessions this store has written: `adopt` has nothing to say on them
        self.adopt: Callable[[AgentSession], None] | None = None
        self._host = socket.gethostname()
        try:
            private_folder(self.path.parent)
        except OSError as exc:
            message = f"cannot create the folder for {self.path} ({exc}); {FIX_HINT}"
            raise StoreError(message, self.path) from exc
        private_file(self.path)
        with self._errors("opening the session store"):
            self._conn = sqlite3.connect(
                self.path, timeout=busy_timeout, isolation_level=None, check_same_thread=False
            )
        self._checkpoints = WalCheckpointer(self.path, busy_timeout)
        weakref.finalize(self, self._checkpoints.stop)
        try:
            with self._errors("opening the session store"):
                self._conn.execute("PRAGMA journal_mode = WAL").fetchone()
                self._conn.execute("PRAGMA synchronous = NORMAL")
                self._conn.execute(f"PRAGMA wal_autocheckpoint = {BACKSTOP_PAGES}")
            self._migrate()
        except BaseException:
            self._checkpoints.close()
            self._conn.close()
            raise
        for suffix in ("-wal", "-shm"):  # SQLite gives them the database's mode; older ones may be wider
            tighten(Path(f"{self.path}{suffix}"))

    @classmethod
    def for_workspace(cls, workspace: Path, **options: float) -> SqliteStore:
        """The workspace's default store; its folder gets a .gitignore so sessions (and any API key in
        their model settings) stay out of version control. The folder and its files are refused when
        one is a link (or leads outside the workspace): the workspace may be a cloned repository, and
        the store's writes and modes must not land elsewhere."""
        path = default_path(workspace)
        ignore = path.parent / IGNORE_FILE
        for candidate in (path, *(Path(f"{path}{suffix}") for suffix in COMPANIONS), ignore):
            problem = files.link_in(workspace, candidate)
            if problem is not None:
                message = (f"{problem}; the workspace's session store is never opened through a link: "
                           f"remove it, or {FIX_HINT}")
                raise StoreError(message, candidate)
        tighten(path.parent)  # ours alone, whatever an older version left
        store = cls(path, **options)
        with suppress(OSError):  # a folder we may not write to: the store works without it
            files.create_new(ignore, "# mini-agent session store\n*\n")
        return store

    def close(self) -> None:
        self._checkpoints.close()
        with self._lock:
            self._conn.close()

    def __enter__(self) -> SqliteStore:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.close()

    # -- plumbing -------------------------------------------------------------------------------

    @contextmanager
    def _errors(self, action: str) -> Iterator[None]:
        try:
            yield
        except sqlite3.Error as exc:
            raise StoreError(f"{action}: {explain(self.path, exc, self.busy_timeout)}", self.path) from exc

    @contextmanager
    def _transaction(self, action: str, mode: str = "IMMEDIATE") -> Iterator[sqlite3.Connection]:
        """IMMEDIATE takes the write lock up front, so racing writers queue on the busy timeout
        instead of failing when a read would have to turn into a write."""
        with self._lock, self._errors(action):
            self._conn.execute(f"BEGIN {mode}")
            try:
                yield self._conn
            except BaseException:
                if self._conn.in_transaction:
                    self._conn.execute("ROLLBACK")
                raise
            self._conn.execute("COMMIT")
            self._checkpoints.committed()

    def _version(self) -> int:
        with self._errors("reading the schema version"):
            version: int = self._conn.execute("PRAGMA user_version").fetchone()[0]
        return version

    def _migrate(self) -> None:
        known = len(MIGRATIONS)
        if self._version() == known:
            return
        with self._transaction("upgrading the session store") as conn:
            found = self._version()
            if found > known:
                raise StoreError(
                    f"{self.path} was written by a newer mini-agent (schema version {found}, this one reads "
                    f"up to {known}); upgrade mini-agent or {FIX_HINT}",
                    self.path,
                )
            for number in range(found, known):
                for statement in MIGRATIONS[number]:
                    conn.execute(statement)
                conn.execute(f"PRAGMA user_version = {number + 1}")

    # -- sessions -------------------------------------------------------------------------------

    def save(self, *sessions: AgentSession) -> None:
        """Write what changed in each session since this store last saved or loaded it (all of it the
        first time), all in one transaction: every session is saved, or none is."""
        with self._lock:
            changes = [change for session in sessions if (change := self._change(session)) is not None]
            if not changes:
                return
            what = f"session {sessions[0].session_id}" if len(sessions) == 1 else f"{len(sessions)} sessions"
            with self._transaction(f"saving {what}") as conn:
                for change in changes:
                    change.write(conn)
                version = _data_version(conn)
            for change in changes:
                self._remember(change.session, change.header, change.last_step, version)
                self._saved.add(change.session.session_id)

    def _change(self, session: AgentSession) -> _Change | None:
        """What saving the session would write; None when the store already holds it all."""
        mark = self._written.get(session.session_id)
        if mark is not None and not diff.continues(session, mark):
            mark = None  # a new setup, or history rewritten rather than appended to: store it whole
        header = diff.header(session)
        steps, last_step = diff.step_rows(session, mark)
        if mark is not None and diff.unchanged(session, mark, header, steps):
            return None
        return _Change(session, mark, header, steps, last_step)

    def _remember(
        self, session: AgentSession, header: tuple[Any, ...], last_step: bytes, version: int
    ) -> None:
        self._written[session.session_id] = diff.Written(
            len(session.messages), len(session.steps), last_step, header, session.config, list(session.tools),
            version,
        )

    def is_current(self, session: AgentSession) -> bool:
        """True when `load` would give back what `session` already holds: this store last saved or
        loaded it, nobody has written to the file since, and it has not changed in memory. Costs
        what a save that finds nothing to write costs, where `load` costs O(history)."""
        with self._lock, self._errors(f"checking session {session.session_id}"):
            mark = self._written.get(session.session_id)
            if mark is None or mark.version != _data_version(self._conn) or not diff.continues(session, mark):
                return False
            return diff.unchanged(session, mark, diff.header(session), diff.step_rows(session, mark)[0])

    def load(self, session_id: str) -> AgentSession | None:
        with self._transaction(f"loading session {session_id}", "DEFERRED") as conn:
            head = conn.execute(
                f"SELECT {', '.join(HEADER)}, config, tools FROM sessions WHERE id = ?", (session_id,)
            ).fetchone()
            if head is None:
                return None
            messages = conn.execute(
                "SELECT role, content, tool_calls, tool_call_id, name, images, parts FROM messages "
                "WHERE session_id = ? ORDER BY seq", (session_id,)
            ).fetchall()
            steps = [row[0] for row in conn.execute(
                "SELECT record FROM steps WHERE session_id = ? ORDER BY idx", (session_id,)
            )]
            version = _data_version(conn)
        try:
            session = _session_from(session_id, head, messages, steps)
        except (ValueError, TypeError, KeyError) as exc:
            message = f"session {session_id} in {self.path} cannot be read ({exc!r}); delete it or {FIX_HINT}"
            raise StoreError(message, self.path) from exc
        self._remember(session, diff.header(session), diff.digest(steps[-1]) if steps else b"", version)
        if self.adopt is not None and session_id not in self._saved:
            self.adopt(session)  # what it was read as stays the mark: the next save writes the change
        return session

    def forget(self, session_id: str) -> None:
        """Drop the session's mark (what was written): its next save writes it whole."""
        with self._lock:
            self._written.pop(session_id, None)

    def delete(self, session_id: str) -> bool:
        with self._transaction(f"deleting session {session_id}") as conn:
            for table in ("messages", "steps", "leases"):
                conn.execute(f"DELETE FROM {table} WHERE session_id = ?", (session_id,))
            found = conn.execute("DELETE FROM sessions WHERE id = ?", (session_id,)).rowcount > 0
        self._written.pop(session_id, None)
        self._saved.discard(session_id)
        return found

    def list_sessions(self, status: str | None = None, limit: int = 50, offset: int = 0) -> SessionPage:
        """Newest first; ties (same updated_at) go to the later-created row."""
        where, args = ("WHERE status = ?", (status,)) if status is not None else ("", ())
        with self._transaction("listing sessions", "DEFERRED") as conn:
            rows = conn.execute(
                f"SELECT {', '.join(SUMMARY)} FROM sessions {where} ORDER BY updated_at DESC, rowid DESC "
                "LIMIT ? OFFSET ?", (*args, limit, offset)
            ).fetchall()
            total: int = conn.execute(f"SELECT count(*) FROM sessions {where}", args).fetchone()[0]
        return [row for values in rows if (row := self._listed(values)) is not None], total

    def _listed(self, values: tuple[Any, ...]) -> SessionRow | None:
        """A listed row, or None (and a log line naming it) for one this store cannot read: one bad
        row does not hide the others."""
        try:
            return _row(values)
        except (ValueError, TypeError) as exc:
            log.warning("skipping session %r in %s: its row cannot be read (%s)", values[0], self.path, exc)
            return None

    # -- registrations --------------------------------------------------------------------------

    def save_registrations(self, items: Registrations) -> None:
        with self._transaction("saving tool registrations") as conn:
            conn.execute("INSERT OR REPLACE INTO kv VALUES ('registrations', ?)", (codec.dumps(items),))

    def load_registrations(self) -> Registrations:
        with self._transaction("loading tool registrations", "DEFERRED") as conn:
            row = conn.execute("SELECT value FROM kv WHERE key = 'registrations'").fetchone()
        try:
            items: Any = json.loads(row[0]) if row else []
        except ValueError:
            items = None
        if not isinstance(items, list) or not all(isinstance(item, dict) for item in items):
            raise StoreError(f"the tool registrations in {self.path} are damaged; register the tools again",
                             self.path)
        return items

    # -- leases ---------------------------------------------------------------------------------

    def acquire(self, session_id: str, owner: str) -> bool:
        """Take the session's lease: free, ours already, or left behind by a holder that is gone."""
        with self._transaction(f"taking the lease on session {session_id}") as conn:
            held = _lease(conn.execute("SELECT * FROM leases WHERE session_id = ?", (session_id,)).fetchone())
            if held is not None and held.owner != owner and not self._lapsed(held):
                return False
            conn.execute("INSERT OR REPLACE INTO leases VALUES (?, ?, ?, ?, ?, ?)",
                         (session_id, owner, os.getpid(), PROCESS_TOKEN, self._host, time.time()))
            return True

    def _lapsed(self, lease: Lease) -> bool:
        """On this host a lease dies with its process; elsewhere only its heartbeat can tell."""
        if lease.host != self._host or sys.platform == "win32":  # os.kill(pid, 0) would kill on Windows
            return time.time() - lease.heartbeat > self.lease_stale_after
        if lease.pid == os.getpid():
            return lease.process != PROCESS_TOKEN
        try:
            os.kill(lease.pid, 0)
        except ProcessLookupError:
            return True
        except PermissionError:  # alive, but someone else's
            return False
        return False

    def lease(self, session_id: str) -> Lease | None:
        with self._transaction("reading a session lease", "DEFERRED") as conn:
            return _lease(conn.execute("SELECT * FROM leases WHERE session_id = ?", (session_id,)).fetchone())

    def heartbeat(self, owner: str) -> int:
        """Refresh the owner's leases, so daemons on other hosts sharing the file do not expire them."""
        with self._transaction("refreshing session leases") as conn:
            count: int = conn.execute(
                "UPDATE leases SET heartbeat = ? WHERE owner = ?", (time.time(), owner)
            ).rowcount
        return count

    def release(self, session_id: str, owner: str) -> bool:
        with self._transaction(f"releasing the lease on session {session_id}") as conn:
            count: int = conn.execute(
                "DELETE FROM leases WHERE session_id = ? AND owner = ?", (session_id, owner)
            ).rowcount
        return count > 0

    def release_all(self, owner: str) -> int:
        with self._transaction("releasing session leases") as conn:
            count: int = conn.execute("DELETE FROM leases WHERE owner = ?", (owner,)).rowcount
        return count


@dataclass(slots=True)
class _Change:
    """One session's part of a save: what the store holds of it (`mark`), and what to write."""

    session: AgentSession
    mark: diff.Written | None
    header: tuple[Any, ...]
    steps: list[tuple[str, int, str]]
    last_step: bytes

    def write(self, conn: sqlite3.Connection) -> None:
        session, mark, header, steps = self.session, self.mark, self.header, self.steps
        sid = session.session_id
        if mark is not None and not diff.update_header(conn, header, mark.header):
            mark = None  # the row was deleted meanwhile
            steps, self.last_step = diff.step_rows(session, None)
        if mark is None:
            setup = (codec.dumps(session.config), codec.dumps(session.tools))
            conn.execute(UPSERT_SESSION, (*header[:-1], *setup, sid))
            conn.execute("DELETE FROM messages WHERE session_id = ?", (sid,))
            conn.execute("DELETE FROM steps WHERE session_id = ?", (sid,))
        first = 0 if mark is None else mark.messages
        if first < len(session.messages):
            conn.executemany(INSERT_MESSAGE, _message_rows(sid, session.messages, first))
        if steps:
            conn.executemany(UPSERT_STEP, steps)


# -- rows ---------------------------------------------------------------------------------------


def _data_version(conn: sqlite3.Connection) -> int:
    version: int = conn.execute("PRAGMA data_version").fetchone()[0]
    return version


def _message_rows(sid: str, messages: list[Message], first: int) -> Iterator[tuple[Any, ...]]:
    for seq in range(first, len(messages)):
        m = messages[seq]
        calls = codec.dumps(m.tool_calls) if m.tool_calls else None
        images = codec.dumps(m.images) if m.images else None
        parts = codec.dumps(m.parts) if m.parts else None
        text = codec.sql_text
        yield (sid, seq, m.role.value, text(m.content), calls, text(m.tool_call_id), text(m.name), images,
               parts)


def _session_from(
    sid: str, head: tuple[Any, ...], messages: list[tuple[Any, ...]], steps: list[str]
) -> AgentSession:
    (task, status, stop_reason, final_answer, prompt, completion, cached, standing, pending, _, created_at,
     updated_at, config, tools) = head
    return AgentSession(
        session_id=sid,
        task=codec.from_sql(task),
        config=codec.loads(AgentConfig, config),
        tools=codec.loads(list[ToolSpec], tools),
        messages=[
            Message(Role(role), codec.from_sql(content),
                    codec.loads(tuple[ToolCall, ...], calls) if calls else (),
                    codec.from_sql(call_id), codec.from_sql(name),
                    codec.loads(tuple[Image, ...], images) if images else (),
                    codec.loads(tuple[Part, ...], parts) if parts else ())
            for role, content, calls, call_id, name, images, parts in messages
        ],
        steps=[codec.loads(StepRecord, record) for record in steps],
        status=SessionStatus(status),
        stop_reason=StopReason(stop_reason) if stop_reason is not None else None,
        final_answer=codec.from_sql(final_answer),
        usage=TokenUsage(prompt, completion, cached),
        standing_decisions=codec.loads(dict[str, Decision], standing),
        pending=codec.loads(list[PendingApproval], pending),
        created_at=created_at,
        updated_at=updated_at,
    )


def _row(values: tuple[Any, ...]) -> SessionRow:
    sid, task, status, stop_reason, final_answer, steps, prompt, completion, cached, created, updated = values
    reason = StopReason(stop_reason) if stop_reason else None
    text = codec.from_sql
    if not isinstance(task, str | bytes) or not all(isinstance(t, int | float) for t in (created, updated)):
        raise TypeError(f"task {type(task).__name__}, created_at {created!r}, updated_at {updated!r}")
    return SessionRow(sid, text(task), SessionStatus(status), reason, text(final_answer), steps,
                      TokenUsage(prompt, completion, cached), created, updated)


def _lease(row: tuple[Any, ...] | None) -> Lease | None:
    return Lease(*row) if row is not None else None
