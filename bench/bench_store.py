"""What the SQLite store costs the daemon: per checkpoint, per step, and per listSessions.

Checkpoints come from the real AgentRuntime (scripted model, instant tool), so the save pattern is
the runtime's own: before the tool runs, and at the step's end (which also holds the result). The
"whole session" rows make the store forget what it wrote before every save, which is what a store
without incremental bookkeeping would pay.

    PYTHONPATH=server python bench/bench_store.py [--sessions 10000] [--runs 30]
"""

from __future__ import annotations

import argparse
import asyncio
import json
import random
import statistics
import tempfile
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import TypeVar

from mini_agent.core.contracts import (
    LLMConfig,
    LLMResponse,
    Message,
    Observation,
    Role,
    SessionStatus,
    TextSink,
    TokenUsage,
    ToolCall,
    ToolSpec,
)
from mini_agent.core.runtime import AgentRuntime
from mini_agent.core.session import AgentConfig, AgentSession, StepRecord
from mini_agent.store.sqlite import SqliteStore

T = TypeVar("T")
STEPS = 20
SCHEMA = {"type": "object", "properties": {"path": {"type": "string"}, "limit": {"type": "integer"}}}
TOOLS = [ToolSpec(f"tool_{n}", f"Tool number {n}, described at some length. " * 3, SCHEMA) for n in range(5)]
COMPLETION = "Thought: " + "I should look at the next file before answering. " * 6 + "\nAction: tool_0\n"
OUTPUT = "line of tool output with some numbers 12345\n" * 45  # about 2 KB per observation


class Model:
    def __init__(self) -> None:
        self.calls = 0

    async def generate(self, messages: Sequence[Message], tools: Sequence[ToolSpec], config: LLMConfig,
                       on_text: TextSink | None = None, **_: object) -> LLMResponse:
        self.calls += 1
        arguments = {"path": f"src/{self.calls}.py"}
        call = ToolCall(f"c{self.calls}", "tool_0", arguments, json.dumps(arguments))
        return LLMResponse(COMPLETION, thought="I look", tool_calls=(call,), usage=TokenUsage(900, 60, 800))


class Tools:
    def list_tools(self) -> list[ToolSpec]:
        return TOOLS

    def get(self, name: str) -> ToolSpec | None:
        return next((spec for spec in TOOLS if spec.name == name), None)

    async def execute(self, call: ToolCall, *, session_id: str) -> Observation:
        return Observation(call.id, call.name, OUTPUT, execution_time_ms=0.4)


class TimedStore:
    """Times every store call the runtime makes, labelled with the step it belongs to (0: the start)."""

    def __init__(self, store: SqliteStore, *, whole: bool) -> None:
        self.store = store
        self.whole = whole
        self.step: dict[str, int] = {}
        self.calls: list[tuple[str, str, int, float]] = []  # (operation, session, step, seconds)
        self.reload_ms: dict[str, float] = {}

    def _timed(self, operation: str, session_id: str, call: Callable[[], T]) -> T:
        """Saves belong to the step the session is in; lease calls (once per run) to the step about to run."""
        step = self.step.get(session_id, 0) + (operation != "save")
        started = time.perf_counter()
        result = call()
        elapsed = time.perf_counter() - started
        self.calls.append((operation, session_id, step, elapsed))
        return result

    def save(self, *sessions: AgentSession) -> None:
        """One session at a time here (one runtime, one session): each save is one checkpoint."""
        for session in sessions:
            if self.whole:
                self.store._written.clear()
            self.step[session.session_id] = len(session.steps)
            self._timed("save", session.session_id, lambda s=session: self.store.save(s))

    def forget(self, session_id: str) -> None:
        self.store.forget(session_id)

    def load(self, session_id: str) -> AgentSession | None:
        return self._timed("load", session_id, lambda: self.store.load(session_id))

    def is_current(self, session: AgentSession) -> bool:
        return self._timed("is_current", session.session_id, lambda: self.store.is_current(session))

    def acquire(self, session_id: str, owner: str) -> bool:
        return self._timed("acquire", session_id, lambda: self.store.acquire(session_id, owner))

    def release(self, session_id: str, owner: str) -> bool:
        return self._timed("release", session_id, lambda: self.store.release(session_id, owner))


async def checkpoints(path: Path, runs: int, *, whole: bool) -> TimedStore:
    timed = TimedStore(SqliteStore(path), whole=whole)
    for _ in range(runs):
        runtime = AgentRuntime(Model(), Tools(), defaults=AgentConfig(max_steps=STEPS), store=timed)
        summary = await runtime.run(runtime.start_session("Summarise every module under src/").session_id)
        assert len(summary.session.steps) == STEPS
    store, session = timed.store, summary.session
    timed.reload_ms = {
        f"load ({STEPS} steps)": timed_ms(lambda: store.load(session.session_id), 200),
        f"is_current ({STEPS} steps)": timed_ms(lambda: store.is_current(session), 200),
    }
    store.close()
    return timed


def us(seconds: Sequence[float]) -> str:
    return f"{statistics.median(seconds) * 1e6:.0f}" if seconds else "-"


def checkpoint_table(incremental: TimedStore, whole: TimedStore, runs: int) -> None:
    print(f"\nStore calls per step: {runs} sessions x {STEPS} steps, 1 tool call per step, the real runtime "
          "(µs; median unless named)")
    print(f"{'operation':<26}{'calls/step':>11}{'steps 1-5':>11}{'steps 16-20':>13}{'p95 all':>9}"
          f"{'max all':>9}{'mean all':>10}")
    rows = [(f"{op} (incremental)" if op == "save" else op, incremental, op)
            for op in ("save", "acquire", "is_current", "load", "release")]
    rows.append(("save (whole session)", whole, "save"))
    for label, timed, op in rows:
        calls = [(step, t) for name, _, step, t in timed.calls if name == op and step]
        times = [t for _, t in calls]
        early = [t for step, t in calls if step <= 5]
        late = [t for step, t in calls if step > STEPS - 5]
        p95 = f"{statistics.quantiles(times, n=20)[-1] * 1e6:.0f}" if len(times) > 1 else "-"
        most = f"{max(times) * 1e6:.0f}" if times else "-"
        mean = f"{statistics.mean(times) * 1e6:.0f}" if times else "-"
        print(f"{label:<26}{len(calls) / (runs * STEPS):11.1f}{us(early):>11}{us(late):>13}{p95:>9}{most:>9}"
              f"{mean:>10}")
    totals: dict[tuple[str, int], float] = {}
    for _, sid, step, seconds in incremental.calls:
        if step:
            totals[(sid, step)] = totals.get((sid, step), 0.0) + seconds
    early = [t for (_, step), t in totals.items() if step <= 5]
    late = [t for (_, step), t in totals.items() if step > STEPS - 5]
    print(f"{'all of one step':<26}{'':>11}{us(early):>11}{us(late):>13}")
    print("\nReloading a session before a step (µs, median of 200)")
    for label, ms in incremental.reload_ms.items():
        print(f"{label:<26}{ms * 1e3:11.0f}")


def populate(store: SqliteStore, count: int) -> None:
    rng = random.Random(7)
    statuses = list(SessionStatus)
    for n in range(count):
        task = f"Task number {n}: " + "describe the change " * 4
        session = AgentSession(f"sess_{n:06d}", task, AgentConfig(), TOOLS[:2])
        session.messages += [Message(Role.SYSTEM, "You are careful."), Message(Role.USER, session.task)]
        session.steps.append(StepRecord(0, completion=COMPLETION, usage=TokenUsage(900, 60, 800)))
        session.messages.append(Message(Role.ASSISTANT, COMPLETION))
        session.status = rng.choice(statuses)
        session.updated_at = 1.7e9 + rng.random() * 1e7
        store.save(session)


def timed_ms(call: Callable[[], object], repeats: int) -> float:
    samples = []
    for _ in range(repeats):
        started = time.perf_counter()
        call()
        samples.append(time.perf_counter() - started)
    return statistics.median(samples) * 1e3


def listing_table(path: Path, count: int) -> None:
    with SqliteStore(path) as store:
        started = time.perf_counter()
        populate(store, count)
        filled = time.perf_counter() - started
    print(f"\nlistSessions with {count} stored sessions (filled in {filled:.1f} s; ms, p50 of 200)")
    with SqliteStore(path) as store:
        cases = {
            "first page (50)": lambda: store.list_sessions(),
            "status=finished, 50": lambda: store.list_sessions("finished"),
            f"page at offset {count // 2}": lambda: store.list_sessions(offset=count // 2),
            f"load one session ({STEPS // 20} step)": lambda: store.load(f"sess_{count // 2:06d}"),
        }
        for label, call in cases.items():
            print(f"{label:<24}{timed_ms(call, 200):8.3f}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--sessions", type=int, default=10_000)
    parser.add_argument("--runs", type=int, default=30)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as folder:
        incremental = asyncio.run(checkpoints(Path(folder) / "inc.db", args.runs, whole=False))
        whole = asyncio.run(checkpoints(Path(folder) / "whole.db", args.runs, whole=True))
        checkpoint_table(incremental, whole, args.runs)
        listing_table(Path(folder) / "list.db", args.sessions)


if __name__ == "__main__":
    main()
