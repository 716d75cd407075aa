"""RSS of `mini-agent mcp --http` under a flood of `initialize` requests from one local client.

    PYTHONPATH=server:clients/python python bench/bench_mcp_http_flood.py [--sessions 6000] \
        [--concurrency 8] [--tree DIR] [-- EXTRA MCP FLAGS, e.g. --max-sessions 256]

Each request opens a new session (no `mcp-session-id`); the client never closes one, as a careless or
hostile local process would not. The server's RSS is read from /proc/PID/status (VmRSS) before the
flood, every 1,000 requests, and after; the answers are counted by HTTP status. `--tree DIR` serves
from another checkout (its `server` and `clients/python`), to compare with an older tree.
"""

from __future__ import annotations

import argparse
import asyncio
import collections
import os
import re
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

import httpx2

SOURCE = '''
def halve(n: int) -> int:
    """Half of n, rounded down."""
    return n // 2
'''
INITIALIZE = {
    "jsonrpc": "2.0",
    "id": 1,
    "method": "initialize",
    "params": {
        "protocolVersion": "2025-11-25",
        "capabilities": {},
        "clientInfo": {"name": "flood", "version": "1"},
    },
}
HEADERS = {"Accept": "application/json, text/event-stream"}
URL = re.compile(r"serving on (http://\S+)")
START_TIMEOUT_SEC = 60.0


def rss_mib(pid: int) -> float:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) / 1024
    raise RuntimeError(f"no VmRSS for {pid}")


def start(folder: str, tree: Path | None, extra: list[str]) -> tuple[subprocess.Popen[bytes], str]:
    env = dict(os.environ)
    if tree is not None:
        env["PYTHONPATH"] = f"{tree / 'server'}{os.pathsep}{tree / 'clients' / 'python'}"
    command = [sys.executable, "-m", "mini_agent.cli", "mcp", "--root", folder]
    command += ["--http", "127.0.0.1:0"]
    process = subprocess.Popen(
        [*command, *extra, "bench_tools.py"], stdin=subprocess.DEVNULL, stderr=subprocess.PIPE, env=env
    )
    assert process.stderr is not None
    deadline = time.monotonic() + START_TIMEOUT_SEC
    seen = b""
    while time.monotonic() < deadline:
        line = process.stderr.readline()
        if not line:
            break
        seen += line
        if found := URL.search(line.decode()):
            # drained from here on, so a chatty server never blocks on a full pipe
            threading.Thread(target=process.stderr.read, daemon=True).start()
            return process, found.group(1)
    process.kill()
    raise RuntimeError(f"mini-agent mcp --http did not start: {seen.decode()}")


async def flood(url: str, sessions: int, concurrency: int, pid: int) -> None:
    statuses: collections.Counter[int] = collections.Counter()
    sent = 0
    began = time.perf_counter()

    async def worker(http: httpx2.AsyncClient) -> None:
        nonlocal sent
        while sent < sessions:
            sent += 1
            answer = await http.post(url, json=INITIALIZE, headers=HEADERS)
            statuses[answer.status_code] += 1
            done = sum(statuses.values())
            if done % 1000 == 0:
                elapsed = time.perf_counter() - began
                print(f"{done:>6} requests  {elapsed:6.1f} s  RSS {rss_mib(pid):6.1f} MiB")

    limits = httpx2.Limits(max_connections=concurrency)
    async with httpx2.AsyncClient(limits=limits, timeout=30.0) as http:
        await asyncio.gather(*(worker(http) for _ in range(concurrency)))
    print(f"answers by status: {dict(sorted(statuses.items()))}")


def main(sessions: int, concurrency: int, tree: Path | None, extra: list[str]) -> None:
    with tempfile.TemporaryDirectory() as folder:
        (Path(folder) / "bench_tools.py").write_text(SOURCE)
        process, url = start(folder, tree, extra)
        try:
            time.sleep(0.5)
            before = rss_mib(process.pid)
            print(f"mini-agent mcp --http {' '.join(extra)} at {url}; RSS before {before:.1f} MiB")
            began = time.perf_counter()
            asyncio.run(flood(url, sessions, concurrency, process.pid))
            after = rss_mib(process.pid)
            print(f"{sessions} initialize requests in {time.perf_counter() - began:.1f} s: "
                  f"RSS {before:.1f} -> {after:.1f} MiB (+{after - before:.1f})")  # fmt: skip
        finally:
            process.terminate()
            process.wait(10)


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sessions", type=int, default=6000)
    parser.add_argument("--concurrency", type=int, default=8)
    parser.add_argument("--tree", type=Path)
    parser.add_argument("extra", nargs="*", help="flags for mini-agent mcp (after --)")
    options = parser.parse_args()
    main(options.sessions, options.concurrency, options.tree, options.extra)
