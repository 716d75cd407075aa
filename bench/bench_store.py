"""What the SQLite store costs the daemon: per checkpoint, per step, and per listSessions.

Checkpoints come from the real AgentRuntime (scripted model, instant tool), so the save pattern is
the runtime's own: model reply, tool started, observation, end of step. The "whole session" rows
make the store forget what it wrote before every save, which is what a store without incremental
bookkeeping would pay.

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

from mini_agent.contracts import (
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
from mini_agent.runtime import AgentRuntime
from mini_agent.session import AgentConfig, AgentSession, StepRecord
from mini_agent.store import SqliteStore

STEPS = 20
SCHEMA = {"type": "object", "properties": {"path": {"type": "string"}, "limit": {"type": "integer"}}}
TOOLS = [ToolSpec(f"tool_{n}", f"Tool number {n}, described at some length. " * 3, SCHEMA) for n in range(5)]
COMPLETION = "Thought: " + "I should look at the next file before answering. " * 6 + "\nAction: tool_0\n"
OUTPUT = "line of tool output with some numbers 12345\n" * 45  # about 2 KB per observation


class Model:
    def __init__(self) -> None:
        self.calls = 0

    async def generate(self, messages: Sequence[Message], tools: Sequence[ToolSpec], config: LLMConfig,
                       on_text: TextSink | None = None) -> LLMResponse:
        self.calls += 1
        arguments = {"path": f"src/{self.calls}.py"}
        call = ToolCall(f"c{self.calls}", "tool_0", arguments, json.dumps(arguments))
        return LLMResponse(COMPLETION, thought="I look", tool_calls=(call,), usage=TokenUsage(900, 60, 800))


class Tools:
    def list(self) -> list[ToolSpec]:
        return TOOLS

    def get(self, name: str) -> ToolSpec | None:
        return next((spec for spec in TOOLS if spec.name == name), None)

    async def execute(self, call: ToolCall, *, session_id: str) -> Observation:
        return Observation(call.id, call.name, OUTPUT, execution_time_ms=0.4)


class TimedStore:
    """Times every save, labelled with its session and the step it belongs to (0: the start)."""

    def __init__(self, store: SqliteStore, *, forget: bool) -> None:
        self.store = store
        self.forget = forget
        self.saves: list[tuple[str, int, float]] = []

    def save(self, session: AgentSession) -> None:
        if self.forget:
            self.store._written.clear()
        started = time.perf_counter()
        self.store.save(session)
        self.saves.append((session.session_id, len(session.steps), time.perf_counter() - started))

    def load(self, session_id: str) -> AgentSession | None:
        return self.store.load(session_id)


async def checkpoints(path: Path, runs: int, *, forget: bool) -> TimedStore:
    timed = TimedStore(SqliteStore(path), forget=forget)
    for _ in range(runs):
        runtime = AgentRuntime(Model(), Tools(), defaults=AgentConfig(max_steps=STEPS), store=timed)
        session = runtime.start_session("Summarise every module under src/")
        await runtime.run(session.session_id)
        assert len(session.steps) == STEPS
    timed.store.close()
    return timed


def us(seconds: Sequence[float]) -> str:
    return f"{statistics.median(seconds) * 1e6:.0f}"


def checkpoint_table(incremental: TimedStore, whole: TimedStore, runs: int) -> None:
    print(f"\nCheckpoints: {runs} sessions x {STEPS} steps, 1 tool call per step (µs; median unless said)")
    print(f"{'store':<15}{'per save':>9}{'p95':>8}{'saves/step':>11}{'per step':>9}{'step 1-5':>9}"
          f"{'step 16-20':>11}")
    for label, timed in (("incremental", incremental), ("whole session", whole)):
        steps: dict[tuple[str, int], list[float]] = {}
        for sid, step, seconds in timed.saves:
            if step:
                steps.setdefault((sid, step), []).append(seconds)
        times = [t for group in steps.values() for t in group]
        early = [t for (_, step), group in steps.items() if step <= 5 for t in group]
        late = [t for (_, step), group in steps.items() if step > STEPS - 5 for t in group]
        p95 = statistics.quantiles(times, n=20)[-1]
        print(f"{label:<15}{us(times):>9}{p95 * 1e6:8.0f}{len(times) / len(steps):11.1f}"
              f"{us([sum(group) for group in steps.values()]):>9}{us(early):>9}{us(late):>11}")


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
            "first page (50)": lambda: store.list(),
            "status=finished, 50": lambda: store.list("finished"),
            "page at offset 5000": lambda: store.list(offset=5000),
            "load one session": lambda: store.load("sess_004242"),
        }
        for label, call in cases.items():
            print(f"{label:<24}{timed_ms(call, 200):8.3f}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--sessions", type=int, default=10_000)
    parser.add_argument("--runs", type=int, default=30)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as folder:
        incremental = asyncio.run(checkpoints(Path(folder) / "inc.db", args.runs, forget=False))
        whole = asyncio.run(checkpoints(Path(folder) / "whole.db", args.runs, forget=True))
        checkpoint_table(incremental, whole, args.runs)
        listing_table(Path(folder) / "list.db", args.sessions)


if __name__ == "__main__":
    main()
