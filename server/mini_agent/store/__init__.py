"""The session store: SQLite checkpoints and leases behind `core.ports.SessionStore`.

`sqlite` is the adapter; `schema` its tables and migrations, `diff` what a checkpoint writes, `codec`
values to and from JSON, `wal` the write-ahead log's checkpointing thread. May import `core` and
`plumbing`; no other adapter, no door.
"""
