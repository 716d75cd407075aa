"""What running a tool in the host subprocess costs, per call, over calling it in process.

Both paths validate the same arguments through the same pydantic model and render the result the
same way; the host path adds the pipe round trip, the fd 1/2 redirection and the asyncio wake-up.
Target: the host adds under 300 µs at p50.

The three paths are measured in interleaved rounds so that they share the machine's load. On a
shared machine the wall-clock figures mostly measure the scheduler (two process hand-offs per
call), so CPU time per call is printed too: the daemon's (getrusage) plus the host's (/proc).

    PYTHONPATH=server python bench/bench_tool_host.py [--calls 3000] [--rounds 10]
"""

from __future__ import annotations

import argparse
import asyncio
import os
import resource
import statistics
import sys
import tempfile
import time
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

from mini_agent.core.contracts import ToolCall
from mini_agent.tools.host import ToolHost
from mini_agent.tools.host_main import Workspace
from mini_agent.tools.reflect import reflect, render_result
from mini_agent.tools.registry import ToolRegistry

SOURCE = '''
def count_words(text: str, min_length: int = 1, unique: bool = False) -> dict[str, int]:
    """Count the words of a text."""
    words = [w for w in text.split() if len(w) >= min_length]
    return {"words": len(set(words) if unique else words)}
'''
ARGUMENTS = {"text": "the quick brown fox jumps over the lazy dog", "min_length": "3", "unique": "true"}


class Measured:
    """One measured path: its latency samples and the CPU it used (ours plus its host's)."""

    def __init__(
        self, label: str, call: Callable[[], Awaitable[Any]], host_pids: Callable[[], list[int]]
    ) -> None:
        self.label = label
        self.call = call
        self.host_pids = host_pids
        self.samples: list[int] = []
        self.cpu_sec = 0.0

    async def round(self, calls: int) -> None:
        own, hosts = _own_cpu(), _cpu_of(self.host_pids())
        for _ in range(calls):
            start = time.perf_counter_ns()
            await self.call()
            self.samples.append(time.perf_counter_ns() - start)
        self.cpu_sec += _own_cpu() - own + _cpu_of(self.host_pids()) - hosts


async def in_process(tool_call: Callable[[], str]) -> str:
    return tool_call()


async def main(calls: int, rounds: int) -> None:
    with tempfile.TemporaryDirectory() as folder:
        root = Path(folder)
        path = root / "words.py"
        path.write_text(SOURCE, encoding="utf-8")
        tool = reflect(Workspace().load(str(path)).count_words)
        expected = render_result(tool.invoke(ARGUMENTS))

        host = ToolHost(root)
        registry = ToolRegistry(root)
        await registry.register_file("words.py")
        tool_call = ToolCall("c1", "count_words", ARGUMENTS)

        async def via_host() -> str:
            result = await host.call(
                path, "count_words", tool_name="count_words", arguments=ARGUMENTS, timeout=30
            )
            return result.output

        async def via_registry() -> str:
            return (await registry.execute(tool_call, session_id="bench")).output

        paths = [
            Measured(
                "in process (validate+call+render)",
                lambda: in_process(lambda: render_result(tool.invoke(ARGUMENTS))),
                list,
            ),
            Measured("ToolHost.call (subprocess)", via_host, lambda: host.pids),
            Measured("ToolRegistry.execute", via_registry, lambda: registry._host.pids),
        ]
        for measured in paths:
            assert await measured.call() == expected
            for _ in range(200):  # warm-up
                await measured.call()
        for _ in range(rounds):
            for measured in paths:
                await measured.round(calls // rounds)
        await host.aclose()
        await registry.aclose()

    base = statistics.median(paths[0].samples) / 1000
    print(
        f"{calls} calls per path in {rounds} interleaved rounds, Python {sys.version.split()[0]}, "
        f"load average {os.getloadavg()[0]:.1f} on {os.cpu_count()} CPUs"
    )
    print(f"{'path':<36}{'p50 µs':>9}{'p99 µs':>10}{'added p50':>11}{'CPU µs/call':>13}")
    for measured in paths:
        cuts = statistics.quantiles(measured.samples, n=100, method="inclusive")
        p50, p99 = cuts[49] / 1000, cuts[98] / 1000
        cpu = measured.cpu_sec / len(measured.samples) * 1e6
        print(f"{measured.label:<36}{p50:>9.1f}{p99:>10.1f}{p50 - base:>11.1f}{cpu:>13.1f}")
    print("target: the host adds < 300 µs at p50")


def _own_cpu() -> float:
    usage = resource.getrusage(resource.RUSAGE_SELF)
    return usage.ru_utime + usage.ru_stime


def _cpu_of(pids: list[int]) -> float:
    total = 0.0
    for pid in pids:
        fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
        total += (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")
    return total


if __name__ == "__main__":
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--calls", type=int, default=3000)
    parser.add_argument("--rounds", type=int, default=10)
    options = parser.parse_args()
    asyncio.run(main(options.calls, options.rounds))
