"""What the store already holds of a session, so that a save writes only the difference: new
messages, the newest step if it changed, and the header columns that changed."""

from __future__ import annotations

import hashlib
import sqlite3
from dataclasses import dataclass
from enum import Enum
from typing import Any

from mini_agent.core.contracts import ToolSpec
from mini_agent.core.session import AgentConfig, AgentSession
from mini_agent.store import codec
from mini_agent.store.schema import HEADER


@dataclass(slots=True)
class Written:
    """What the store already holds for a session, so the next save writes only the difference."""

    messages: int
    steps: int
    last_step: bytes  # digest of the newest step's JSON: the only step still changing
    header: tuple[Any, ...]
    config: AgentConfig
    tools: list[ToolSpec]
    version: int  # PRAGMA data_version then: it moves when another connection commits anything


def header(session: AgentSession) -> tuple[Any, ...]:
    usage = session.usage
    return (
        codec.sql_text(session.task), session.status.value, _value(session.stop_reason),
        codec.sql_text(session.final_answer),
        usage.prompt_tokens, usage.completion_tokens, usage.cached_tokens,
        codec.dumps(session.standing_decisions), codec.dumps(session.pending), len(session.steps),
        session.created_at, session.updated_at, session.session_id,
    )


def update_header(conn: sqlite3.Connection, header: tuple[Any, ...], before: tuple[Any, ...]) -> bool:
    """Set only the columns that changed: naming an indexed column (status, updated_at) in an UPDATE
    rewrites its index entries even when the value is the same. False when the row is gone."""
    changed = [n for n in range(len(HEADER)) if header[n] != before[n]]
    if not changed:
        return True
    columns = ", ".join(f"{HEADER[n]} = ?" for n in changed)
    values = [header[n] for n in changed]
    return conn.execute(f"UPDATE sessions SET {columns} WHERE id = ?", (*values, header[-1])).rowcount > 0


def continues(session: AgentSession, mark: Written) -> bool:
    return (len(session.messages) >= mark.messages and len(session.steps) >= mark.steps
            and (session.config is mark.config or session.config == mark.config)
            and session.tools == mark.tools)  # a list compares its items by identity first


def unchanged(session: AgentSession, mark: Written, header: tuple[Any, ...], steps: list[Any]) -> bool:
    return not steps and header == mark.header and len(session.messages) == mark.messages


def step_rows(session: AgentSession, mark: Written | None) -> tuple[list[tuple[str, int, str]], bytes]:
    """Steps to write — every step new since `mark`, and the last one written if it changed since —
    and the digest of the newest step."""
    start = 0 if mark is None else max(mark.steps - 1, 0)
    rows, newest = [], b""
    for idx in range(start, len(session.steps)):
        record = codec.dumps(session.steps[idx])
        newest = digest(record)
        if mark is None or idx >= mark.steps or newest != mark.last_step:
            rows.append((session.session_id, idx, record))
    return rows, newest


def digest(text: str) -> bytes:
    return hashlib.sha256(text.encode()).digest()  # twice blake2b's speed on CPUs with SHA instructions


def _value(member: Enum | None) -> Any:
    return member.value if member is not None else None
