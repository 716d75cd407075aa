"""The daemon against hostile model servers: its memory, and how another request fares meanwhile.

    python bench/bench_hostile.py                  # this tree
    python bench/bench_hostile.py --tree /tmp/old  # another checkout's server/ (e.g. before a fix)
    python bench/bench_hostile.py --seconds 5      # how long to watch a reply that never ends

Three servers from tests/support/hostile.py, each answering one `agent/step` of a real daemon over stdio
(default options, `maxRetries: 0`):

1. `tokens`: a stream of one-token deltas that never finishes;
2. `huge`: a 200 MB non-streamed reply;
3. `endless_line`: one SSE line that never ends — while it is read, `agent/listTools` is sent over
   and over on the same connection and its round trip timed (another client's view of the daemon);
4. `endless_line` again with `llm.maxReplyBytes` at 4 GiB, so the cap never ends it: what the
   decoder alone costs the other requests.

For each: how the step ended (or "still running" after `--seconds`, then cancelled), the daemon's
peak RSS (VmHWM from /proc), and the bytes the daemon wrote to its stdout. Figures are printed, never
asserted: the machine is shared and timings are noisy.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import os
import statistics
import sys
import tempfile
import time
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path[:0] = [str(ROOT), str(ROOT / "clients" / "python")]

from mini_agent_client.client import AgentClient  # noqa: E402

from tests.support.hostile import Behaviour, HostileServer  # noqa: E402


def peak_rss_mib(pid: int) -> float:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmHWM:"):
            return int(line.split()[1]) / 1024
    return float("nan")


@contextlib.asynccontextmanager
async def hostile_process(behaviour: Behaviour) -> AsyncIterator[str]:
    """The hostile server in a process of its own, so its sending does not slow this client's loop."""
    server = await asyncio.create_subprocess_exec(
        sys.executable, __file__, "--serve", behaviour, stdout=asyncio.subprocess.PIPE
    )
    assert server.stdout is not None
    try:
        yield (await server.stdout.readline()).decode().strip()
    finally:
        server.terminate()
        await server.wait()


async def serve(behaviour: Behaviour) -> None:
    async with HostileServer(behaviour) as model:
        print(model.base_url, flush=True)
        await asyncio.Event().wait()


async def round_trips(client: AgentClient, until: asyncio.Future[Any], seconds: float) -> list[float]:
    """`agent/listTools` round trips (ms) while `until` runs, for at most `seconds`."""
    times: list[float] = []
    deadline = time.perf_counter() + seconds
    while not until.done() and time.perf_counter() < deadline:
        start = time.perf_counter()
        await client.call("agent/listTools")
        times.append((time.perf_counter() - start) * 1000)
        await asyncio.sleep(0.01)
    return times


async def scenario(
    behaviour: Behaviour, tree: Path, seconds: float, workspace: Path, llm: dict[str, Any]
) -> dict[str, Any]:
    written = 0

    def tap(direction: str, message: dict[str, Any]) -> None:
        nonlocal written
        if direction == "recv":
            written += len(json.dumps(message))

    paths = [str(tree / "server"), str(ROOT / "clients" / "python")]
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(paths)}
    async with hostile_process(behaviour) as base_url:
        llm = {"baseUrl": base_url, "maxRetries": 0, "stream": behaviour != "huge", **llm}
        options = {"llm": llm, "store": {"enabled": False}}
        async with AgentClient.spawn(
            root=workspace, options=options, env=env, tap=tap, command=[sys.executable, "-m", "mini_agent"]
        ) as client:
            pid = client.process.pid
            await client.call("agent/listTools")  # builds the daemon: not part of a round trip
            idle = await round_trips(client, asyncio.get_running_loop().create_future(), 0.5)
            session_id = await client.start_session("hello")
            started = time.perf_counter()
            step = asyncio.ensure_future(client.step(session_id))
            busy = await round_trips(client, step, seconds) if behaviour == "endless_line" else []
            done, _ = await asyncio.wait([step], timeout=max(0.0, seconds - (time.perf_counter() - started)))
            if done:
                result = step.result()
                outcome = f"{result['stopReason']}: {(result.get('error') or '')[:90]}"
            else:
                outcome = f"still running after {seconds:g} s"
                await client.cancel(session_id)
                await asyncio.wait([step], timeout=30)
            elapsed = time.perf_counter() - started
            figures = {
                "behaviour": behaviour,
                "outcome": outcome,
                "elapsed_s": elapsed,
                "peak_rss_mib": peak_rss_mib(pid),
                "stdout_kib": written / 1024,
            }
            if busy:
                figures["listTools_idle_ms"] = statistics.median(idle)
                figures["listTools_busy_median_ms"] = statistics.median(busy)
                figures["listTools_busy_max_ms"] = max(busy)
                figures["listTools_busy_count"] = len(busy)
            return figures


async def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--tree", type=Path, default=ROOT, help="checkout whose server/ runs the daemon")
    parser.add_argument("--seconds", type=float, default=10.0, help="how long to watch an endless reply")
    parser.add_argument("--serve", choices=["tokens", "huge", "endless_line"], help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.serve:
        await serve(args.serve)
        return
    with tempfile.TemporaryDirectory() as workspace:
        runs: list[tuple[Behaviour, dict[str, Any]]] = [
            ("tokens", {}),
            ("huge", {}),
            ("endless_line", {}),
            ("endless_line", {"maxReplyBytes": 2**32}),
        ]
        for behaviour, llm in runs:
            figures = await scenario(behaviour, args.tree.resolve(), args.seconds, Path(workspace), llm)
            print(f"## {behaviour} {json.dumps(llm) if llm else ''} ({args.tree})")
            for key, value in figures.items():
                print(f"  {key:26} {value:.1f}" if isinstance(value, float) else f"  {key:26} {value}")
            sys.stdout.flush()


if __name__ == "__main__":
    asyncio.run(main())
