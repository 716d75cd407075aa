"""The agent core's own CPU per step, in process: the real AgentRuntime and SqliteStore with a model
and a tool that answer at once, so what is measured is the stepper, the events, the checkpoints and
the loop — no model server, no tool host, no client.

    PYTHONPATH=server python bench/bench_core.py [--steps 20] [--rounds 6]

Printed: CPU microseconds per step (`time.process_time`, median of the rounds after the first), with
the store on and off, for 1 session and for 50 run at once (where checkpoints due in one turn of the
event loop share a transaction), and the transactions the store committed per step.
"""

from __future__ import annotations

import argparse
import asyncio
import statistics
import tempfile
import time
from collections.abc import Sequence
from pathlib import Path

from mini_agent.core.contracts import (
    LLMConfig,
    LLMResponse,
    Message,
    Observation,
    Role,
    TextSink,
    TokenUsage,
    ToolCall,
    ToolSpec,
)
from mini_agent.core.runtime import AgentRuntime
from mini_agent.core.session import AgentConfig
from mini_agent.store.sqlite import SqliteStore

ADD = ToolSpec("add", "Add one.", {"type": "object", "properties": {"a": {"type": "integer"}}})


class Model:
    """Calls `add` until the session has `steps - 1` results, then answers."""

    def __init__(self, steps: int) -> None:
        self.steps = steps

    async def generate(self, messages: Sequence[Message], tools: Sequence[ToolSpec], config: LLMConfig,
                       on_text: TextSink | None = None, **_: object) -> LLMResponse:
        await asyncio.sleep(0)
        done = sum(m.role is Role.TOOL for m in messages)
        if done + 1 >= self.steps:
            return LLMResponse(f"Final Answer: {done}", final_answer=str(done), usage=TokenUsage(10, 2, 0))
        call = ToolCall(f"c{done}", "add", {"a": done})
        return LLMResponse("", tool_calls=(call,), usage=TokenUsage(10, 2, 0))


class Tools:
    def list_tools(self) -> list[ToolSpec]:
        return [ADD]

    def get(self, name: str) -> ToolSpec | None:
        return ADD

    async def execute(self, call: ToolCall, *, session_id: str) -> Observation:
        await asyncio.sleep(0)
        return Observation(call.id, call.name, str(call.arguments["a"] + 1))


async def per_step(store: SqliteStore | None, sessions: int, steps: int, rounds: int) -> tuple[float, float]:
    """(CPU µs per step, transactions per step) over `rounds` rounds after a warm-up one."""
    commits: list[str] = []
    if store is not None:
        store._conn.set_trace_callback(lambda sql: commits.append(sql) if sql == "COMMIT" else None)
    runtime = AgentRuntime(Model(steps), Tools(), defaults=AgentConfig(max_steps=steps), store=store)
    figures = []
    for round_no in range(rounds + 1):
        ids = [runtime.start_session("add up").session_id for _ in range(sessions)]
        commits.clear()
        started = time.process_time()
        await asyncio.gather(*(runtime.run(sid) for sid in ids))
        if round_no:
            figures.append((time.process_time() - started) / (sessions * steps) * 1e6)
    return statistics.median(figures), len(commits) / (sessions * steps)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--steps", type=int, default=20)
    parser.add_argument("--rounds", type=int, default=6)
    args = parser.parse_args()
    print(f"{'sessions at once':<18}{'store':<7}{'CPU µs / step':>14}{'commits / step':>16}")
    for sessions in (1, 50):
        for on in (True, False):
            with tempfile.TemporaryDirectory() as folder:
                store = SqliteStore(Path(folder) / "sessions.db") if on else None
                cpu, commits = asyncio.run(per_step(store, sessions, args.steps, args.rounds))
                if store is not None:
                    store.close()
            print(f"{sessions:<18}{'on' if on else 'off':<7}{cpu:14.0f}{commits:16.2f}")


if __name__ == "__main__":
    main()
