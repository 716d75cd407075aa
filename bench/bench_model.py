"""The model side through the whole daemon: prefix-cache hits and streaming latency.

    PYTHONPATH=server:clients/python python bench/bench_model.py

1. Prefix-cache hit ratio over a 20-step session (react and native) against the replay server, whose
   cached_tokens is the longest prefix a prefix-caching server could reuse. The theoretical maximum for
   request k is everything request k-1 sent and got back (its prompt plus its completion): only the new
   observation can be a miss. Target: measured == maximum.
2. Latency from the replay server writing the first text chunk to the client receiving the first
   agent_thought_chunk notification (daemon: SSE parse, stop-word scan, JSON-RPC notify over stdio).
   Both stamps are time.monotonic() on one machine. Target: under 5 ms on loopback.
"""

from __future__ import annotations

import asyncio
import json
import shutil
import statistics
import sys
import tempfile
import time
from itertools import pairwise
from pathlib import Path
from typing import Any

from mini_agent.scripted import ReplayServer
from mini_agent_client import AgentClient

ROOT = Path(__file__).resolve().parents[1]
EXAMPLE = ROOT / "server" / "mini_agent" / "examples" / "workspace"
STEPS = 20


def turns(mode: str) -> list[dict[str, Any]]:
    names = ["schema.py", "tools.py", "metrics.py"]
    if mode == "react":
        out = [
            {
                "content": f"Thought: counting step {i}.\nAction: count_file_lines\n"
                f"Action Input: {json.dumps({'file_path': names[i % 3]})}"
            }
            for i in range(STEPS - 1)
        ]
    else:
        out = [
            {
                "content": f"counting step {i}",
                "tool_calls": [{"name": "count_file_lines", "arguments": {"file_path": names[i % 3]}}],
            }
            for i in range(STEPS - 1)
        ]
    return [*out, {"content": "Final Answer: counted"}]


async def cache_ratio(root: Path, mode: str) -> tuple[int, int, int]:
    async with (
        ReplayServer(turns(mode)) as model,
        AgentClient.spawn(
            root=root,
            options={
                "llm": {"baseUrl": model.base_url, "toolMode": mode},
                "store": {"enabled": False},
                "maxSteps": STEPS + 5,
            },
        ) as client,
    ):
        await client.register_tool("tools.py")
        async for _ in client.run("count lines, many times"):
            pass
        exchanges = model.exchanges
    prompt = sum(e.prompt_tokens for e in exchanges)
    measured = sum(e.cached_tokens for e in exchanges)
    maximum = sum(
        min(current.prompt_tokens, previous.prompt_tokens + previous.completion_tokens)
        for previous, current in pairwise(exchanges)
    )
    return prompt, measured, maximum


async def first_chunk_latency(root: Path, rounds: int) -> list[float]:
    script = [
        {"chunks": ["Thought: first piece", " then the rest\nFinal Answer: ok"], "chunk_delay": 0.2}
    ] * rounds
    samples: list[float] = []
    async with (
        ReplayServer(script) as model,
        AgentClient.spawn(
            root=root, options={"llm": {"baseUrl": model.base_url}, "store": {"enabled": False}}
        ) as client,
    ):
        for _ in range(rounds):
            first: float | None = None
            async for event in client.run("say something"):
                if event.kind == "agent_thought_chunk" and first is None:
                    first = time.monotonic()
            exchange = model.exchanges[-1]
            assert first is not None and exchange.first_text is not None
            samples.append((first - exchange.first_text) * 1000)
    return samples


async def main() -> None:
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp) / "ws"
        shutil.copytree(EXAMPLE, root, ignore=shutil.ignore_patterns("__pycache__"))
        print(f"# model-side bench ({sys.platform}, python {sys.version.split()[0]})\n")
        print("| mode | prompt tokens | cached (measured) | cached (theoretical max) | hit ratio | of max |")
        print("|---|---|---|---|---|---|")
        for mode in ("react", "native"):
            prompt, measured, maximum = await cache_ratio(root, mode)
            print(
                f"| {mode} | {prompt} | {measured} | {maximum} | {measured / prompt:.3f} | "
                f"{measured / maximum:.3f} |"
            )
        samples = await first_chunk_latency(root, 30)
        samples.sort()
        p50 = statistics.median(samples)
        p90 = samples[int(len(samples) * 0.9)]
        print("\n| first text chunk → first agent_thought_chunk | p50 ms | p90 ms | max ms |")
        print("|---|---|---|---|")
        print(f"| replay server → daemon → client (stdio) | {p50:.2f} | {p90:.2f} | {samples[-1]:.2f} |")


if __name__ == "__main__":
    asyncio.run(main())
