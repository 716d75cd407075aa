"""What a structured result costs on `mini-agent mcp`: the SDK's own client calls a function with a
return annotation (`outputSchema`, `structuredContent` beside the text) and the same function without
one (text only), alternating in rounds, over stdio.

    PYTHONPATH=server:clients/python python bench/bench_mcp_door.py [--calls 200] [--rounds 5] [--tree DIR]

`--tree DIR` serves from another checkout (its `server` and `clients/python`), for a side-by-side run
against an older `mini-agent mcp` (one that still needs `--tools FILE`: give `--old-cli`).
"""

from __future__ import annotations

import argparse
import asyncio
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path

from mcp.client.session import ClientSession
from mcp.client.stdio import StdioServerParameters, stdio_client

SOURCE = '''
def typed(text: str) -> int:
    """Count the words of a text."""
    return len(text.split())


def untyped(text: str):  # type: ignore[no-untyped-def]
    """Count the words of a text."""
    return len(text.split())
'''
ARGUMENTS = {"text": "the quick brown fox jumps over the lazy dog"}


async def main(calls: int, rounds: int, tree: Path | None, old_cli: bool) -> None:
    with tempfile.TemporaryDirectory() as folder:
        (Path(folder) / "bench_tools.py").write_text(SOURCE)
        files = ["--tools", "bench_tools.py"] if old_cli else ["bench_tools.py"]
        env = dict(os.environ)
        if tree is not None:
            env["PYTHONPATH"] = f"{tree / 'server'}{os.pathsep}{tree / 'clients' / 'python'}"
        params = StdioServerParameters(
            command=sys.executable,
            args=["-m", "mini_agent.cli", "mcp", "--root", folder, *files],
            env=env,
        )
        samples: dict[str, list[int]] = {"typed": [], "untyped": []}
        async with stdio_client(params) as (read, write), ClientSession(read, write) as session:
            await session.initialize()
            await session.list_tools()
            for name in samples:  # warm up
                await session.call_tool(name, ARGUMENTS)
            for _ in range(rounds):
                for name, values in samples.items():
                    for _ in range(calls):
                        start = time.perf_counter_ns()
                        result = await session.call_tool(name, ARGUMENTS)
                        values.append(time.perf_counter_ns() - start)
                        assert not result.is_error, result
    print(f"{calls * rounds} calls per tool, µs")
    print(f"{'tool':<10}{'p50':>8}{'p99':>8}")
    for name, values in samples.items():
        cuts = statistics.quantiles(values, n=100)
        print(f"{name:<10}{cuts[49] / 1000:>8.0f}{cuts[98] / 1000:>8.0f}")


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--calls", type=int, default=200)
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--tree", type=Path)
    parser.add_argument("--old-cli", action="store_true")
    options = parser.parse_args()
    asyncio.run(main(options.calls, options.rounds, options.tree, options.old_cli))
