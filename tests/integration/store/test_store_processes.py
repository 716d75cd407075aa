"""SqliteStore across real processes: a daemon killed mid-tool, and leases raced by several processes."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest
from mini_agent.core.contracts import (
    ToolSpec,
)
from mini_agent.core.runtime import AgentRuntime
from mini_agent.core.stepper import INTERRUPTED
from mini_agent.store.sqlite import SqliteStore

from ...support.daemon import daemon_env
from ...support.fakes import ScriptedModel, Tools

# -- round trips ----------------------------------------------------------------------------------


# -- incremental checkpoints ----------------------------------------------------------------------


# -- resuming after a daemon dies (the runtime on top of the store) ---------------------------------




CRASHER = """
import asyncio, sys
from pathlib import Path
from mini_agent.core.contracts import LLMResponse, ToolCall, ToolSpec
from mini_agent.core.runtime import AgentRuntime
from mini_agent.store.sqlite import SqliteStore

NOTE = ToolSpec("write_note", "Write.", {"type": "object", "properties": {}})

class Model:
    async def generate(self, messages, tools, config, on_text=None, **_):
        return LLMResponse("Action: write_note", tool_calls=(ToolCall("c1", "write_note", {}),))

class Tools:
    def list_tools(self): return [NOTE]
    def get(self, name): return NOTE
    async def execute(self, call, *, session_id):
        print(session_id, flush=True)  # the tool is running; the test kills us now
        await asyncio.Event().wait()

async def main():
    runtime = AgentRuntime(Model(), Tools(), store=SqliteStore(Path(sys.argv[1])))
    await runtime.step(runtime.start_session("write").session_id)

asyncio.run(main())
"""


@pytest.mark.asyncio
async def test_a_tool_cut_off_by_a_killed_daemon_is_reported_interrupted_not_rerun(db: Path) -> None:
    crasher = subprocess.Popen([sys.executable, "-c", CRASHER, str(db)], stdout=subprocess.PIPE, text=True,
                               env=daemon_env())
    assert crasher.stdout is not None
    session_id = crasher.stdout.readline().strip()
    crasher.kill()
    crasher.wait()
    crasher.stdout.close()
    tools = Tools(ToolSpec("write_note", "Write.", {"type": "object", "properties": {}}))
    second = AgentRuntime(ScriptedModel(), tools, store=SqliteStore(db))
    record = await second.step(session_id)  # the dead daemon's lease is taken over at once
    assert tools.ran == [] and record.observations[0].output == INTERRUPTED


# -- leases ---------------------------------------------------------------------------------------

HOLDER = """
import sys
from pathlib import Path
from mini_agent.store.sqlite import SqliteStore
store = SqliteStore(Path(sys.argv[1]))
print("ready", flush=True)
sys.stdin.readline()
print(store.acquire("sess_1", sys.argv[2]), flush=True)
sys.stdin.read()  # keep the lease (and the pid) alive until the test closes stdin
"""


def holders(db: Path, owners: list[str]) -> list[subprocess.Popen[str]]:
    procs = [subprocess.Popen([sys.executable, "-c", HOLDER, str(db), owner], stdin=subprocess.PIPE,
                              stdout=subprocess.PIPE, text=True, env=daemon_env()) for owner in owners]
    for proc in procs:
        assert proc.stdout is not None and proc.stdout.readline() == "ready\n"
    return procs


def go(procs: list[subprocess.Popen[str]]) -> list[str]:
    for proc in procs:
        assert proc.stdin is not None
        proc.stdin.write("go\n")
        proc.stdin.flush()
    return [proc.stdout.readline().strip() for proc in procs if proc.stdout is not None]


def end(procs: list[subprocess.Popen[str]]) -> None:
    for proc in procs:
        assert proc.stdin is not None
        proc.stdin.close()
        proc.wait(timeout=30)
        assert proc.stdout is not None
        proc.stdout.close()


def test_racing_processes_get_exactly_one_lease(store: SqliteStore, db: Path) -> None:
    owners = [f"daemon-{n}" for n in range(4)]
    procs = holders(db, owners)
    try:
        results = go(procs)
        assert results.count("True") == 1 and results.count("False") == 3
        winner = results.index("True")
        lease = store.lease("sess_1")
        assert lease is not None and (lease.owner, lease.pid) == (owners[winner], procs[winner].pid)
    finally:
        end(procs)


def test_a_dead_holders_lease_is_taken_at_once(store: SqliteStore, db: Path) -> None:
    patient = SqliteStore(db, lease_stale_after=1e9)  # expiry plays no part on one host
    procs = holders(db, ["old-daemon"])
    try:
        assert go(procs) == ["True"]
        assert not patient.acquire("sess_1", "new-daemon")  # alive: refused
    finally:
        end(procs)
    assert patient.acquire("sess_1", "new-daemon")
    lease = patient.lease("sess_1")
    assert lease is not None and (lease.owner, lease.pid) == ("new-daemon", os.getpid())
    patient.close()


# -- damaged and locked files ---------------------------------------------------------------------


# -- migrations -----------------------------------------------------------------------------------


# -- listing, deleting, registrations, location -----------------------------------------------------
