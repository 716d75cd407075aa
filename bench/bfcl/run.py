"""BFCL (the Berkeley Function Calling Leaderboard) through the daemon, with BFCL's own data and checker.

    python bench/bfcl/run.py --gguf ~/.cache/mini-agent/models/qwen2.5-coder-1.5b-instruct-q4_k_m.gguf \\
        --per-category 10 --seed 0 [--mode react --mode json ...] [--daemon-tree /tmp/base-bfcl] \\
        [--harness textCalls=on] [--json-out /tmp/bfcl.json]
    python bench/bfcl/run.py --base-url http://127.0.0.1:8000/v1 --model qwen ...   # a server already up

For each sampled question of each category: its functions become client tools of a daemon (one daemon per
tool mode, driven over stdio by `mini_agent_client.AgentClient`), a session starts with the question, one
`agent/step` is taken (the client tools it calls are answered with a harmless "ok"), and the step's calls
(or, for irrelevance, their absence) are judged by BFCL's AST checker in BFCL's own names. Beside the modes,
"the model alone": the same question sent straight to the server with OpenAI `tools`, scored on the
server's `tool_calls` and on calls read from the reply text (bench/bfcl/textcalls.py); "alone" is the
better of the two per category. Prints a markdown table (category × column, k/N); `--json-out` keeps every
record. See bench/bfcl/README.md.

The first run creates bench/.bfcl-venv with `bfcl-eval` (no dependencies: the data and the AST checker need
only `filelock`) and re-runs itself there; the daemon runs with the repository's .venv.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import importlib.util
import json
import os
import random
import shlex
import signal
import socket
import subprocess
import sys
import tempfile
import time
import urllib.error
import urllib.request
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
ROOT = HERE.parents[1]
VENV = ROOT / "bench" / ".bfcl-venv"
BFCL_REQUIREMENTS = ["bfcl-eval==2026.3.23", "filelock==3.20.0"]
MODES = ("react", "json", "native", "auto")
CATEGORIES = ("simple_python", "multiple", "parallel", "parallel_multiple", "irrelevance")
HARMLESS = "ok"
SERVERS: list[subprocess.Popen[bytes]] = []  # stopped first on SIGTERM, so no request waits on them


# -- the venv ---------------------------------------------------------------------------------------

def in_bfcl_venv() -> bool:
    return Path(sys.prefix).resolve() == VENV.resolve() and importlib.util.find_spec("bfcl_eval") is not None


def ensure_venv_and_reexec() -> None:
    """Run this script inside bench/.bfcl-venv, creating it first if need be."""
    if in_bfcl_venv():
        return
    python = VENV / "bin" / "python"
    if not python.exists():
        print(f"creating {VENV} (bfcl-eval, no dependencies)", file=sys.stderr)
        subprocess.run([sys.executable, "-m", "venv", str(VENV)], check=True)
        (VENV / ".gitignore").write_text("*\n")  # the venv keeps itself out of git
    probe = subprocess.run([str(python), "-c", "import bfcl_eval, filelock"], capture_output=True)
    if probe.returncode != 0:
        subprocess.run([str(python), "-m", "pip", "install", "--quiet", "--no-deps", *BFCL_REQUIREMENTS],
                       check=True)
    os.execv(str(python), [str(python), str(Path(__file__).resolve()), *sys.argv[1:]])


# -- the model server -------------------------------------------------------------------------------

def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port: int = probe.getsockname()[1]
        return port


@contextlib.contextmanager
def llama_server(gguf: Path, python: Path, alias: str, n_ctx: int, n_threads: int,
                 log_dir: Path) -> Iterator[str]:
    """llama-cpp-python's server on a free port (stopped on exit); yields its base URL."""
    port = free_port()
    command = [str(python), "-m", "llama_cpp.server", "--model", str(gguf), "--host", "127.0.0.1",
               "--port", str(port), "--n_threads", str(n_threads), "--interrupt_requests", "false",
               "--n_ctx", str(n_ctx), "--model_alias", alias]
    log = log_dir / "llama.log"
    with log.open("wb") as out:
        process = subprocess.Popen(command, stdin=subprocess.DEVNULL, stdout=out, stderr=subprocess.STDOUT)
    base_url = f"http://127.0.0.1:{port}/v1"
    SERVERS.append(process)
    try:
        deadline = time.monotonic() + 180
        while True:
            if process.poll() is not None:
                raise SystemExit(f"the llama server exited ({process.returncode}): {log.read_text()[-2000:]}")
            try:
                with urllib.request.urlopen(base_url + "/models", timeout=2) as answer:
                    if any(m.get("id") == alias for m in json.load(answer).get("data", [])):
                        break
            except OSError:
                pass
            if time.monotonic() > deadline:
                raise SystemExit(f"the llama server was not ready in 180 s: {log.read_text()[-2000:]}")
            time.sleep(0.5)
        print(f"llama server pid {process.pid} at {base_url} (log {log})", file=sys.stderr)
        yield base_url
    finally:
        process.terminate()
        try:
            process.wait(timeout=15)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()


# -- questions --------------------------------------------------------------------------------------

def sample(entries: list[dict[str, Any]], category: str, n: int, seed: int) -> list[dict[str, Any]]:
    """A seeded sample of the category, in BFCL's order."""
    rng = random.Random(f"{seed}/{category}")
    picked = set(rng.sample(range(len(entries)), min(n, len(entries))))
    return [entry for index, entry in enumerate(entries) if index in picked]


def question_text(entry: dict[str, Any]) -> str:
    """The first turn's messages as one task (in the categories run here it is one user message)."""
    return "\n\n".join(str(message["content"]) for message in entry["question"][0])


@dataclass
class Record:
    id: str
    category: str
    column: str
    ok: bool
    why: str
    calls: list[dict[str, Any]] | None
    text: str
    elapsed_s: float
    extra: dict[str, Any] = field(default_factory=dict)


def decoded_from(calls: list[tuple[str, Any]], tools: list[Any]) -> list[dict[str, Any]] | None:
    """[(name, arguments)] as BFCL's decoded output in BFCL's names; None if an argument set is not a dict."""
    from functions import original_name

    decoded = []
    for name, arguments in calls:
        if not isinstance(arguments, dict):
            return None
        decoded.append({original_name(name, tools): arguments})
    return decoded


# -- the model alone --------------------------------------------------------------------------------

def post_json(url: str, body: dict[str, Any], timeout: float) -> dict[str, Any]:
    request = urllib.request.Request(url, json.dumps(body).encode(), {"Content-Type": "application/json"})
    with urllib.request.urlopen(request, timeout=timeout) as answer:
        reply: dict[str, Any] = json.load(answer)
        return reply


def alone(args: argparse.Namespace, entry: dict[str, Any], category: str) -> list[Record]:
    from functions import tools_for
    from judge import judge
    from textcalls import read_calls

    tools = tools_for(entry["function"])
    body = {"model": args.model, "messages": entry["question"][0], "tools": [t.openai() for t in tools],
            "tool_choice": "auto", "temperature": args.temperature, "max_tokens": args.max_tokens}
    if args.seed_server is not None:
        body["seed"] = args.seed_server
    started = time.monotonic()
    try:
        reply = post_json(args.base_url.rstrip("/") + "/chat/completions", body, args.timeout)
    except (OSError, urllib.error.HTTPError, ValueError) as error:
        elapsed = time.monotonic() - started
        why = f"request failed: {error}"
        return [Record(entry["id"], category, column, False, why, None, "", elapsed)
                for column in ("alone: tool_calls", "alone: text")]
    elapsed = time.monotonic() - started
    message = (reply.get("choices") or [{}])[0].get("message") or {}
    content = str(message.get("content") or "")
    finish = (reply.get("choices") or [{}])[0].get("finish_reason")
    extra = {"usage": reply.get("usage"), "finish_reason": finish}
    native: list[tuple[str, Any]] = []
    for call in message.get("tool_calls") or []:
        function = call.get("function") or {}
        try:
            arguments = json.loads(function.get("arguments") or "{}")
        except ValueError:
            arguments = None
        native.append((str(function.get("name", "")), arguments))
    records = []
    for column, calls in (("alone: tool_calls", native), ("alone: text", read_calls(content))):
        decoded = decoded_from(calls, tools)
        ok, why = judge(entry, category, decoded)
        records.append(Record(entry["id"], category, column, ok, why, decoded, content, elapsed, extra))
    return records


# -- through the daemon -----------------------------------------------------------------------------

def daemon_environment(args: argparse.Namespace) -> tuple[list[str], dict[str, str], Path]:
    tree = Path(args.daemon_tree).resolve() if args.daemon_tree else ROOT
    path = os.pathsep.join([str(tree / "server"), str(tree / "clients" / "python")])
    env = {**os.environ, "PYTHONPATH": path}
    env.pop("PYTHONHOME", None)
    return [str(args.daemon_python), "-m", "mini_agent"], env, tree


class DaemonColumn:
    """One daemon in one tool mode, its client tools answered with a harmless result."""

    def __init__(self, args: argparse.Namespace, mode: str, label: str, log_dir: Path) -> None:
        self.args, self.mode, self.label, self.log_dir = args, mode, label, log_dir
        self.executed: list[dict[str, Any]] = []
        self.messages: list[dict[str, Any]] = []
        self.client: Any = None

    async def open(self, stack: contextlib.AsyncExitStack) -> None:
        from mini_agent_client import AgentClient

        args = self.args
        command, env, _ = daemon_environment(args)
        llm: dict[str, Any] = {"baseUrl": args.base_url, "model": args.model, "toolMode": self.mode,
                               "temperature": args.temperature, "maxTokens": args.max_tokens,
                               "timeoutSec": args.timeout, "contextWindow": args.n_ctx}
        if args.harness:
            llm["harness"] = args.harness
        options = {"llm": llm, "store": {"enabled": False}, "maxSteps": 5}
        workspace = self.log_dir / f"ws-{self.mode}"
        workspace.mkdir(exist_ok=True)
        stderr = stack.enter_context((self.log_dir / f"daemon-{self.mode}.log").open("wb"))
        self.client = await stack.enter_async_context(AgentClient.spawn(
            root=workspace, options=options, command=command, env=env, stderr=stderr.fileno(),
            on_message=self.messages.append))

        async def execute(params: dict[str, Any]) -> str:
            self.executed.append(params)
            return HARMLESS

        async def allow(params: dict[str, Any]) -> dict[str, Any]:
            return {"decision": "allow_once"}

        self.client.on_execute_tool(execute)
        self.client.on_permission(allow)

    async def ask(self, category: str, entry: dict[str, Any]) -> Record:
        from functions import tools_for
        from judge import judge

        client = self.client
        tools = tools_for(entry["function"])
        self.executed.clear()
        started = time.monotonic()
        step: dict[str, Any] = {}
        error = ""
        try:
            for tool in tools:
                await client.register_client_tool(tool.name, tool.description, tool.input_schema)
            names = [t.name for t in tools]
            session_id = await client.start_session(question_text(entry), tools=names)
            step = await asyncio.wait_for(client.step(session_id), self.args.timeout)
        except Exception as failure:  # one question's failure is its record, not the run's end
            error = f"{type(failure).__name__}: {failure}"
        finally:
            for tool in tools:
                with contextlib.suppress(Exception):
                    await client.call("agent/unregisterTool", {"name": tool.name})
        elapsed = time.monotonic() - started
        calls = [(c.get("name", ""), c.get("arguments")) for c in step.get("toolCalls", [])]
        decoded = decoded_from(calls, tools) if not error else None
        ok, why = judge(entry, category, decoded) if not error else (False, error)
        text = str(step.get("finalAnswer") or step.get("thought") or "")
        extra = {"stopReason": step.get("stopReason"), "status": step.get("status"),
                 "usage": step.get("usage"), "toolMode": step.get("toolMode"),
                 "rawArguments": [c.get("rawArguments") for c in step.get("toolCalls", [])],
                 "thought": step.get("thought"), "finalAnswer": step.get("finalAnswer"),
                 "observations": [o.get("output", "")[:300] for o in step.get("observations", [])],
                 "executed": [{"name": p.get("name"), "arguments": p.get("arguments")}
                              for p in self.executed],
                 "daemonMessages": [m.get("message") for m in self.messages]}
        self.messages.clear()
        return Record(entry["id"], category, self.label, ok, why, decoded, text, elapsed, extra)


# -- the table --------------------------------------------------------------------------------------

def progress(record: Record) -> None:
    mark = "ok " if record.ok else "no "
    shown = json.dumps(record.calls)[:160] if record.calls else repr(record.text[:100])
    print(f"  {mark}{record.column:<18} {record.id:<24} {record.elapsed_s:5.1f}s {shown} {record.why[:120]}",
          file=sys.stderr, flush=True)


def table(records: list[Record], categories: list[str], columns: list[str]) -> str:
    def cell(rows: list[Record]) -> str:
        return f"{sum(r.ok for r in rows)}/{len(rows)}" if rows else "–"

    def rows(column: str, category: str | None) -> list[Record]:
        return [r for r in records if r.column == column and category in (None, r.category)]

    def best_alone(category: str | None) -> str:
        picks = []
        for column in ("alone: tool_calls", "alone: text"):
            rows = [r for r in records if r.column == column and category in (None, r.category)]
            if rows:
                picks.append((sum(r.ok for r in rows), len(rows)))
        return f"{max(picks)[0]}/{picks[0][1]}" if picks else "–"

    has_alone = any(r.column.startswith("alone") for r in records)
    header = ["category", *(["alone: tool_calls", "alone: text", "alone"] if has_alone else []), *columns]
    lines = ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
    for category in [*categories, None]:
        row = [category or "all"]
        if has_alone:
            row += [cell(rows(column, category)) for column in ("alone: tool_calls", "alone: text")]
            row.append(best_alone(category))
        row += [cell(rows(column, category)) for column in columns]
        lines.append("| " + " | ".join(row) + " |")
    return "\n".join(lines)


# -- main -------------------------------------------------------------------------------------------

def harness_switch(text: str) -> tuple[str, bool]:
    key, _, value = text.partition("=")
    if not key or value not in ("on", "off"):
        raise argparse.ArgumentTypeError(f"--harness wants KEY=on|off, not {text!r}")
    return key, value == "on"


def parse_args(argv: list[str]) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=(__doc__ or "").split("\n")[0])
    parser.add_argument("--base-url", default="http://127.0.0.1:8000/v1",
                        help="an OpenAI-compatible server (ignored with --gguf)")
    parser.add_argument("--model", default="qwen",
                        help="the model name (the llama server's alias with --gguf)")
    parser.add_argument("--gguf", type=Path, help="start llama-cpp-python's server on this model file")
    parser.add_argument("--llama-python", type=Path, default=ROOT / ".venv" / "bin" / "python",
                        help="the Python with llama-cpp-python (default: the repository's .venv)")
    parser.add_argument("--n-ctx", type=int, default=8192,
                        help="the server's window (and the daemon's contextWindow)")
    parser.add_argument("--n-threads", type=int, default=2, help="the llama server's threads (with --gguf)")
    parser.add_argument("--category", action="append", choices=CATEGORIES)
    parser.add_argument("--per-category", type=int, default=10)
    parser.add_argument("--seed", type=int, default=0, help="the sample's seed")
    parser.add_argument("--mode", action="append", choices=MODES, help="tool modes (default: all four)")
    parser.add_argument("--no-alone", action="store_true", help="skip the model alone")
    parser.add_argument("--harness", action="append", type=harness_switch, default=[], metavar="KEY=on|off",
                        help="initializationOptions.llm.harness switches, passed through")
    parser.add_argument("--daemon-tree",
                        help="run the daemon of another checkout (its server/ and clients/python)")
    parser.add_argument("--daemon-python", type=Path, default=ROOT / ".venv" / "bin" / "python",
                        help="the Python that runs the daemon (needs mini-agent's dependencies)")
    parser.add_argument("--label", default="", help="a suffix for the mode columns (e.g. 'base')")
    parser.add_argument("--temperature", type=float, default=0.0)
    parser.add_argument("--seed-server", type=int, default=None, help="a `seed` for the alone requests")
    parser.add_argument("--max-tokens", type=int, default=384)
    parser.add_argument("--timeout", type=float, default=300.0, help="seconds for one model turn")
    parser.add_argument("--json-out", type=Path, help="write every record here")
    parser.add_argument("--table-from", nargs="+", metavar="JSON",
                        help="(alone, first) print one table from saved --json-out files and stop")
    args = parser.parse_args(argv)
    args.harness = dict(args.harness)
    args.category = args.category or list(CATEGORIES)
    args.mode = args.mode or list(MODES)
    return args


async def run(args: argparse.Namespace, log_dir: Path, records: list[Record],
              save: Callable[[], None]) -> None:
    """Each question through every column before the next, so a run cut short keeps equal counts."""
    from judge import load

    samples = {category: sample(load(category), category, args.per_category, args.seed)
               for category in args.category}
    # round robin over the categories, so that a run cut short still covers each of them
    questions = [(category, samples[category][index]) for index in range(args.per_category)
                 for category in args.category if index < len(samples[category])]
    print(f"{len(questions)} questions: " + ", ".join(f"{c} {sum(q[0] == c for q in questions)}"
                                                      for c in args.category), file=sys.stderr)
    async with contextlib.AsyncExitStack() as stack:
        columns = [DaemonColumn(args, mode, column_label(args, mode), log_dir) for mode in args.mode]
        for column in columns:
            await column.open(stack)
        for number, (category, entry) in enumerate(questions, 1):
            shown = question_text(entry)[:100]
            print(f"[{number}/{len(questions)}] {entry['id']}: {shown!r}", file=sys.stderr)
            if not args.no_alone:
                for record in await asyncio.to_thread(alone, args, entry, category):
                    records.append(record)
                    progress(record)
            for column in columns:
                records.append(await column.ask(category, entry))
                progress(records[-1])
            save()


def column_label(args: argparse.Namespace, mode: str) -> str:
    return mode + (f" ({args.label})" if args.label else "")


def stop(signum: int, frame: Any) -> None:
    """SIGTERM: stop the llama server at once (a request waiting on it fails), then unwind."""
    for process in SERVERS:
        process.terminate()
    sys.exit(143)


def table_from(paths: list[Path]) -> None:
    """One table from saved runs (e.g. a baseline's and an "after" run's), on the questions every column
    has: a run cut short is compared on what it finished."""
    records: list[Record] = []
    alone_seen = False
    for path in paths:
        loaded = [Record(**raw) for raw in json.loads(path.read_text())["records"]]
        if alone_seen:  # the model alone from the first file that has it
            loaded = [r for r in loaded if not r.column.startswith("alone")]
        records += loaded
        alone_seen = alone_seen or any(r.column.startswith("alone") for r in records)
    columns = list(dict.fromkeys(r.column for r in records))
    common = set.intersection(*({r.id for r in records if r.column == c} for c in columns))
    records = [r for r in records if r.id in common]
    categories = [c for c in CATEGORIES if any(r.category == c for r in records)]
    print(f"{len(common)} questions in every column, from " + ", ".join(map(str, paths)) + "\n")
    print(table(records, categories, [c for c in columns if not c.startswith("alone")]))


def main() -> None:
    ensure_venv_and_reexec()
    sys.path[:0] = [str(HERE), str(ROOT / "clients" / "python")]
    if sys.argv[1:2] == ["--table-from"]:
        table_from([Path(p) for p in sys.argv[2:]])
        return
    args = parse_args(sys.argv[1:])
    signal.signal(signal.SIGTERM, stop)
    started = time.monotonic()
    _, _, tree = daemon_environment(args)
    command = "python bench/bfcl/run.py " + shlex.join(sys.argv[1:])
    records: list[Record] = []

    def save() -> None:
        if args.json_out:
            meta = {"command": command, "daemonTree": str(tree), "model": args.model,
                    "baseUrl": args.base_url, "temperature": args.temperature,
                    "perCategory": args.per_category, "seed": args.seed, "harness": args.harness,
                    "modes": args.mode, "elapsedS": round(time.monotonic() - started)}
            args.json_out.write_text(json.dumps({"meta": meta, "records": [r.__dict__ for r in records]},
                                                indent=1, default=str))

    try:
        with tempfile.TemporaryDirectory(prefix="bfcl-") as tmp, contextlib.ExitStack() as stack:
            log_dir = Path(tmp)
            if args.gguf:
                args.base_url = stack.enter_context(llama_server(
                    args.gguf.expanduser(), args.llama_python, args.model, args.n_ctx, args.n_threads,
                    log_dir))
            asyncio.run(run(args, log_dir, records, save))
    finally:
        save()
        print(f"\n{command}\n")
        print(f"daemon tree {tree}; model {args.model}; temperature {args.temperature:g}; "
              f"{args.per_category} per category, seed {args.seed}; "
              f"harness {args.harness or 'as the daemon has it'}; {time.monotonic() - started:.0f} s\n")
        print(table(records, args.category, [column_label(args, mode) for mode in args.mode]), flush=True)


if __name__ == "__main__":
    main()
