"""The session store's tables, as migrations, and the statements that write them."""

from __future__ import annotations

# Migration i (0-based) takes `PRAGMA user_version` from i to i + 1; never edit a released one.
MIGRATIONS: tuple[tuple[str, ...], ...] = (
    (
        """CREATE TABLE sessions (
            id TEXT PRIMARY KEY,
            task TEXT NOT NULL,
            status TEXT NOT NULL,
            stop_reason TEXT,
            final_answer TEXT,
            prompt_tokens INTEGER NOT NULL,
            completion_tokens INTEGER NOT NULL,
            cached_tokens INTEGER NOT NULL,
            standing TEXT NOT NULL,
            pending TEXT NOT NULL,
            step_count INTEGER NOT NULL,
            created_at REAL NOT NULL,
            updated_at REAL NOT NULL,
            config TEXT NOT NULL,
            tools TEXT NOT NULL)""",
        "CREATE INDEX sessions_by_update ON sessions (updated_at)",
        "CREATE INDEX sessions_by_status ON sessions (status, updated_at)",
        """CREATE TABLE messages (
            session_id TEXT NOT NULL,
            seq INTEGER NOT NULL,
            role TEXT NOT NULL,
            content TEXT NOT NULL,
            tool_calls TEXT,
            tool_call_id TEXT,
            name TEXT,
            PRIMARY KEY (session_id, seq)) WITHOUT ROWID""",
        """CREATE TABLE steps (
            session_id TEXT NOT NULL,
            idx INTEGER NOT NULL,
            record TEXT NOT NULL,
            PRIMARY KEY (session_id, idx)) WITHOUT ROWID""",
        """CREATE TABLE leases (
            session_id TEXT PRIMARY KEY,
            owner TEXT NOT NULL,
            pid INTEGER NOT NULL,
            process TEXT NOT NULL,
            host TEXT NOT NULL,
            heartbeat REAL NOT NULL)""",
        "CREATE TABLE kv (key TEXT PRIMARY KEY, value TEXT NOT NULL)",
    ),
    ("ALTER TABLE messages ADD COLUMN images TEXT",),  # a user turn's images (JSON), NULL for none
    ("ALTER TABLE messages ADD COLUMN parts TEXT",),  # a user turn as the person gave it (JSON), or NULL
)

# The header columns in the order `_header` gives them; it adds the session id after them.
HEADER = ("task", "status", "stop_reason", "final_answer", "prompt_tokens", "completion_tokens",
          "cached_tokens", "standing", "pending", "step_count", "created_at", "updated_at")
SUMMARY = ("id", "task", "status", "stop_reason", "final_answer", "step_count", "prompt_tokens",
           "completion_tokens", "cached_tokens", "created_at", "updated_at")

_SETUP = (*HEADER, "config", "tools")
UPSERT_SESSION = (
    f"INSERT INTO sessions ({', '.join(_SETUP)}, id) VALUES ({', '.join('?' * (len(_SETUP) + 1))})"
    f" ON CONFLICT (id) DO UPDATE SET {', '.join(f'{c} = excluded.{c}' for c in _SETUP)}"
)
INSERT_MESSAGE = "INSERT INTO messages VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)"
UPSERT_STEP = "INSERT INTO steps VALUES (?, ?, ?) ON CONFLICT DO UPDATE SET record = excluded.record"
