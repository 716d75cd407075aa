"""The agent-success suite: the tasks of bench/agents/tasks.py run through the daemon's own door (the client
library over stdio) against an OpenAI-compatible server; prints a markdown table.

    scripts/real-model.sh .venv
    .venv/bin/python bench/agents/suite.py --serve qwen --mode react --mode json --runs 3
    .venv/bin/python bench/agents/suite.py --base-url http://127.0.0.1:8000/v1 --model qwen --tasks seed
    .venv/bin/python bench/agents/suite.py --serve qwen --daemon-tree /tmp/base --label 4d300db ...

Each run of a task is one daemon (this checkout's, or `--daemon-tree`'s) in a fresh copy of the task's
workspace, with the task's tool files registered, stepping one session until it finishes; tools that need
approval are allowed by the bench. A run succeeds when the session ends with a final answer (`end_turn`)
that the task's checker finds right in every part. See bench/agents/README.md for the method.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import datetime
import json
import math
import os
import platform
import re
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any, TextIO

ROOT = Path(__file__).resolve().parents[2]
for _path in (ROOT, ROOT / "clients" / "python", ROOT / "server"):
    if str(_path) not in sys.path:
        sys.path.insert(0, str(_path))

from mini_agent_client import AgentClient  # noqa: E402

from bench.agents.tasks import Task, by_id  # noqa: E402
from tests.support.llama import MODELS, LlamaServer, ModelName, launch  # noqa: E402

MODES = ("react", "json", "native", "auto")
REQUEST_TIMEOUT = 600.0  # one agent/step; a 2-core machine shared with others is slow, never this slow
TRACE_CHARS = 4000

# llama-cpp-python 0.3.36, verbose (its default), per chat completion on stderr:
#   Llama.generate: 1234 prefix-match hit, remaining 56 prompt tokens to eval     (when the cache is reused)
#   llama_perf_context_print: prompt eval time =  812.34 ms /    56 tokens (...)  (what it computed)
#   INFO:     127.0.0.1:37172 - "POST /v1/chat/completions HTTP/1.1" 200 OK      (uvicorn's access log)
PROMPT_EVAL = re.compile(r"prompt eval time =\s*[\d.]+ ms /\s*(\d+) tokens")
PREFIX_HIT = re.compile(r"Llama\.generate: (\d+) prefix-match hit")
COMPLETION = re.compile(r'"POST /v1/chat/completions HTTP/1\.[01]" (\d{3})')


@dataclass
class ServerCounts:
    """What the model server's log says it did during one run."""

    requests: int = 0  # chat completions answered (any status)
    refused: int = 0  # of them, answered with an HTTP error (e.g. the json_schema form refused)
    evaluated: int = 0  # prompt tokens computed
    reused: int = 0  # prompt tokens taken from the prefix cache


def server_counts(text: str) -> ServerCounts:
    statuses = [int(status) for status in COMPLETION.findall(text)]
    return ServerCounts(
        requests=len(statuses), refused=sum(status >= 400 for status in statuses),
        evaluated=sum(int(n) for n in PROMPT_EVAL.findall(text)),
        reused=sum(int(n) for n in PREFIX_HIT.findall(text)))


@dataclass
class Record:
    """One run of one task: what the bench writes to --json-out, one per line."""

    label: str
    model: str
    mode: str
    task: str
    run: int
    seed: int
    temperature: float
    harness: dict[str, bool]
    ok: bool = False
    why: str = ""
    stop_reason: str | None = None
    steps: int = 0
    answer: str | None = None
    wall_s: float = 0.0
    approvals: int = 0
    error: str | None = None
    usage_prompt: int = 0  # the daemon's figures (llama-cpp-python reports none while streaming)
    usage_completion: int = 0
    server: ServerCounts | None = None  # from the server's log, when the bench started the server
    trace: list[dict[str, Any]] = field(default_factory=list)


@dataclass(frozen=True)
class Target:
    base_url: str
    model: str
    log: Path | None  # the server's stdout and stderr, when the bench started it


def daemon_env(tree: Path) -> dict[str, str]:
    paths = [str(tree / "server"), str(tree / "clients" / "python")]
    return {**os.environ, "PYTHONPATH": os.pathsep.join(paths)}


@contextlib.contextmanager
def workspace_copy(task: Task) -> Iterator[Path]:
    with tempfile.TemporaryDirectory(prefix=f"agents-{task.workspace.name}-") as tmp:
        root = Path(tmp) / task.workspace.name
        ignore = shutil.ignore_patterns("__pycache__", ".mini-agent")
        shutil.copytree(task.workspace.path, root, ignore=ignore)
        for relative, text in task.workspace.files.items():
            (root / relative).parent.mkdir(parents=True, exist_ok=True)
            (root / relative).write_text(text, encoding="utf-8")
        yield root


def trace_step(step: dict[str, Any]) -> dict[str, Any]:
    outputs = {o["toolCallId"]: o for o in step.get("observations", [])}
    return {
        "index": step.get("index"), "toolMode": step.get("toolMode"), "stopReason": step.get("stopReason"),
        "thought": (step.get("thought") or "")[:TRACE_CHARS],
        "calls": [{"name": c["name"], "arguments": c.get("rawArguments") or c.get("arguments"),
                   "output": str(outputs.get(c["id"], {}).get("output", ""))[:TRACE_CHARS],
                   "isError": outputs.get(c["id"], {}).get("isError")} for c in step.get("toolCalls", [])],
        "formatErrors": [str(o["output"])[:TRACE_CHARS] for o in step.get("observations", [])
                         if str(o["toolCallId"]).startswith("format-")],
        # what the loop told the model outside any call: the final check, the change check, the last step
        "notes": [str(o["toolCallId"]).rsplit("-", 1)[0] for o in step.get("observations", [])
                  if o["toolCallId"] not in {c["id"] for c in step.get("toolCalls", [])}
                  and not str(o["toolCallId"]).startswith("format-")],
        "finalAnswer": step.get("finalAnswer"), "usage": step.get("usage"), "error": step.get("error"),
    }


async def run_once(target: Target, task: Task, record: Record, tree: Path, max_tokens: int,
                   harness: dict[str, bool]) -> None:
    llm: dict[str, Any] = {"baseUrl": target.base_url, "model": target.model, "toolMode": record.mode,
                           "temperature": record.temperature, "maxTokens": max_tokens,
                           "timeoutSec": REQUEST_TIMEOUT, "seed": record.seed}
    if harness:
        llm["harness"] = harness
    options = {"llm": llm, "store": {"enabled": False}, "maxSteps": task.max_steps}
    offset = target.log.stat().st_size if target.log else 0
    started = time.monotonic()
    with workspace_copy(task) as root:
        try:
            async with AgentClient.spawn(root=root, options=options, env=daemon_env(tree),
                                         stderr=asyncio.subprocess.DEVNULL) as client:
                async def allow(params: dict[str, Any]) -> dict[str, Any]:
                    record.approvals += 1
                    return {"decision": "allow_once"}

                client.on_permission(allow)
                for tools_file in task.workspace.tools:
                    await client.register_tool(tools_file)
                session_id = await client.start_session(task.text)
                step: dict[str, Any] = {}
                for _ in range(task.max_steps + 3):  # error steps (a server hiccup) do not count as steps
                    step = await asyncio.wait_for(client.step(session_id), REQUEST_TIMEOUT)
                    record.trace.append(trace_step(step))
                    usage = step.get("usage") or {}
                    record.usage_prompt += usage.get("promptTokens") or 0
                    record.usage_completion += usage.get("completionTokens") or 0
                    if step.get("status") == "finished":
                        break
                record.steps = len(record.trace)
                record.stop_reason = step.get("stopReason")
                record.answer = step.get("finalAnswer")
                if step.get("status") != "finished":
                    record.error = f"not finished after {record.steps} steps: status {step.get('status')}"
        except Exception as exc:  # the run failed, not the bench: recorded and reported
            record.error = f"{type(exc).__name__}: {exc}"
        record.wall_s = time.monotonic() - started
        if record.stop_reason == "end_turn" and record.answer is not None:
            record.ok, record.why = task.check(record.answer, root)
        else:
            record.why = record.error or f"ended with {record.stop_reason}"
    if target.log is not None:
        await asyncio.sleep(0.2)  # the server logs its timings before it answers; let the last line land
        with target.log.open("rb") as log:
            log.seek(offset)
            record.server = server_counts(log.read().decode(errors="replace"))


def wilson(k: int, n: int, z: float = 1.96) -> tuple[float, float]:
    """The 95 % Wilson score interval of k successes in n runs."""
    if n == 0:
        return (0.0, 1.0)
    p = k / n
    centre = (p + z * z / (2 * n)) / (1 + z * z / n)
    half = z * math.sqrt(p * (1 - p) / n + z * z / (4 * n * n)) / (1 + z * z / n)
    return (max(0.0, centre - half), min(1.0, centre + half))


def median(values: list[float]) -> str:
    return f"{statistics.median(values):.0f}" if values else "—"


def table(header: list[str], rows: list[list[str]]) -> str:
    lines = ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
    return "\n".join([*lines, *("| " + " | ".join(row) + " |" for row in rows)])


def summary(records: list[Record]) -> str:
    groups: dict[tuple[str, str, str], list[Record]] = {}
    for record in records:
        groups.setdefault((record.label, record.model, record.mode), []).append(record)
    rows = []
    for (label, model, mode), group in groups.items():
        k, n = sum(r.ok for r in group), len(group)
        low, high = wilson(k, n)
        served = [r.server for r in group if r.server is not None]
        by_daemon = median([r.usage_prompt for r in group]) + " (daemon's usage)"
        evaluated = (median([s.evaluated for s in served]) if served
                     else by_daemon if any(r.usage_prompt for r in group) else "—")
        rows.append([
            model, label, mode, f"{k}/{n}", f"{low:.0%}–{high:.0%}", median([r.steps for r in group]),
            evaluated, median([s.reused for s in served]) if served else "—",
            median([s.requests for s in served]) if served else "—",
            f"{statistics.median(r.wall_s for r in group):.1f}",
            str(sum(r.error is not None for r in group)),
        ])
    main = table(["model", "daemon", "mode", "success", "95 % CI", "median steps",
                  "prompt tokens evaluated / task (median)", "prompt tokens from cache / task (median)",
                  "model calls / task (median)", "median wall s", "errors"], rows)
    tasks = list(dict.fromkeys(r.task for r in records))
    columns = list(groups)
    per_task = table(["task", *(f"{mode} ({label})" if len({c[0] for c in columns}) > 1 else mode
                                for label, _, mode in columns)],
                     [[task, *(_cell([r for r in groups[c] if r.task == task]) for c in columns)]
                      for task in tasks])
    return f"{main}\n\nPer task (successes / runs):\n\n{per_task}"


def _cell(group: list[Record]) -> str:
    return f"{sum(r.ok for r in group)}/{len(group)}" if group else "—"


def load_records(paths: list[Path]) -> list[Record]:
    """The records --json-out wrote (several files, e.g. mini-agent's and the peers', make one table)."""
    records = []
    for path in paths:
        for line in path.read_text(encoding="utf-8").splitlines():
            if line.strip():
                raw = json.loads(line)
                server = raw.pop("server", None)
                records.append(Record(**raw, server=ServerCounts(**server) if server else None))
    return records


def parse_harness(items: list[str]) -> dict[str, bool]:
    switches = {}
    for item in items:
        key, _, value = item.partition("=")
        if not key or value not in ("on", "off"):
            raise SystemExit(f"--harness takes KEY=on|off, not {item!r}")
        switches[key] = value == "on"
    return switches


def describe_run(args: argparse.Namespace, target: Target, tree: Path, modes: list[str],
                 harness: dict[str, bool]) -> str:
    load = " ".join(Path("/proc/loadavg").read_text().split()[:3]) if Path("/proc/loadavg").exists() else "?"
    try:
        commit = subprocess.run(["git", "-C", str(tree), "rev-parse", "--short", "HEAD"], capture_output=True,
                                text=True, check=False).stdout.strip() or "not a git checkout"
    except OSError:
        commit = "?"
    return "\n".join([
        f"- date: {datetime.datetime.now(datetime.UTC):%Y-%m-%d %H:%M UTC}; {platform.node()}, "
        f"{os.cpu_count()} CPUs, load {load} at the start",
        f"- server: {target.base_url}, model `{target.model}`"
        + (" (started by the bench; prompt tokens from its log)" if target.log else ""),
        f"- daemon: {tree} ({commit}); modes {', '.join(modes)}; temperature {args.temperature:g}; "
        f"runs {args.runs}; seeds {args.seed}…{args.seed + args.runs - 1}; max tokens {args.max_tokens}",
        f"- harness: {json.dumps(harness) if harness else 'the daemon defaults'}",
    ])


async def bench(args: argparse.Namespace, target: Target) -> list[Record]:
    tree = (args.daemon_tree or ROOT).resolve()
    label = args.label or ("this checkout" if args.daemon_tree is None else tree.name)
    modes = args.mode or ["react"]
    harness = parse_harness(args.harness or [])
    tasks = by_id([i for item in args.tasks or [] for i in item.split(",") if i])
    print(describe_run(args, target, tree, modes, harness), file=sys.stderr)
    records: list[Record] = []
    out = args.json_out.open("a", encoding="utf-8") if args.json_out else None
    try:
        for run in range(args.runs):  # runs outermost, modes innermost: a noisy moment hits every mode
            for task in tasks:
                for mode in modes:
                    record = Record(label, target.model, mode, task.id, run, args.seed + run,
                                    args.temperature, harness)
                    await run_once(target, task, record, tree, args.max_tokens, harness)
                    records.append(record)
                    report(record, mode, f"{record.stop_reason}, {record.steps} steps", out)
    finally:
        if out is not None:
            out.close()
    print(f"\n{describe_run(args, target, tree, modes, harness)}\n\n{summary(records)}")
    return records


def report(record: Record, column: str, what: str, out: TextIO | None) -> None:
    """One run's line on stderr (with the server's token counts when it has them), and its record in
    the --json-out file."""
    tokens = (f", {record.server.evaluated} prompt tokens evaluated "
              f"({record.server.reused} from cache), {record.server.requests} calls"
              if record.server else "")
    print(f"[{column}] {record.task} run {record.run}: {'ok' if record.ok else 'FAIL'} "
          f"({what}, {record.wall_s:.1f} s{tokens}) {'' if record.ok else record.why[:200]}",
          file=sys.stderr, flush=True)
    if out is not None:
        out.write(json.dumps(asdict(record), ensure_ascii=False) + "\n")
        out.flush()


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    server = parser.add_mutually_exclusive_group()
    server.add_argument("--serve", choices=MODELS, help="start llama-cpp-python's server for this model "
                        "(scripts/real-model.sh installs both) on a free port, and stop it at the end")
    server.add_argument("--base-url", help="an OpenAI-compatible server already running")
    parser.add_argument("--model", help="the model name to ask --base-url for (with --serve: its alias)")
    parser.add_argument("--mode", action="append", choices=MODES,
                        help="tool mode (repeatable; default react)")
    parser.add_argument("--temperature", type=float, default=0.0)
    parser.add_argument("--runs", type=int, default=1, help="runs of each task in each mode")
    parser.add_argument("--seed", type=int, default=1, help="run i sends llm.seed = SEED + i (and a server "
                        "started with --serve gets --seed SEED)")
    parser.add_argument("--tasks", action="append", metavar="ID[,ID…]",
                        help="only these task ids (repeatable)")
    parser.add_argument("--harness", action="append", metavar="KEY=on|off",
                        help="initializationOptions.llm.harness[KEY] (repeatable), passed through unchanged")
    parser.add_argument("--daemon-tree", type=Path, metavar="PATH",
                        help="run the daemon of another checkout (its server/ and clients/python on "
                        "PYTHONPATH)")
    parser.add_argument("--label", help="the daemon's name in the table (default: this checkout, or the "
                        "tree's folder name)")
    parser.add_argument("--threads", type=int, help="with --serve: the server's --n_threads (default 2, or "
                        "MINI_AGENT_LLAMA_THREADS; 1 is much faster on cores busy with other work)")
    parser.add_argument("--max-tokens", type=int, default=512)
    parser.add_argument("--json-out", type=Path, metavar="FILE", help="append one JSON record per run")
    parser.add_argument("--list", action="store_true", help="list the tasks and exit")
    parser.add_argument("--summarize", type=Path, nargs="+", metavar="FILE",
                        help="print the tables of earlier --json-out files (also partial ones) and exit")
    args = parser.parse_args()
    if args.list:
        for task in by_id(None):
            print(f"{task.id:24} {task.workspace.name:8} {task.max_steps:2}  {task.kind}")
        return 0
    if args.summarize:
        print(summary(load_records(args.summarize)))
        return 0
    if not (args.serve or args.base_url):
        parser.error("give --serve MODEL or --base-url URL --model NAME")
    if args.base_url and not args.model:
        parser.error("--base-url needs --model")
    if args.serve:
        with tempfile.TemporaryDirectory(prefix="agents-llama-") as tmp:
            model: ModelName = args.serve
            llama: LlamaServer = launch(Path(tmp), model=model, n_ctx=8192, seed=args.seed,
                                        threads=args.threads)
            try:
                asyncio.run(bench(args, Target(llama.base_url, llama.model, llama.log)))
            finally:
                llama.stop()
                kept = Path(tempfile.gettempdir()) / f"agents-llama-{llama.model}.log"
                shutil.copy(llama.log, kept)
                print(f"(the server's log: {kept})", file=sys.stderr)
    else:
        asyncio.run(bench(args, Target(args.base_url.rstrip("/"), args.model, None)))
    return 0


if __name__ == "__main__":
    sys.exit(main())
