"""What one MCP tool call adds over a workspace tool call, through the daemon's tool registry.

Both paths run the same function in a tool host: the workspace path is `ToolRegistry.execute` on a
registered file; the MCP path is the same `execute` routed to an MCP server, which is
`mini-agent mcp --tools FILE` serving that file. So the difference is the MCP hop: our argument
validation, the SDK client, newline-delimited JSON over the server's stdin/stdout, and the SDK server.
A third path reaches the same file served over Streamable HTTP (`mini-agent mcp --http`), so the
difference between the two MCP paths is the transport. The paths alternate in rounds so that they
share the machine's load. `--result-mb 10 20 40` also times
one MCP call answering that many megabytes (reading a result must stay linear in its size).

    PYTHONPATH=server:clients/python python bench/bench_mcp.py [--calls 300] [--rounds 5] [--result-mb N …]
"""

from __future__ import annotations

import argparse
import asyncio
import re
import statistics
import sys
import tempfile
import time
from pathlib import Path

from mini_agent.core.asking import Nobody
from mini_agent.core.contracts import ToolCall
from mini_agent.tools.mcp import McpSource
from mini_agent.tools.mcp.config import HttpMcpServer, NameValue, StdioMcpServer
from mini_agent.tools.registry import ToolRegistry

SOURCE = '''
def count_words(text: str, min_length: int = 1) -> int:
    """Count the words of a text."""
    return len([w for w in text.split() if len(w) >= min_length])

def make_text(size: int) -> str:
    """A text of `size` characters."""
    return "x" * size
'''
ARGUMENTS = {"text": "the quick brown fox jumps over the lazy dog", "min_length": 3}


async def main(calls: int, rounds: int, result_mb: list[int]) -> None:
    with tempfile.TemporaryDirectory() as folder:
        root = Path(folder)
        (root / "bench_tools.py").write_text(SOURCE)
        registry = ToolRegistry(root)
        source = McpSource(
            root,
            timeout_sec=30.0,
            max_output_bytes=65536,
            reserved=registry.own_names,
            report=lambda session, message: print(message, file=sys.stderr),
            tools_changed=lambda: None,
            person=Nobody(),
        )
        registry.attach(source)
        largest = str(max([0, *result_mb]) * 1_000_000 + 1)  # the MCP server sends a result whole
        await registry.register_file("bench_tools.py")
        server = StdioMcpServer(
            name="ws",
            command=sys.executable,
            args=[
                "-m",
                "mini_agent.cli",
                "mcp",
                "--tools",
                "bench_tools.py",
                "--max-output-bytes",
                largest,
            ],
            env=[NameValue(name="PYTHONPATH", value=":".join(sys.path))],
        )
        http, url = await _serve_http(root)
        web = HttpMcpServer(type="http", name="wh", url=url)
        await source.acquire("bench", [server, web], print)
        paths = {"workspace": "count_words", "mcp": "ws_count_words", "mcp-http": "wh_count_words"}
        samples: dict[str, list[int]] = {label: [] for label in paths}
        for name in paths.values():  # warm both up
            observation = await registry.execute(ToolCall("w", name, ARGUMENTS), session_id="bench")
            assert observation.output == "9" and not observation.is_error, observation.output
        for _ in range(rounds):
            for label, name in paths.items():
                call = ToolCall("c", name, ARGUMENTS)
                for _ in range(calls):
                    start = time.perf_counter_ns()
                    await registry.execute(call, session_id="bench")
                    samples[label].append(time.perf_counter_ns() - start)
        large = {mb: await _large_result(registry, mb) for mb in result_mb}
        await source.aclose()
        await registry.aclose()
        http.terminate()
        await http.wait()
    print(f"{calls * rounds} calls per path, µs")
    print(f"{'path':<14}{'p50':>10}{'p99':>10}")
    figures = {label: _percentiles(values) for label, values in samples.items()}
    for label, (p50, p99) in figures.items():
        print(f"{label:<14}{p50:>10.0f}{p99:>10.0f}")
    for label in ("mcp", "mcp-http"):
        added = [m - w for m, w in zip(figures[label], figures["workspace"], strict=True)]
        print(f"{label + ' adds':<14}{added[0]:>10.0f}{added[1]:>10.0f}")
    for mb, seconds in large.items():
        print(f"one MCP result of {mb} MB: {seconds:.2f} s")


async def _serve_http(root: Path) -> tuple[asyncio.subprocess.Process, str]:
    """`mini-agent mcp --http` on a free loopback port, and its URL (read off its stderr)."""
    command = ["-m", "mini_agent.cli", "mcp", "--root", str(root), "--http", "127.0.0.1:0"]
    process = await asyncio.create_subprocess_exec(
        sys.executable,
        *command,
        "bench_tools.py",
        stdout=asyncio.subprocess.DEVNULL,
        stderr=asyncio.subprocess.PIPE,
    )
    assert process.stderr is not None
    async with asyncio.timeout(60):
        while line := await process.stderr.readline():
            if found := re.search(r"serving on (http://\S+)", line.decode()):
                _tasks.add(asyncio.create_task(process.stderr.read()))  # keep its pipe from filling
                return process, found.group(1)
    raise RuntimeError("mini-agent mcp --http did not say where it serves")


_tasks: set[asyncio.Task[bytes]] = set()


async def _large_result(registry: ToolRegistry, mb: int) -> float:
    call = ToolCall("big", "ws_make_text", {"size": mb * 1_000_000})
    start = time.perf_counter()
    observation = await registry.execute(call, session_id="bench")
    assert not observation.is_error, observation.output[-300:]
    return time.perf_counter() - start


def _percentiles(values: list[int]) -> tuple[float, float]:
    cuts = statistics.quantiles(values, n=100)
    return cuts[49] / 1000, cuts[98] / 1000


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--calls", type=int, default=300)
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--result-mb", type=int, nargs="*", default=[])
    options = parser.parse_args()
    asyncio.run(main(options.calls, options.rounds, options.result_mb))
