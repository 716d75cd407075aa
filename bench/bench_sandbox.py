"""What the kernel sandbox costs: a tool host's start (with its first call) and a call on a warm host,
confined (`tools/sandbox.py`: no new privileges, user + mount + network namespaces, Landlock) and not.

The two settings are measured in interleaved rounds so that they share the machine's load; each figure
is the median over every sample of its setting.

    PYTHONPATH=server python bench/bench_sandbox.py [--starts 20] [--calls 500]
"""

from __future__ import annotations

import argparse
import asyncio
import statistics
import tempfile
import time
from pathlib import Path

from mini_agent.tools import sandbox
from mini_agent.tools.host import ToolHost

SOURCE = '''
def echo(text: str) -> str:
    """Say it back."""
    return text
'''


async def start_and_call(root: Path, *, confine: bool) -> float:
    """Seconds from a fresh host's start to its first call's result."""
    host = ToolHost(root, confine=confine)
    began = time.perf_counter()
    try:
        arguments = {"text": "x"}
        result = await host.call(root / "tools.py", "echo", tool_name="echo", arguments=arguments, timeout=30)
        assert not result.is_error, result.output
        return time.perf_counter() - began
    finally:
        await host.aclose()


async def warm_calls(root: Path, calls: int, *, confine: bool) -> list[float]:
    host = ToolHost(root, confine=confine, max_hosts=1)
    path = root / "tools.py"
    try:
        await host.call(path, "echo", tool_name="echo", arguments={"text": "warm"}, timeout=30)
        samples = []
        for _ in range(calls):
            began = time.perf_counter()
            await host.call(path, "echo", tool_name="echo", arguments={"text": "x"}, timeout=30)
            samples.append(time.perf_counter() - began)
        return samples
    finally:
        await host.aclose()


async def main(starts: int, calls: int) -> None:
    missing = sandbox.available()
    if missing is not None:
        raise SystemExit(f"bench_sandbox: {missing}")
    print(f"Landlock ABI {sandbox.landlock_abi()}")
    with tempfile.TemporaryDirectory(prefix="bench-sandbox-") as tmp:
        root = Path(tmp)
        (root / "tools.py").write_text(SOURCE)
        start: dict[bool, list[float]] = {True: [], False: []}
        call: dict[bool, list[float]] = {True: [], False: []}
        for _ in range(starts):
            for confine in (False, True):
                start[confine].append(await start_and_call(root, confine=confine))
        for _ in range(5):
            for confine in (False, True):
                call[confine] += await warm_calls(root, calls // 5, confine=confine)
    print("| | unconfined | confined | added |")
    print("|---|---|---|---|")
    for name, samples, unit, scale in (("host start + first call", start, "ms", 1e3),
                                       ("call on a warm host", call, "µs", 1e6)):  # fmt: skip
        off, on = statistics.median(samples[False]) * scale, statistics.median(samples[True]) * scale
        label = f"{name} (median of {len(samples[True])})"
        print(f"| {label} | {off:.0f} {unit} | {on:.0f} {unit} | {on - off:+.0f} {unit} |")


if __name__ == "__main__":
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--starts", type=int, default=20)
    parser.add_argument("--calls", type=int, default=500)
    args = parser.parse_args()
    asyncio.run(main(args.starts, args.calls))
