"""SqliteStore on real SQLite files in one process: exact round trips, incremental checkpoints, leases,
damaged and locked files, schema migrations, listing, and the runtime resuming from it."""

from __future__ import annotations

import asyncio
import gc
import json
import os
import sqlite3
import tempfile
import threading
from collections.abc import Callable, Sequence
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from mini_agent.core.contracts import (
    Image,
    LLMConfig,
    LLMResponse,
    Message,
    Observation,
    Resource,
    Role,
    SessionStatus,
    StopReason,
    TextSink,
    TokenUsage,
    ToolCall,
    ToolSource,
    ToolSpec,
)
from mini_agent.core.runtime import AgentRuntime
from mini_agent.core.session import AgentConfig, AgentSession, Decision, PendingApproval, StepRecord
from mini_agent.store import sqlite as store_module
from mini_agent.store.sqlite import SqliteStore, StoreError, default_path
from mini_agent.store.wal import COMMITS_PER_CHECKPOINT

from ...support.fakes import ScriptedModel, Tools

READ = ToolSpec(
    "read_file", "Read a file.",
    {"type": "object", "properties": {"path": {"type": "string"}, "lines": {"type": ["integer", "null"]}},
     "required": ["path"]},
    source=ToolSource("tools/files.py", "read_file", 12), title="Read file", idempotent=True, timeout_sec=2.5,
)
WIPE = ToolSpec("wipe", "Delete things.", {"type": "object", "properties": {}}, requires_approval=True)


def fresh(sid: str = "sess_1", task: str = "Count the lines in README.md") -> AgentSession:
    llm = LLMConfig(base_url="http://127.0.0.1:9/v1", model="m", api_key="k", tool_mode="native",
                    temperature=0.7, timeout_sec=30)
    config = AgentConfig(llm=llm, max_steps=7, system_prompt="Be brief.")
    session = AgentSession(sid, task, config, [READ, WIPE])
    session.messages += [Message(Role.SYSTEM, "Be brief."), Message(Role.USER, task)]
    return session


def rich() -> AgentSession:
    """Every kind of value the store must carry, with text that must come back byte for byte."""
    session = fresh(task="héllo\r\n漢字 🙂 \x00 trailing  ")
    arguments = {"path": "README.md", "lines": None, "nested": [1, 2.5, {"x": True}], "odd": "caf\udce9"}
    good = ToolCall("c1", "read_file", arguments, '{"path": "README.md",  "lines": null}')
    broken = ToolCall("c2", "read_file", {}, '{"path": "READ', parse_error="Unterminated string at char 9")
    risky = ToolCall("c3", "wipe", {})
    first = StepRecord(0, thought="Look first.\n", completion="Thought: Look first.\nAction: read_file\n",
                       tool_calls=[good, broken], started={"c1", "c2"}, usage=TokenUsage(120, 30, 64),
                       elapsed_ms=0.1 + 0.2, tool_mode="react")
    first.observations = [
        Observation("c1", "read_file", "x" * 50, execution_time_ms=1e-300, truncated=True, logs="printed\n"),
        Observation("c2", "read_file", "bad JSON", is_error=True, execution_time_ms=3.0),
    ]
    second = StepRecord(1, completion="", tool_calls=[risky], stop_reason=StopReason.CANCELLED, error="boom")
    session.steps = [first, second]
    session.messages += [
        Message(Role.ASSISTANT, first.completion, tool_calls=(good, broken)),
        Message(Role.TOOL, "x" * 50, tool_call_id="c1", name="read_file"),
        Message(Role.TOOL, "bad JSON", tool_call_id="c2", name="read_file\ud800"),
        Message(Role.USER, "ls: caf\udce9.txt"),  # lone surrogates: a file name that was not UTF-8
        Message(Role.ASSISTANT, "", tool_calls=(risky,)),
    ]
    session.pending = [PendingApproval(risky, 1), PendingApproval(good, 0, Decision.REJECT_ONCE, "no")]
    session.standing_decisions = {"wipe": Decision.REJECT_ALWAYS, "read_file": Decision.ALLOW_ALWAYS}
    session.status = SessionStatus.AWAITING_APPROVAL
    session.final_answer = "not yet \udcff"
    session.usage = TokenUsage(120, 30, 64)
    session.created_at, session.updated_at = 1700000000.123456789, float("inf")
    return session


def trace(store: SqliteStore) -> list[str]:
    """Every statement the store's connection runs from now on."""
    statements: list[str] = []
    store._conn.set_trace_callback(statements.append)
    return statements


def traced_saves(store: SqliteStore, session: AgentSession) -> tuple[Callable[[], list[str]], list[str]]:
    """A save of `session` that returns the kinds of statements it ran (the raw ones stay in the list)."""
    statements = trace(store)

    def save() -> list[str]:
        statements.clear()
        store.save(session)
        return kinds(statements)

    return save, statements


def kinds(statements: Sequence[str]) -> list[str]:
    """'INSERT messages', 'UPDATE sessions', 'BEGIN', … — enough to see what a save wrote (PRAGMAs
    only read)."""
    out = []
    for sql in statements:
        words = sql.split()
        if words[0] == "PRAGMA":
            continue
        table = next((w for w in words[1:4] if w in ("sessions", "messages", "steps")), "")
        out.append(f"{words[0]} {table}".strip())
    return out


def count(path: Path, table: str) -> int:
    with sqlite3.connect(path) as conn:
        rows: int = conn.execute(f"SELECT count(*) FROM {table}").fetchone()[0]
    return rows


# -- round trips ----------------------------------------------------------------------------------


def test_round_trip_is_exact_across_reopen(store: SqliteStore, db: Path) -> None:
    session = rich()
    store.save(session)
    with SqliteStore(db) as other:
        loaded = other.load(session.session_id)
    assert loaded == session
    assert loaded is not None and loaded.task == "héllo\r\n漢字 🙂 \x00 trailing  "
    # the codec rebuilds declared types (pydantic): an int given for a float field comes back a float
    assert loaded.config.llm.timeout_sec == 30 and loaded.steps[0].elapsed_ms == 0.1 + 0.2
    assert loaded.steps[0].started == {"c1", "c2"} and loaded.messages[2].tool_calls[1].parse_error
    assert store.load("sess_missing") is None


TEXT = st.text(st.characters() | st.characters(categories=["Cs"]))  # surrogates too, often


@settings(max_examples=30, deadline=None)
@given(texts=st.lists(TEXT, min_size=1, max_size=4), elapsed=st.floats(allow_nan=False))
def test_any_text_and_float_round_trip(texts: list[str], elapsed: float) -> None:
    with tempfile.TemporaryDirectory() as folder, SqliteStore(Path(folder) / "s.db") as store:
        session = fresh()
        for n, text in enumerate(texts):
            call = ToolCall(f"c{n}", "read_file", {"path": text}, text)
            session.steps.append(StepRecord(n, completion=text, tool_calls=[call], elapsed_ms=elapsed,
                                            observations=[Observation(call.id, call.name, text, logs=text)]))
            session.messages.append(Message(Role.ASSISTANT, text, (call,)))
            session.messages.append(Message(Role.TOOL, text, tool_call_id=call.id, name=text))
            session.task = session.final_answer = text
            store.save(session)
        with SqliteStore(Path(folder) / "s.db") as other:
            assert other.load(session.session_id) == session


# -- incremental checkpoints ----------------------------------------------------------------------


def test_each_checkpoint_writes_only_what_changed(store: SqliteStore, db: Path) -> None:
    session = fresh()
    store.save(session)
    save, statements = traced_saves(store, session)

    for k in range(6):  # the runtime's pattern; later steps must cost what the first did
        call = ToolCall(f"c{k}", "read_file", {"path": f"f{k}"})
        record = StepRecord(k, completion=f"Action {k}", tool_calls=[call])
        session.steps.append(record)
        session.messages.append(Message(Role.ASSISTANT, record.completion, (call,)))
        assert save() == ["BEGIN", "UPDATE sessions", "INSERT messages", "INSERT steps", "COMMIT"]  # intent
        assert statements[1].startswith("UPDATE sessions SET step_count = ")  # only what changed
        record.started.add(call.id)
        assert save() == ["BEGIN", "INSERT steps", "COMMIT"]  # the tool began
        record.observations.append(Observation(call.id, call.name, "out"))
        session.messages.append(Message(Role.TOOL, "out", tool_call_id=call.id, name=call.name))
        assert save() == ["BEGIN", "INSERT messages", "INSERT steps", "COMMIT"]  # its result
        session.status = SessionStatus.READY if k % 2 else SessionStatus.RUNNING
        session.touch()
        assert save() == ["BEGIN", "UPDATE sessions", "COMMIT"]  # end of step: the header only
        assert save() == []  # nothing changed, nothing written
    assert count(db, "messages") == len(session.messages) and count(db, "steps") == 6
    with SqliteStore(db) as other:
        assert other.load(session.session_id) == session


def test_a_loaded_session_continues_incrementally(store: SqliteStore, db: Path) -> None:
    store.save(rich())
    with SqliteStore(db) as daemon2:
        session = daemon2.load("sess_1")
        assert session is not None
        statements = trace(daemon2)
        daemon2.save(session)
        assert statements == []
        session.messages.append(Message(Role.USER, "more"))
        daemon2.save(session)
        assert kinds(statements) == ["BEGIN", "INSERT messages", "COMMIT"]
    assert store.load("sess_1") == session


def test_rewritten_history_and_foreign_writers_are_stored_whole(store: SqliteStore, db: Path) -> None:
    session = rich()
    store.save(session)
    session.messages = session.messages[:2]  # not an append: the store must not keep stale rows
    session.steps = []
    store.save(session)
    assert store.load("sess_1") == session
    with SqliteStore(db) as daemon2:  # a writer that never loaded it knows nothing of what is there
        other = fresh(task="other")
        daemon2.save(other)
        assert store.load("sess_1") == other
        assert daemon2.delete("sess_1")
    session.touch()
    store.save(session)  # the header update finds no row: written whole again
    assert store.load("sess_1") == session


def test_changes_deep_inside_setup_or_the_newest_step_are_not_missed(store: SqliteStore, db: Path) -> None:
    session = rich()
    store.save(session)
    save, _ = traced_saves(store, session)

    session.config = AgentConfig(llm=session.config.llm, max_steps=7, system_prompt="Be brief.")
    assert save() == []  # an equal copy of the setup is no change
    call = ToolCall("c9", "read_file", {"path": "a"})
    session.steps.append(StepRecord(2, tool_calls=[call]))
    assert save() == ["BEGIN", "UPDATE sessions", "INSERT steps", "COMMIT"]
    call.arguments["path"] = "b"  # in place, deep inside a frozen ToolCall of the newest step
    assert save() == ["BEGIN", "INSERT steps", "COMMIT"]
    session.tools.append(ToolSpec("late", "Added in place.", {"type": "object"}))
    assert save()[:2] == ["BEGIN", "INSERT sessions"]  # a new setup: stored whole
    session.config = session.config.with_overrides(max_steps=8)
    assert save()[:2] == ["BEGIN", "INSERT sessions"]
    with SqliteStore(db) as other:
        assert other.load(session.session_id) == session


def test_is_current_says_when_a_reload_would_change_nothing(store: SqliteStore, db: Path) -> None:
    session = rich()
    assert not store.is_current(session)  # never written
    store.save(session)
    assert store.is_current(session)
    session.steps[-1].started.add("c3")  # changed in memory only
    assert not store.is_current(session)
    store.save(session)
    assert store.is_current(session)
    with SqliteStore(db) as other:  # any commit by another connection may have touched it
        other.save_registrations([])
    assert not store.is_current(session)
    reloaded = store.load("sess_1")
    assert reloaded is not None and store.is_current(reloaded) and reloaded == session


@pytest.mark.asyncio
async def test_runtime_checkpoints_reload_exactly_and_write_each_message_once(db: Path) -> None:
    store = SqliteStore(db)
    statements = trace(store)
    paths = [{"path": f"f{n}"} for n in range(3)]
    calls = [ToolCall(f"c{n}", "read_file", args, json.dumps(args)) for n, args in enumerate(paths)]
    model = ScriptedModel(*[action(call) for call in calls], LLMResponse("Final Answer: 3", final_answer="3"))
    runtime = AgentRuntime(model, Tools(READ), store=store)
    session = runtime.start_session("count")
    summary = await runtime.run(session.session_id)
    assert summary.stop_reason is StopReason.END_TURN
    session = summary.session
    assert kinds(statements).count("INSERT messages") == len(session.messages)
    assert sum(sql.startswith("BEGIN") for sql in statements) == statements.count("COMMIT")
    with SqliteStore(db) as other:
        assert other.load(session.session_id) == session
    store.close()


def test_one_save_writes_many_sessions_in_one_transaction(store: SqliteStore, db: Path) -> None:
    first, second = fresh("sess_a"), rich()
    statements = trace(store)
    store.save(first, second)
    assert kinds(statements).count("BEGIN") == 1 and statements.count("COMMIT") == 1
    with SqliteStore(db) as other:
        assert other.load("sess_a") == first and other.load(second.session_id) == second
    statements.clear()
    store.save(first, second)  # nothing changed: no transaction at all
    assert kinds(statements) == []


@pytest.mark.asyncio
async def test_concurrent_runs_share_checkpoint_transactions(db: Path) -> None:
    """Sessions stepped at once commit the checkpoints that fall in one turn of the loop together, and
    each still reloads exactly."""
    store = SqliteStore(db)
    statements = trace(store)
    replies = [action(ToolCall(f"c{n}", "read_file", {"path": "f"}, '{"path": "f"}')) for n in range(2)]
    model = Lockstep([*replies, LLMResponse("Final Answer: done", final_answer="done")])
    runtime = AgentRuntime(model, Tools(READ), store=store)
    sessions = [runtime.start_session(f"count {n}").session_id for n in range(8)]
    started = sum(sql.startswith("BEGIN") for sql in statements)
    summaries = await asyncio.gather(*(runtime.run(sid) for sid in sessions))
    assert all(summary.stop_reason is StopReason.END_TURN for summary in summaries)
    saves = sum(sql.startswith("BEGIN") for sql in statements) - started - 2 * len(sessions)  # leases
    assert 0 < saves < 2 * 3 * len(sessions) / 2  # alone, each session would commit twice per step
    with SqliteStore(db) as other:
        for summary in summaries:
            assert other.load(summary.session.session_id) == summary.session
    store.close()


class Lockstep:
    """The same script for every session (by how many tool results its history holds)."""

    def __init__(self, replies: list[LLMResponse]) -> None:
        self.replies = replies

    async def generate(self, messages: Sequence[Message], tools: Sequence[ToolSpec], config: LLMConfig,
                       on_text: TextSink | None = None, **_: object) -> LLMResponse:
        await asyncio.sleep(0)
        return self.replies[sum(m.role is Role.TOOL for m in messages)]


# -- resuming after a daemon dies (the runtime on top of the store) ---------------------------------




def action(call: ToolCall) -> LLMResponse:
    return LLMResponse(f"Action: {call.name}", thought="t", tool_calls=(call,), usage=TokenUsage(9, 3, 1))


@pytest.mark.asyncio
async def test_a_session_awaiting_approval_survives_a_restart(db: Path) -> None:
    call = ToolCall("c1", "wipe", {})
    first = AgentRuntime(ScriptedModel(action(call)), Tools(WIPE), store=SqliteStore(db))
    session = first.start_session("clean up")
    await first.step(session.session_id)
    tools = Tools(WIPE)
    second = AgentRuntime(ScriptedModel(), tools, store=SqliteStore(db))
    restored = second.get(session.session_id)
    assert restored.status is SessionStatus.AWAITING_APPROVAL and restored.pending[0].call == call
    second.approve(session.session_id, "c1", Decision.ALLOW_ONCE)
    with SqliteStore(db) as third:
        reloaded = third.load(session.session_id)
    assert reloaded is not None and reloaded.pending[0].decision is Decision.ALLOW_ONCE
    await second.step(session.session_id)
    assert [ran.id for ran in tools.ran] == ["c1"]


# -- leases ---------------------------------------------------------------------------------------


def test_lease_rules_for_owners_processes_and_hosts(db: Path) -> None:
    store = SqliteStore(db, lease_stale_after=60)
    assert store.acquire("s", "a") and store.acquire("s", "a")  # free, then ours already
    assert not store.acquire("s", "b")  # another owner in this very process is alive
    assert not store.release("s", "b") and store.release("s", "a") and store.lease("s") is None

    def plant(host: str, age: float, pid: int = 1, process: str = "p") -> None:
        with sqlite3.connect(db) as conn:
            conn.execute("INSERT OR REPLACE INTO leases VALUES ('s', 'far', ?, ?, ?, strftime('%s') - ?)",
                         (pid, process, host, age))

    plant("elsewhere", age=5)
    assert not store.acquire("s", "b")  # another host with a fresh heartbeat
    plant("elsewhere", age=600)
    assert store.acquire("s", "b")  # its heartbeat went stale
    plant(store._host, age=0, pid=os.getpid(), process="an earlier process")
    assert store.acquire("s", "b")  # our pid, reused after a restart: the holder is gone
    assert store.acquire("t", "b") and store.heartbeat("b") == 2
    assert store.release_all("b") == 2 and store.lease("s") is None
    store.close()


# -- damaged and locked files ---------------------------------------------------------------------


def open_and_read(path: Path, **options: float) -> None:
    with SqliteStore(path, **options) as store:
        for row in store.list_sessions(limit=1000)[0]:
            store.load(row.session_id)


def test_a_file_that_is_not_a_database_is_a_clear_error(db: Path) -> None:
    db.parent.mkdir(parents=True)
    db.write_bytes(b"certainly not SQLite\n" * 500)
    with pytest.raises(StoreError) as info:
        SqliteStore(db)
    message = str(info.value)
    assert str(db) in message and "not a usable SQLite database" in message and "move it aside" in message
    assert info.value.path == db


def test_a_damaged_database_is_a_clear_error(store: SqliteStore, db: Path) -> None:
    for n in range(40):
        store.save(rich() if n % 2 else fresh(f"sess_{n}", "x" * 3000))
    store.close()
    data = db.read_bytes()
    page = 4096  # keep the header page, scramble every table and index page after it
    db.write_bytes(data[:page] + bytes((n * 7) % 256 for n in range(len(data) - page)))
    with pytest.raises(StoreError, match="not a usable SQLite database") as info:
        open_and_read(db)
    assert str(db) in str(info.value)


def test_a_locked_database_is_a_clear_error_and_recovers(db: Path) -> None:
    store = SqliteStore(db, busy_timeout=0.05)
    session = rich()
    store.save(session)
    blocker = sqlite3.connect(db, isolation_level=None)
    blocker.execute("BEGIN EXCLUSIVE")
    session.messages.append(Message(Role.USER, "later"))
    with pytest.raises(StoreError, match="is locked by another process") as info:
        store.save(session)
    assert str(db) in str(info.value)
    blocker.execute("COMMIT")
    blocker.close()
    store.save(session)  # the failed save left nothing half-known behind
    assert store.load("sess_1") == session
    store.close()


def test_opening_a_locked_database_is_a_clear_error(tmp_path: Path) -> None:
    path = tmp_path / "busy.db"
    blocker = sqlite3.connect(path, isolation_level=None)
    blocker.execute("CREATE TABLE theirs (a)")
    blocker.execute("BEGIN EXCLUSIVE")
    with pytest.raises(StoreError, match="is locked by another process") as info:
        SqliteStore(path, busy_timeout=0.05)
    assert str(path) in str(info.value)
    blocker.execute("ROLLBACK")
    blocker.close()
    with SqliteStore(path) as store:  # an unversioned file gets our tables beside its own
        store.save(fresh())
    assert count(path, "theirs") == 0 and count(path, "sessions") == 1


# -- migrations -----------------------------------------------------------------------------------


def user_version(path: Path) -> int:
    with sqlite3.connect(path) as conn:
        version: int = conn.execute("PRAGMA user_version").fetchone()[0]
    return version


def test_an_empty_file_is_migrated_to_the_current_schema(db: Path) -> None:
    db.parent.mkdir(parents=True)
    db.touch()
    with SqliteStore(db) as store:
        store.save(fresh())
    assert user_version(db) == len(store_module.MIGRATIONS) == 3
    with sqlite3.connect(db) as conn:
        assert conn.execute("PRAGMA journal_mode").fetchone()[0] == "wal"


def test_a_file_from_a_newer_version_is_refused(db: Path) -> None:
    db.parent.mkdir(parents=True)
    with sqlite3.connect(db) as conn:
        conn.execute("PRAGMA user_version = 99")
    with pytest.raises(StoreError, match="newer mini-agent") as info:
        SqliteStore(db)
    assert str(db) in str(info.value) and "schema version 99" in str(info.value)
    assert user_version(db) == 99


def test_pending_migrations_apply_in_order_or_not_at_all(
    store: SqliteStore, db: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    store.save(rich())
    store.close()
    v1 = store_module.MIGRATIONS
    broken = ("CREATE TABLE extra (a)", "THIS IS NOT SQL")
    monkeypatch.setattr(store_module, "MIGRATIONS", (*v1, broken))
    with pytest.raises(StoreError, match="upgrading the session store"):
        SqliteStore(db)
    assert user_version(db) == len(v1)
    with sqlite3.connect(db) as conn:
        assert conn.execute("SELECT count(*) FROM sqlite_master WHERE name = 'extra'").fetchone()[0] == 0
    v2 = ("CREATE TABLE notes (id TEXT)",)
    v3 = ("ALTER TABLE notes ADD COLUMN body TEXT",)  # needs v2 first
    monkeypatch.setattr(store_module, "MIGRATIONS", (*v1, v2, v3))
    with SqliteStore(db) as upgraded:
        assert upgraded.load("sess_1") == rich()
    assert user_version(db) == len(v1) + 2


def test_a_store_from_before_images_is_upgraded_and_keeps_its_sessions(db: Path) -> None:
    """Schema 1 had no `images` column: its sessions load after the upgrade, and a user turn's images
    are kept from then on."""
    db.parent.mkdir(parents=True)
    with sqlite3.connect(db) as conn:
        for statement in store_module.MIGRATIONS[0]:
            conn.execute(statement)
        conn.execute("PRAGMA user_version = 1")
    with SqliteStore(db) as old:  # upgraded on open
        old.save(rich())
    pictured = fresh("sess_2")
    pictured.messages.append(Message(Role.USER, "what is this?", images=(Image("image/png", "iVBORw0K"),)))
    with SqliteStore(db) as store:
        store.save(pictured)
        assert store.load(pictured.session_id) == pictured and store.load("sess_1") == rich()
    assert user_version(db) == len(store_module.MIGRATIONS)


def test_a_store_from_before_prompt_parts_is_upgraded_and_a_turns_parts_are_kept_in_order(db: Path) -> None:
    """Schema 2 had no `parts` column: its sessions load after the upgrade, and a turn given as words,
    a linked file, an embedded one and an image comes back as those parts, in that order."""
    db.parent.mkdir(parents=True)
    with sqlite3.connect(db) as conn:
        for migration in store_module.MIGRATIONS[:2]:
            for statement in migration:
                conn.execute(statement)
        conn.execute("PRAGMA user_version = 2")
    with SqliteStore(db) as old:
        old.save(rich())
    parts = ("Read these:", Resource("file:///w/a.py", "a.py"), Image("image/png", "iVBORw0K"),
             Resource("file:///w/notes.md", "notes.md", text="remember the milk", mime_type="text/markdown"))
    given = fresh("sess_p")
    given.messages.append(Message(Role.USER, "Read these:", images=(parts[2],), parts=parts))
    with SqliteStore(db) as store:
        store.save(given)
    with SqliteStore(db) as store:
        assert store.load("sess_p") == given and store.load("sess_1") == rich()
    assert user_version(db) == 3


def test_the_images_a_tool_returned_are_kept_with_its_result_and_its_message(store: SqliteStore) -> None:
    session = fresh("sess_t")
    image = Image("image/png", "iVBORw0K")
    call = ToolCall("c1", "every_get-tiny-image", {})
    shown = "Here it is:\n[image: image/png, 6 bytes]"
    result = Observation("c1", call.name, shown, images=(image,))
    session.steps.append(StepRecord(0, tool_calls=[call], observations=[result], tool_mode="native"))
    session.messages += [
        Message(Role.ASSISTANT, "", tool_calls=(call,)),
        Message(Role.TOOL, shown, tool_call_id="c1", name=call.name, images=(image,)),
    ]
    store.save(session)
    loaded = store.load("sess_t")
    assert loaded == session
    assert loaded.messages[-1].images == loaded.steps[0].observations[0].images == (image,)


# -- listing, deleting, registrations, location -----------------------------------------------------


def test_list_pages_newest_first_with_filter_and_total(store: SqliteStore, db: Path) -> None:
    statuses = ["ready", "finished", "ready", "awaiting_approval", "finished", "ready", "finished"]
    for n, status in enumerate(statuses):
        session = fresh(f"sess_{n}")
        session.status = SessionStatus(status)
        session.updated_at = 1000.0 + (n if n != 6 else 5)  # sess_6 ties with sess_5; the later row wins
        store.save(session)
    rows, total = store.list_sessions()
    assert total == 7 and [r.session_id for r in rows] == [f"sess_{n}" for n in (6, 5, 4, 3, 2, 1, 0)]
    page, total = store.list_sessions(limit=2, offset=2)
    assert total == 7 and [r.session_id for r in page] == ["sess_4", "sess_3"]
    finished, total = store.list_sessions("finished", limit=2)
    assert total == 3 and [r.session_id for r in finished] == ["sess_6", "sess_4"]
    assert store.list_sessions("running") == ([], 0)
    row = rows[0]
    assert (row.task, row.status, row.step_count, row.usage) == (
        "Count the lines in README.md", SessionStatus.FINISHED, 0, TokenUsage())
    with sqlite3.connect(db) as conn:
        plan = " ".join(str(r) for r in conn.execute(
            "EXPLAIN QUERY PLAN SELECT id FROM sessions WHERE status = 'ready' "
            "ORDER BY updated_at DESC, rowid DESC LIMIT 50"))
    assert "sessions_by_status" in plan and "TEMP B-TREE" not in plan


def test_delete_removes_the_session_and_its_history(store: SqliteStore, db: Path) -> None:
    store.save(rich())
    store.save(fresh("sess_2"))
    assert store.acquire("sess_1", "me")
    assert store.delete("sess_1") and not store.delete("sess_1")
    assert store.load("sess_1") is None and store.lease("sess_1") is None
    assert count(db, "messages") == 2 and count(db, "steps") == 0 and store.list_sessions()[1] == 1


def test_registrations_are_replaced_and_survive_reopening(store: SqliteStore, db: Path) -> None:
    assert store.load_registrations() == []
    store.save_registrations([{"path": "tools/a.py"}, {"path": "tools/b.py", "function": "f"}])
    store.save_registrations([{"path": "tools/b.py", "function": "f", "requiresApproval": True}])
    with SqliteStore(db) as other:
        assert other.load_registrations() == [
            {"path": "tools/b.py", "function": "f", "requiresApproval": True}]


def test_workspace_store_lives_in_an_ignored_folder(tmp_path: Path) -> None:
    with SqliteStore.for_workspace(tmp_path) as store:
        store.save(fresh())
    assert default_path(tmp_path) == tmp_path / ".mini-agent" / "sessions.db"
    assert default_path(tmp_path).is_file()
    assert (tmp_path / ".mini-agent" / ".gitignore").read_text().splitlines()[-1] == "*"


def checkpoint_threads(db: Path) -> list[threading.Thread]:
    """The live checkpoint threads of the store on `db` (each is named after its file)."""
    return [thread for thread in threading.enumerate() if thread.name.endswith(str(db))]


def test_the_log_is_copied_into_the_database_file_by_its_own_thread(db: Path) -> None:
    """Without that thread nothing would be copied before BACKSTOP_PAGES, far past these commits."""
    store = SqliteStore(db)
    session, empty = fresh(), db.stat().st_size
    for k in range(2 * COMMITS_PER_CHECKPOINT):
        session.messages.append(Message(Role.USER, f"turn {k} " + "x" * 2000))
        store.save(session)
    for _ in range(200):
        if db.stat().st_size > empty:
            break
        threading.Event().wait(0.05)
    assert db.stat().st_size > empty
    store.close()
    assert not checkpoint_threads(db)
    with SqliteStore(db) as reopened:
        assert reopened.load(session.session_id) == session


def test_a_store_dropped_without_close_lets_its_checkpoint_thread_end(db: Path) -> None:
    SqliteStore(db).save(fresh())  # the store is garbage at once
    gc.collect()
    for _ in range(200):
        if not checkpoint_threads(db):
            break
        threading.Event().wait(0.05)
    assert not checkpoint_threads(db)


def test_a_store_opened_on_one_thread_serves_another(db: Path) -> None:
    opened: list[SqliteStore] = []
    worker = threading.Thread(target=lambda: opened.append(SqliteStore(db)))
    worker.start()
    worker.join()
    opened[0].save(rich())
    assert opened[0].load("sess_1") == rich()
    opened[0].close()


def test_unusable_folder_is_a_clear_error(tmp_path: Path) -> None:
    blocker = tmp_path / "file"
    blocker.write_text("")
    with pytest.raises(StoreError, match="cannot create the folder") as info:
        SqliteStore(blocker / "sessions.db")
    assert str(blocker) in str(info.value)
