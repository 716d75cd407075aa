"""Where the concurrency figure's loss goes: bench_peers.py's 50 sessions x 5 steps at 200 ms model
latency, with the model server noting when each request arrives.

    python bench/bench_lockstep.py [--rounds 4] [--tree /tmp/old] [--probe]

Per round (after a warm-up round), from the arrival times of the 250 requests:
- wall and efficiency, as bench_peers.py reports them (ideal 5 x 0.2 s);
- first requests: when the first and the last session's first request arrived after `agent/run` went
  out for all 50 (the daemon reading 50 runs, taking 50 leases, building 50 requests);
- gap: for each step after the first, the time between a session's request and its next one, less
  the model's 200 ms (reading the reply, two checkpoints, the tool host, the next request, and waiting
  for everything else the daemon does meanwhile): median, 90th percentile and max over all sessions;
- slowest sum: the largest sum of one session's gaps, which with the first request and the tail is
  what the round loses against the ideal;
- tail: from the last request's arrival to the last `agent/run` answer, less 200 ms;
- daemon CPU per step: what the daemon process used (all its threads, from /proc) while the round ran,
  over its 250 steps; in steps of 40 µs, since the kernel counts CPU time in 10 ms ticks.

With `--probe`, how the daemon answers meanwhile: an `agent/listTools` sent every 5 ms on the same
connection while the rounds run, its round trip's median, 90th percentile and max over all rounds
(the probes add load of their own, so the other figures are then not bench_peers.py's).

`--tree` measures another checkout's daemon (e.g. `git archive <commit> | tar -x -C /tmp/old`).
"""

from __future__ import annotations

import argparse
import asyncio
import json
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from bench_peers import Tree, add_up, cpu_seconds, daemon_env, serve_replay, workspace

HERE = Path(__file__).resolve().parent
SESSIONS, STEPS, LATENCY = 50, 5, 0.2


def serve(log_path: str) -> None:
    """bench_peers' model (each session calls `add` STEPS-1 times, then answers), every arrival logged."""
    log = open(log_path, "a", encoding="utf-8")  # noqa: SIM115 (open while serving)

    def turn(body: dict[str, Any]) -> dict[str, Any]:
        done = sum(1 for m in body["messages"] if m.get("role") == "tool")
        task = next(m["content"] for m in body["messages"] if m.get("role") == "user")
        log.write(json.dumps([time.monotonic(), task, done]) + "\n")
        log.flush()
        return add_up(body, LATENCY, STEPS)

    serve_replay(turn)


async def measure(tree: Path, rounds: int, probe: bool) -> tuple[list[dict[str, float]], list[float]]:
    from mini_agent_client import AgentClient

    log = Path(tempfile.mkdtemp(prefix="mini-agent-lockstep-")) / "arrivals.jsonl"
    env = daemon_env(Tree(tree.name, tree))
    model = await asyncio.create_subprocess_exec(
        sys.executable, __file__, "--serve", str(log), stdin=asyncio.subprocess.PIPE,
        stdout=asyncio.subprocess.PIPE, env=env)
    assert model.stdin is not None and model.stdout is not None
    base_url = (await model.stdout.readline()).decode().strip()
    options = {"llm": {"baseUrl": base_url, "model": "replay", "toolMode": "native"}}
    marks: list[tuple[int, float, list[float], float]] = []
    trips: list[float] = []
    try:
        async with AgentClient.spawn(root=workspace(), options=options, env=env) as client:
            await client.register_tool("bench_tools.py", function="add")
            for round_no in range(rounds + 1):
                ids = [await client.start_session(f"R{round_no} add up, {i}.") for i in range(SESSIONS)]
                began, cpu = time.monotonic(), cpu_seconds(client.process.pid)

                async def run(session_id: str) -> float:
                    await client.call("agent/run", {"sessionId": session_id})
                    return time.monotonic()

                runs = asyncio.gather(*map(run, ids))
                while probe and not runs.done():
                    sent = time.perf_counter()
                    await client.call("agent/listTools", {})
                    if round_no:
                        trips.append(time.perf_counter() - sent)
                    await asyncio.sleep(0.005)
                ends = list(await runs)
                marks.append((round_no, began, ends, cpu_seconds(client.process.pid) - cpu))
    finally:
        model.stdin.close()
        await model.wait()
    return [_figures(*mark, log) for mark in marks[1:]], sorted(trips)


def _figures(round_no: int, began: float, ends: list[float], cpu: float, log: Path) -> dict[str, float]:
    arrivals: dict[str, dict[int, float]] = {}
    for line in log.read_text().splitlines():
        at, task, done = json.loads(line)
        if task.startswith(f"R{round_no} "):
            arrivals.setdefault(task, {})[done] = at
    first = [times[0] - began for times in arrivals.values()]
    gaps = [[times[k + 1] - times[k] - LATENCY for k in range(STEPS - 1)] for times in arrivals.values()]
    flat = sorted(g for session in gaps for g in session)
    last_request = max(times[STEPS - 1] for times in arrivals.values())
    wall = max(ends) - began
    return {"wall": wall, "efficiency": STEPS * LATENCY / wall, "first_min": min(first),
            "first_max": max(first), "gap_median": statistics.median(flat),
            "gap_p90": flat[int(len(flat) * 0.9)], "gap_max": flat[-1],
            "slowest_sum": max(sum(session) for session in gaps),
            "tail": max(ends) - last_request - LATENCY, "cpu_per_step": cpu / (SESSIONS * STEPS)}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--rounds", type=int, default=4)
    parser.add_argument("--tree", type=Path, default=HERE.parent, help="the checkout whose daemon runs")
    parser.add_argument("--probe", action="store_true", help="time agent/listTools while the sessions run")
    parser.add_argument("--serve", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.serve:
        serve(args.serve)
        return 0
    tree = args.tree.resolve()
    sys.path[:0] = [str(tree / "server"), str(tree / "clients" / "python")]
    rows, trips = asyncio.run(measure(tree, args.rounds, args.probe))
    print(f"{SESSIONS} sessions x {STEPS} steps, model latency {LATENCY * 1e3:.0f} ms, daemon of {tree}")
    print("round  wall ms  efficiency  first request ms  gap ms: median  p90  max  slowest sum  tail ms"
          "  daemon CPU µs/step")
    for n, row in enumerate(rows, 1):
        print(f"{n:>5}  {row['wall'] * 1e3:7.0f}  {row['efficiency']:10.1%}  "
              f"{row['first_min'] * 1e3:6.1f} - {row['first_max'] * 1e3:5.1f}  "
              f"{row['gap_median'] * 1e3:13.1f}  {row['gap_p90'] * 1e3:4.1f}  {row['gap_max'] * 1e3:4.1f}  "
              f"{row['slowest_sum'] * 1e3:11.1f}  {row['tail'] * 1e3:7.1f}  "
              f"{row['cpu_per_step'] * 1e6:18.0f}")
    if trips:
        median, p90 = statistics.median(trips), trips[int(len(trips) * 0.9)]
        print(f"agent/listTools meanwhile ({len(trips)} sent): median {median * 1e3:.2f} ms, "
              f"p90 {p90 * 1e3:.2f} ms, max {trips[-1] * 1e3:.2f} ms")
    return 0


if __name__ == "__main__":
    sys.exit(main())
