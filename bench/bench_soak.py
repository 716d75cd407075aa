"""A long soak of the real daemon: its RSS per 1,000 agent steps, and after the sessions are deleted;
then the same again, to see whether the memory the first round freed is used again.

    python bench/bench_soak.py                   # 5,000 steps, 20 per session
    python bench/bench_soak.py --trace           # also tracemalloc in the daemon (slower)
    python bench/bench_soak.py --store off       # sessions kept in memory only

The daemon runs over stdio against the replayed model server of bench_peers (no latency; each
session calls `add` 19 times, then answers). It is started through this file (`--role daemon`) so
that SIGUSR1 makes it write a probe: RSS as is, after `gc.collect()` and after glibc's
`malloc_trim(0)`, the count of live objects the collector tracks (not the heap the daemon froze at
start: see eventloop.py) and the most common types, and with `--trace` the
tracemalloc lines that grew most since the first probe. RSS that a collection or a trim gives back
is not a leak; live objects or traced bytes that grow with the steps are.
"""

from __future__ import annotations

import argparse
import asyncio
import collections
import ctypes
import gc
import json
import os
import signal
import sys
import tracemalloc
from pathlib import Path
from typing import Any

from bench_peers import EPISODE_STEPS, daemon_env, model_server, rss_mib, workspace

TRACE_FRAMES = 8
# The probe's own allocations: tracemalloc's, and the source lines it reads to format tracebacks.
PROBE_NOISE = [tracemalloc.Filter(False, tracemalloc.__file__), tracemalloc.Filter(False, "*/linecache.py")]


def role_daemon(report: Path) -> None:
    """The daemon, plus a SIGUSR1 probe that appends one JSON line to `report`."""
    first: list[tracemalloc.Snapshot] = []

    def probe(signum: int, frame: Any) -> None:
        pid = os.getpid()
        line: dict[str, Any] = {"rss": rss_mib(pid), "collected": gc.collect()}
        line["rss_after_gc"] = rss_mib(pid)
        ctypes.CDLL("libc.so.6").malloc_trim(0)
        line["rss_after_trim"] = rss_mib(pid)
        objects = gc.get_objects()
        line["objects"] = len(objects)
        line["types"] = collections.Counter(type(o).__qualname__ for o in objects).most_common(12)
        del objects
        if tracemalloc.is_tracing():
            snapshot = tracemalloc.take_snapshot().filter_traces(PROBE_NOISE)
            line["traced_mib"] = sum(stat.size for stat in snapshot.statistics("filename")) / 2**20
            if first:
                grown = snapshot.compare_to(first[0], "traceback")[:8]
                line["grown"] = [
                    {
                        "kib": stat.size_diff / 1024,
                        "count": stat.count_diff,
                        "where": stat.traceback.format()[-6:],
                    }
                    for stat in grown
                ]
            else:
                first.append(snapshot)
        with report.open("a") as out:
            out.write(json.dumps(line) + "\n")

    if os.environ.get("SOAK_TRACE"):
        tracemalloc.start(TRACE_FRAMES)
    signal.signal(signal.SIGUSR1, probe)
    from mini_agent.lsp.boot import main

    main()


async def take_probe(pid: int, report: Path) -> dict[str, Any]:
    before = len(report.read_text().splitlines()) if report.exists() else 0
    os.kill(pid, signal.SIGUSR1)
    while not report.exists() or len(lines := report.read_text().splitlines()) == before:
        await asyncio.sleep(0.05)
    probe: dict[str, Any] = json.loads(lines[-1])
    return probe


def show(label: str, rss: float, probe: dict[str, Any] | None) -> None:
    if probe is None:
        print(f"| {label} | {rss:.1f} | | | | |", flush=True)
        return
    traced = f"{probe['traced_mib']:.2f}" if "traced_mib" in probe else ""
    print(
        f"| {label} | {rss:.1f} | {probe['rss_after_gc']:.1f} | {probe['rss_after_trim']:.1f} "
        f"| {probe['objects']} | {traced} |",
        flush=True,
    )


async def soak(steps: int, store: bool, trace: bool, every: int) -> None:
    from mini_agent_client import AgentClient

    report = workspace() / "probes.jsonl"
    env = {**daemon_env(), **({"SOAK_TRACE": "1"} if trace else {})}
    command = [sys.executable, __file__, "--role", "daemon", "--report", str(report)]
    options = {"llm": {"baseUrl": "", "model": "replay", "toolMode": "native"}, "store": {"enabled": store}}
    async with model_server(0.0, EPISODE_STEPS) as base_url:
        options["llm"]["baseUrl"] = base_url  # type: ignore[index]
        async with AgentClient.spawn(root=workspace(), options=options, env=env, command=command) as client:
            await client.register_tool("bench_tools.py", function="add")
            pid = client.process.pid
            print(
                f"steps per session: {EPISODE_STEPS}; store: {'on' if store else 'off'}; "
                f"tracemalloc: {'on' if trace else 'off'}\n"
            )
            print("| after | RSS MiB | after gc.collect | after malloc_trim | live objects | traced MiB |")
            print("|---|---|---|---|---|---|")
            sessions: list[str] = []
            done = 0

            async def run_session() -> None:
                nonlocal done
                session_id = await client.start_session("Add up.")
                result = await client.call("agent/run", {"sessionId": session_id})
                assert result["steps"] == EPISODE_STEPS, result
                sessions.append(session_id)
                done += EPISODE_STEPS

            await run_session()  # warm-up: imports, the tool host, caches
            show("warm-up (1 session)", rss_mib(pid), await take_probe(pid, report))
            growth = []
            for rounds in (1, 2):  # the second round shows whether the memory freed is used again
                done, start = 0, rss_mib(pid)
                while done < steps:
                    await run_session()
                    if done % every == 0:
                        show(f"round {rounds}: {done} steps", rss_mib(pid), await take_probe(pid, report))
                growth.append(rss_mib(pid) - start)
                for session_id in sessions:
                    await client.call("agent/deleteSession", {"sessionId": session_id})
                label = f"round {rounds}: deleting {len(sessions)} sessions"
                show(label, rss_mib(pid), await take_probe(pid, report))
                sessions.clear()
            probes = [json.loads(line) for line in report.read_text().splitlines()]
    for rounds, grown in enumerate(growth, 1):
        print(
            f"\nround {rounds}: RSS grew {grown:.1f} MiB over {steps} steps "
            f"({1000 * grown / steps:.2f} MiB per 1,000 steps)",
            end="",
        )
    last, before_delete = probes[-1], probes[-2]
    print(
        f"\nlive objects: warm-up {probes[0]['objects']}, "
        f"before the last deletion {before_delete['objects']}, after {last['objects']}"
    )
    print("most common types before the last deletion:", before_delete["types"][:8])
    print("most common types after it:", last["types"][:8])
    for label, probe in (("before deleting", before_delete), ("after deleting", last)):
        for stat in probe.get("grown", [])[:5]:
            print(f"\ngrown since warm-up, {label}: {stat['kib']:+.1f} KiB in {stat['count']:+d} blocks")
            print("".join(f"    {frame}\n" for frame in stat["where"]), end="")


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--role", choices=["daemon"])
    parser.add_argument("--report", type=Path)
    parser.add_argument("--steps", type=int, default=5000)
    parser.add_argument("--every", type=int, default=1000)
    parser.add_argument("--store", choices=["on", "off"], default="on")
    parser.add_argument("--trace", action="store_true")
    args = parser.parse_args()
    if args.role == "daemon":
        role_daemon(args.report)
        return
    if args.every % EPISODE_STEPS:
        parser.error(f"--every must be a multiple of {EPISODE_STEPS}")
    asyncio.run(soak(args.steps, args.store == "on", args.trace, args.every))


if __name__ == "__main__":
    main()
