"""The context budget over a long session, through the whole daemon.

    PYTHONPATH=server:clients/python python bench/bench_context.py [--steps 100] [--window 4096]

A session of STEPS model turns (a ~500-byte observation each, then the answer) against the scripted
model server with a context limit of WINDOW tokens, which refuses a longer request as vLLM does.

1. Prefix-cache ratio: cached over prompt tokens of the session's requests, measured (the scripted
   server's `cached_tokens`, the longest prefix shared with any earlier request or request plus reply)
   against the best possible with the same compactions: a request that follows a compaction can at
   best reuse the tokens it shares with the request before it (the system prompt and the task); any
   other request everything the request before it sent and got back. Target: measured == best.
2. The cost of one compaction: the tokens prefilled again at the request that follows it (its miss),
   the summary request's tokens when the model wrote one, and the daemon-side time of the compacting
   step against an ordinary step (medians; timings on a shared machine are noisy).
"""

from __future__ import annotations

import argparse
import asyncio
import statistics
import sys
import tempfile
import time
from itertools import pairwise
from pathlib import Path
from typing import Any

from mini_agent.core.budget import SUMMARY_PROMPT
from mini_agent.llm import react
from mini_agent.scripted import ReplayServer
from mini_agent.scripted.text import prompt_tokens
from mini_agent_client import AgentClient

NOTE = '''
def note(i: int) -> str:
    """About 500 bytes of ordinary text about step i."""
    return (f"Step {i}: " + "the build ran, the tests passed and the cache was warm; " * 9)[:500]
'''


def is_summary(body: dict[str, Any]) -> bool:
    return str(body["messages"][0]["content"]).startswith(SUMMARY_PROMPT)


def common_prefix(a: list[str], b: list[str]) -> int:
    n = 0
    for x, y in zip(a, b, strict=False):
        if x != y:
            break
        n += 1
    return n


async def session(root: Path, steps: int, window: int) -> tuple[ReplayServer, list[float]]:
    turns = 0

    def model(body: dict[str, Any]) -> dict[str, Any]:
        nonlocal turns
        if is_summary(body):
            return {"content": "Notes were taken at every step so far; all builds passed."}
        turns += 1
        if turns < steps:
            return {"content": react.render_action("Next note.", "note", {"i": turns})}
        return {"content": react.render_final("Done.", f"{steps - 1} notes taken")}

    (root / "notes.py").write_text(NOTE)
    step_ms: list[float] = []
    async with (
        ReplayServer({"context_limit": window}, responder=model) as server,
        AgentClient.spawn(
            root=root,
            options={"llm": {"baseUrl": server.base_url}, "store": {"enabled": False}, "maxSteps": steps},
        ) as client,
    ):
        await client.register_tool("notes.py")
        session_id = await client.start_session("Take the notes, one per step.")
        while True:
            started = time.perf_counter()
            result = await client.step(session_id)
            step_ms.append((time.perf_counter() - started) * 1000)
            if result["stopReason"] is not None:
                break
    return server, step_ms


def figures(server: ReplayServer, step_ms: list[float]) -> None:
    refused = sum(1 for e in server.exchanges if e.status != 200)
    main = [e for e in server.exchanges if e.status == 200 and not is_summary(e.body)]
    summaries = [e for e in server.exchanges if e.status == 200 and is_summary(e.body)]
    compacted: list[int] = []  # indexes of requests whose history was compacted
    best = main[0].cached_tokens if main else 0
    for k, (before, after) in enumerate(pairwise(main), start=1):
        extends = after.body["messages"][: len(before.body["messages"])] == before.body["messages"]
        if extends:
            best += min(after.prompt_tokens, before.prompt_tokens + before.completion_tokens)
        else:
            compacted.append(k)
            best += common_prefix(prompt_tokens(after.body), prompt_tokens(before.body))
    prompt = sum(e.prompt_tokens for e in main)
    measured = sum(e.cached_tokens for e in main)
    print(f"requests: {len(main)} model turns, {len(summaries)} summary requests, {refused} refused")
    print(f"compactions: {len(compacted)} (at requests {compacted})\n")
    print("| prompt tokens | cached (measured) | cached (best with these compactions) | ratio | best ratio |")
    print("|---|---|---|---|---|")
    print(f"| {prompt} | {measured} | {best} | {measured / prompt:.3f} | {best / prompt:.3f} |\n")
    if not compacted:
        return
    misses = [main[k].prompt_tokens - main[k].cached_tokens for k in compacted]
    ordinary = [e.prompt_tokens - e.cached_tokens for k, e in enumerate(main) if k and k not in compacted]
    summary_tokens = [e.prompt_tokens + e.completion_tokens for e in summaries]
    slow = [step_ms[k] for k in compacted if k < len(step_ms)]
    usual = [ms for k, ms in enumerate(step_ms) if k not in compacted and k > 0]
    print("| cost of one compaction | median |")
    print("|---|---|")
    print(f"| tokens prefilled again at the compacted request | {statistics.median(misses):.0f} |")
    print(f"| (an ordinary request's miss) | {statistics.median(ordinary):.0f} |")
    if summary_tokens:
        print(f"| summary request, prompt + reply tokens | {statistics.median(summary_tokens):.0f} |")
    print(f"| step with a compaction, ms (daemon + scripted server) | {statistics.median(slow):.1f} |")
    print(f"| ordinary step, ms | {statistics.median(usual):.1f} |")


async def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--steps", type=int, default=100)
    parser.add_argument("--window", type=int, default=4096)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp) / "ws"
        root.mkdir()
        version = sys.version.split()[0]
        print(f"# context bench: {args.steps} steps, {args.window}-token window (python {version})\n")
        server, step_ms = await session(root, args.steps, args.window)
        figures(server, step_ms)


if __name__ == "__main__":
    asyncio.run(main())
