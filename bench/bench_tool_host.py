"""What running a tool in the host subprocess costs, per call, over calling it in process.

Both paths validate the same arguments through the same pydantic model and render the result the
same way; the host path adds the pipe round trip, the fd 1/2 redirection and the asyncio wake-up.
Target: the host adds under 300 µs at p50.

    PYTHONPATH=server python bench/bench_tool_host.py [--calls 2000]
"""

from __future__ import annotations

import argparse
import asyncio
import statistics
import sys
import tempfile
import time
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

from mini_agent.contracts import ToolCall
from mini_agent.tools import ToolRegistry
from mini_agent.tools.host import ToolHost
from mini_agent.tools.host_main import Workspace
from mini_agent.tools.reflect import reflect, render_result

SOURCE = '''
def count_words(text: str, min_length: int = 1, unique: bool = False) -> dict[str, int]:
    """Count the words of a text."""
    words = [w for w in text.split() if len(w) >= min_length]
    return {"words": len(set(words) if unique else words)}
'''
ARGUMENTS = {"text": "the quick brown fox jumps over the lazy dog", "min_length": "3", "unique": "true"}


def percentiles(samples_ns: list[int]) -> tuple[float, float]:
    cuts = statistics.quantiles(samples_ns, n=100, method="inclusive")
    return cuts[49] / 1000, cuts[98] / 1000


def measure_sync(fn: Callable[[], Any], calls: int) -> list[int]:
    samples = []
    for _ in range(calls):
        start = time.perf_counter_ns()
        fn()
        samples.append(time.perf_counter_ns() - start)
    return samples


async def measure_async(fn: Callable[[], Awaitable[Any]], calls: int) -> list[int]:
    samples = []
    for _ in range(calls):
        start = time.perf_counter_ns()
        await fn()
        samples.append(time.perf_counter_ns() - start)
    return samples


async def main(calls: int) -> None:
    with tempfile.TemporaryDirectory() as folder:
        root = Path(folder)
        path = root / "words.py"
        path.write_text(SOURCE, encoding="utf-8")

        tool = reflect(Workspace().load(str(path)).count_words)
        expected = render_result(tool.invoke(ARGUMENTS))
        in_process = measure_sync(lambda: render_result(tool.invoke(ARGUMENTS)), calls)

        host = ToolHost(root)
        call = lambda: host.call(
            path, "count_words", tool_name="count_words", arguments=ARGUMENTS, timeout=30
        )  # noqa: E731
        assert (await call()).output == expected
        await measure_async(call, 200)  # warm-up
        via_host = await measure_async(call, calls)
        await host.aclose()

        registry = ToolRegistry(root)
        await registry.register_file("words.py")
        tool_call = ToolCall("c1", "count_words", ARGUMENTS)
        execute = lambda: registry.execute(tool_call, session_id="bench")  # noqa: E731
        assert (await execute()).output == expected
        await measure_async(execute, 200)
        via_registry = await measure_async(execute, calls)
        await registry.aclose()

    base_p50, base_p99 = percentiles(in_process)
    print(f"{calls} calls each, Python {sys.version.split()[0]}")
    print(f"{'path':<34}{'p50 µs':>10}{'p99 µs':>10}{'added p50 µs':>15}")
    for label, samples in [
        ("in process (validate+call+render)", in_process),
        ("ToolHost.call (subprocess)", via_host),
        ("ToolRegistry.execute", via_registry),
    ]:
        p50, p99 = percentiles(samples)
        print(f"{label:<34}{p50:>10.1f}{p99:>10.1f}{p50 - base_p50:>15.1f}")
    print(f"target: the host adds < 300 µs at p50 (in-process p99 {base_p99:.1f} µs)")


if __name__ == "__main__":
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--calls", type=int, default=2000)
    asyncio.run(main(parser.parse_args().calls))
